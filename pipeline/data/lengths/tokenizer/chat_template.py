"""The chat template counts are rendered with: the documented default (DEFAULT_CHAT_TEMPLATE, and the same in
plain Python: render_default), and the record messages as templates get them."""
from __future__ import annotations

import json
import re

from pipeline.core.records import clean_message
from pipeline.data.lengths.tokenizer.handle import digest

# The documented default chat template: the Mistral-7B-Instruct v0.1 layout, for tokenizers that have none.
#   <s>[INST] {system}\n\n{user} [/INST]{assistant}</s>[INST] {user} [/INST]{assistant}</s>
# * system messages are joined (each followed by a blank line) and put before the first user message; when an
#   assistant or tool message comes before any user message they get an [INST] ... [/INST] block of their own;
# * tool definitions (apply_chat_template's `tools`): "[AVAILABLE_TOOLS] {tools as JSON} [/AVAILABLE_TOOLS]" after BOS;
# * tool results: "[TOOL_RESULTS] {content} [/TOOL_RESULTS]"; assistant tool calls: "[TOOL_CALLS] " + the tool
#   calls as JSON, after the content; these are plain text for the 32k vocabulary (it has no control tokens);
# * each assistant turn (content, tool calls, EOS) is a {% generation %} block: its tokens are the trainable ones;
# * add_generation_prompt adds nothing: a prompt already ends with "[/INST]".
DEFAULT_CHAT_TEMPLATE = (
    "{{- bos_token }}"
    "{%- if tools %}{{- '[AVAILABLE_TOOLS] ' + (tools | tojson) + ' [/AVAILABLE_TOOLS]' }}{%- endif %}"
    "{%- set ns = namespace(system='', pending=false) %}"
    "{%- for message in messages %}{%- if message['role'] == 'system' %}"
    "{%- set ns.system = ns.system + (message.get('content') or '') + '\\n\\n' %}"
    "{%- endif %}{%- endfor %}"
    "{%- set ns.pending = ns.system != '' %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'user' %}"
    "{{- '[INST] ' + (ns.system if ns.pending else '') + (message.get('content') or '') + ' [/INST]' }}"
    "{%- set ns.pending = false %}"
    "{%- elif message['role'] in ('assistant', 'tool') and ns.pending %}"
    "{{- '[INST] ' + ns.system[:-2] + ' [/INST]' }}"
    "{%- set ns.pending = false %}"
    "{%- endif %}"
    "{%- if message['role'] == 'tool' %}"
    "{{- '[TOOL_RESULTS] ' + (message.get('content') or '') + ' [/TOOL_RESULTS]' }}"
    "{%- elif message['role'] == 'assistant' %}"
    "{%- generation %}"
    "{{- message.get('content') or '' }}"
    "{%- if message.get('tool_calls') %}{{- '[TOOL_CALLS] ' + (message['tool_calls'] | tojson) }}{%- endif %}"
    "{{- eos_token }}"
    "{%- endgeneration %}"
    "{%- endif %}"
    "{%- endfor %}"
)
_GENERATION_RE = re.compile(r"\{%-?\s*generation\s*-?%\}")


def has_generation_blocks(template: str) -> bool:
    """Whether the template marks the trainable (assistant) tokens with {% generation %} blocks."""
    return bool(_GENERATION_RE.search(template))


def template_hash(template: str | None) -> str:
    return digest(template or "", 16)


def template_messages(messages: list[dict]) -> list[dict]:
    """Record messages as chat templates get them from the shards: as written (records.clean_message), no
    conversion: what is counted is what the trainer renders."""
    return [clean_message(m) for m in messages]


def is_chat(record: dict) -> bool:
    return record.get("kind") in ("chat", "instruction") and bool(record.get("messages"))


def render_default(messages: list[dict], bos: str | None, eos: str | None,
                   tools: list[dict] | None = None) -> tuple[str, list[tuple[int, int]]]:
    """DEFAULT_CHAT_TEMPLATE in plain Python: the same string and the same {% generation %} spans as the Jinja
    rendering (checked by tests/data/test_tokenizer.py), without Jinja's per-call cost. `messages` as
    template_messages gives them."""
    out = [bos or ""]
    if tools:
        out.append("[AVAILABLE_TOOLS] " + json.dumps(tools, ensure_ascii=False) + " [/AVAILABLE_TOOLS]")
    pos = sum(map(len, out))
    system = "".join((m.get("content") or "") + "\n\n" for m in messages if m.get("role") == "system")
    pending = system != ""
    spans = []
    for m in messages:
        role = m.get("role")
        piece = ""
        if role == "user":
            piece = "[INST] " + (system if pending else "") + (m.get("content") or "") + " [/INST]"
            pending = False
        elif role in ("assistant", "tool") and pending:
            piece = "[INST] " + system[:-2] + " [/INST]"
            pending = False
        if role == "tool":
            piece += "[TOOL_RESULTS] " + (m.get("content") or "") + " [/TOOL_RESULTS]"
        if piece:
            out.append(piece)
            pos += len(piece)
        if role == "assistant":
            gen = m.get("content") or ""
            if m.get("tool_calls"):
                gen += "[TOOL_CALLS] " + json.dumps(m["tool_calls"], ensure_ascii=False)
            gen += eos or ""
            spans.append((pos, pos + len(gen)))
            out.append(gen)
            pos += len(gen)
    return "".join(out), spans
