"""Converters: one per input format, each turning a raw row into the canonical record.

The registry (REGISTRY, LLaMA-Factory's converter registry is the model) maps a format name to its detector and
converter; each converter registers itself under one of the names of pipeline.core.config.INPUT_FORMATS (the
config's formats.format accepts those), or under "mapped" (formats.mapping). Detection runs once per file on its first
rows; a row that does not fit the file's format goes through the converter its own keys match
(format_of_row: a file may mix formats). A row that does not convert raises Invalid with a reason code
and is quarantined by the normalize step.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from pipeline.core.config import INPUT_FORMATS
from pipeline.core.records import ROLES, record_id
from pipeline.core.textnorm import normalize_text
from pipeline.data.readers import FileReader, UnreadableInput


class Invalid(Exception):
    """A row that cannot become a record; `reason` is a stable code for the report."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Dropped(Invalid):
    """A valid row removed by a configured choice (counted as dropped, not quarantined)."""


class NotSupervisedData(UnreadableInput):
    """A whole file that is not SFT data (preference pairs, KTO labels) under formats.preference = "refuse"."""


ROLE_ALIASES = {
    "system": "system", "developer": "system",
    "user": "user", "human": "user", "customer": "user",
    "assistant": "assistant", "gpt": "assistant", "bot": "assistant", "model": "assistant", "chatgpt": "assistant",
    "tool": "tool", "observation": "tool", "function": "tool", "ipython": "tool",
    "function_call": "function_call",  # ShareGPT: an assistant turn holding a tool call
}
TEXT_KEYS = ("text", "content", "document", "body")
RESPONSE_KEYS = ("completion", "response")


def _string(value, *, required: bool = True) -> str:
    if value is None:
        if required:
            raise Invalid("missing_fields")
        return ""
    if not isinstance(value, str):
        raise Invalid("non_string_content")
    return normalize_text(value)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _utf8(value: str) -> str:
    """Strings that are kept as they are (tool names, arguments): lone surrogates removed, as
    normalize_text does for content. Fuzzing found "\\ud800" from JSON input reaching Parquet, which
    cannot encode it, and crashing the run."""
    return _LONE_SURROGATE.sub("", value)


# Integers the trainer's loader can read back: datasets decodes JSON values with ujson, which refuses
# integers outside [-2**63, 2**64).
_INT_RANGE = (-(2 ** 63), 2 ** 64 - 1)


def _json_clean(value, reason: str):
    """A JSON value kept as structure (tool arguments, tool schemas): strings and keys without lone
    surrogates, key order kept; non-finite floats and out-of-range integers refused (`reason`)."""
    if isinstance(value, str):
        return _utf8(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
            raise Invalid(reason)
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise Invalid(reason)
        return value
    if isinstance(value, dict):
        return {_utf8(k) if isinstance(k, str) else str(k): _json_clean(v, reason) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_clean(v, reason) for v in value]
    raise Invalid(reason)


def _arguments(value) -> dict:
    """Tool-call arguments as a JSON object (a dict, keys in their order), whatever form they came in:
    templates render them with tojson, so a JSON string would be rendered as a quoted string."""
    if value is None or value == "":
        return {}
    return _json_clean(_json_object(value, "invalid_tool_call"), "invalid_tool_call")


def _json_object(value, reason: str) -> dict:
    """A dict, or a JSON string holding one; anything else is Invalid(reason)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise Invalid(reason) from None
    if not isinstance(value, dict):
        raise Invalid(reason)
    return value


def _call(name: str, arguments, call_id=None) -> dict:
    call = {"type": "function", "function": {"name": _utf8(name), "arguments": _arguments(arguments)}}
    if isinstance(call_id, str) and call_id:
        call = {"id": _utf8(call_id), **call}
    return call


def _tool_calls_from_text(value: str) -> list[dict]:
    """ShareGPT function_call turns hold JSON: {"name", "arguments"} or a list of them."""
    try:
        parsed = json.loads(value)
    except ValueError:
        raise Invalid("invalid_tool_call") from None
    calls = parsed if isinstance(parsed, list) else [parsed]
    if not calls or not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls):
        raise Invalid("invalid_tool_call")
    return [_call(c["name"], c.get("arguments"), c.get("id")) for c in calls]


def _openai_tool_calls(calls) -> list[dict]:
    if not isinstance(calls, list):
        raise Invalid("invalid_tool_call")
    out = []
    for call in calls:
        fn = call.get("function", call) if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise Invalid("invalid_tool_call")
        out.append(_call(fn["name"], fn.get("arguments"), call.get("id")))
    return out


def _tools(value) -> list[dict] | None:
    """Tool definitions as apply_chat_template(tools=...) takes them: [{"type": "function", "function":
    {name, description, parameters}}]. Accepts that form, bare {name, description, parameters} (glaive,
    LLaMA-Factory), or either as a JSON string; empty means none."""
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise Invalid("invalid_tools") from None
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        raise Invalid("invalid_tools")
    out = []
    for tool in value:
        tool = _json_object(tool, "invalid_tools")  # a dict, or a list of JSON strings
        fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        if not isinstance(fn.get("name"), str):
            raise Invalid("invalid_tools")
        out.append({"type": "function", "function": _json_clean(fn, "invalid_tools")})
    return out or None


def _call_id(n: int) -> str:
    """A generated tool-call id: 9 alphanumerics, the form Mistral's templates require (others ignore ids)."""
    return f"call{n:05d}"


def link_tool_calls(messages: list[dict]) -> list[dict]:
    """Pair tool results with the calls they answer, in order: a call without an id gets a generated one
    (Mistral's templates refuse a call or a result without a 9-character id), a result without
    tool_call_id/name takes its call's. Ids the source has are kept as they are."""
    used = {c["id"] for m in messages for c in m.get("tool_calls") or () if "id" in c}
    n, pending = 0, []
    for m in messages:
        if m["role"] == "assistant" and m.get("tool_calls"):
            pending = []
            for i, call in enumerate(m["tool_calls"]):
                if "id" not in call:
                    n += 1
                    while _call_id(n) in used:
                        n += 1
                    call = m["tool_calls"][i] = {"id": _call_id(n), **call}
                pending.append(call)
        elif m["role"] == "tool":
            if pending:
                call = pending.pop(0)
                m.setdefault("tool_call_id", call["id"])
                m.setdefault("name", call["function"]["name"])
        else:
            pending = []
    return messages


def _role(value) -> str:
    role = ROLE_ALIASES.get(str(value).strip().lower()) if isinstance(value, str) else None
    if role is None:
        raise Invalid("unknown_role" if value is not None else "missing_role")
    return role


def check_conversation(messages: list[dict]) -> list[dict]:
    """System first (optional), then user/assistant turns alternating, tool results only after an
    assistant tool call, ending with an assistant turn; no empty turns."""
    if not messages:
        raise Invalid("no_messages")
    expected_user = True
    for i, m in enumerate(messages):
        role = m["role"]
        if not m.get("content") and not m.get("tool_calls"):
            raise Invalid("empty_turn")
        if role == "system":
            if i != 0:
                raise Invalid("bad_role_order")
        elif role == "user":
            if not expected_user:
                raise Invalid("bad_role_order")
            expected_user = False
        elif role == "assistant":
            if expected_user:
                raise Invalid("bad_role_order")
            expected_user = not m.get("tool_calls")
        elif role == "tool":
            prev = messages[i - 1] if i else {}
            if not (prev.get("tool_calls") or prev.get("role") == "tool"):
                raise Invalid("bad_role_order")
        else:  # e.g. "function_call" from a mapped file: not a role of the record schema
            raise Invalid("unknown_role")
    last = messages[-1]
    if last["role"] != "assistant" or last.get("tool_calls") and not last.get("content"):
        raise Invalid("no_final_answer")
    return messages


def leading_assistant_turns(messages: list[dict], policy: str) -> tuple[list[dict], int]:
    """The conversation without the assistant turns before its first user turn (an agent's greeting in a
    CRM export), and how many there were. "drop" removes them, "system" moves their text into the system
    message (after any it has), "reject" leaves them for check_conversation to refuse (bad_role_order).
    Only text turns followed by a user turn count: a chat of assistant turns alone stays as it is."""
    start = 1 if messages and messages[0]["role"] == "system" else 0
    end = start
    while end < len(messages) and messages[end]["role"] == "assistant" and not messages[end].get("tool_calls"):
        end += 1
    if policy == "reject" or end == start or end == len(messages) or messages[end]["role"] != "user":
        return messages, 0
    moved = messages[start:end]
    if policy == "drop":
        return messages[:start] + messages[end:], len(moved)
    texts = [m["content"] for m in messages[:start] + moved if m["content"]]
    return [_message("system", "\n\n".join(texts))] + messages[end:], len(moved)


def _message(role: str, content: str, tool_calls: list[dict] | None = None, name: str | None = None,
             tool_call_id: str | None = None) -> dict:
    msg = {"role": role, "content": content}
    if tool_calls:
        msg["tool_calls"] = tool_calls
    if tool_call_id:
        msg["tool_call_id"] = _utf8(tool_call_id)
    if name:
        msg["name"] = _utf8(name)
    return msg


# --- converters: row -> (kind, messages | None, text | None, consumed keys) ------------------------

@dataclass(frozen=True)
class InputFormat:
    convert: Callable[[dict, dict], tuple]
    detect: Callable[[dict], bool] | None  # None: never detected, only chosen (mapped)


REGISTRY: dict[str, InputFormat] = {}


def register(name: str, detect: Callable[[dict], bool] | None = None):
    """Register the decorated converter as the input format `name`, detected by `detect`."""
    if name not in (*INPUT_FORMATS, "mapped"):
        raise ValueError(f"{name!r} is not in pipeline.core.config.INPUT_FORMATS")

    def add(convert):
        REGISTRY[name] = InputFormat(convert, detect)
        return convert
    return add


def _has_turns(row: dict, key: str, role_key: str) -> bool:
    turns = row.get(key)
    return isinstance(turns, list) and bool(turns) and isinstance(turns[0], dict) and role_key in turns[0]


def detectors() -> list[tuple[str, Callable[[dict], bool]]]:
    """(name, detector) of each format in detection order (INPUT_FORMATS')."""
    return [(name, REGISTRY[name].detect) for name in INPUT_FORMATS]


@register("alpaca", lambda r: "instruction" in r and "output" in r)
def convert_alpaca(row: dict, mapping: dict) -> tuple:
    instruction = _string(row.get("instruction"), required=False)
    extra = _string(row.get("input"), required=False)
    prompt = "\n".join(p for p in (instruction, extra) if p)
    if not prompt:
        raise Invalid("empty_turn")
    messages = []
    if row.get("system"):
        messages.append(_message("system", _string(row["system"])))
    history = row.get("history") or []
    if not isinstance(history, list):  # any other JSON value: the row is quarantined, not a TypeError
        raise Invalid("bad_history")
    for pair in history:
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
            raise Invalid("bad_history")
        messages += [_message("user", _string(pair[0])), _message("assistant", _string(pair[1]))]
    messages += [_message("user", prompt), _message("assistant", _string(row.get("output")))]
    return "instruction", messages, None, {"instruction", "input", "output", "system", "history"}


def _turn_list(row: dict, first: str, second: str) -> tuple[str, list]:
    """The column holding the turns (`first` where present, else `second`) and the turns, which must be a list."""
    key = first if first in row else second
    turns = row.get(key)
    if not isinstance(turns, list):
        raise Invalid("missing_fields")
    return key, turns


@register("sharegpt", lambda r: _has_turns(r, "conversations", "from") or _has_turns(r, "messages", "from"))
def convert_sharegpt(row: dict, mapping: dict) -> tuple:
    key, turns = _turn_list(row, "conversations", "messages")
    messages = []
    if row.get("system"):
        messages.append(_message("system", _string(row["system"])))
    for turn in turns:
        if not isinstance(turn, dict):
            raise Invalid("bad_turn")
        role = _role(turn.get("from"))
        value = turn.get("value")
        if role == "function_call":
            messages.append(_message("assistant", "", _tool_calls_from_text(_string(value))))
        else:
            name = turn.get("name") if isinstance(turn.get("name"), str) else None  # as in convert_openai
            messages.append(_message(role, _string(value), name=name))
    return "chat", messages, None, {key, "system"}


def _openai_content(content) -> tuple[str, list[dict]]:
    """A string, or typed parts: OpenAI's {type: text, text} and LLaMA-Factory v1's {type, value}."""
    if content is None or isinstance(content, str):
        return _string(content, required=False), []
    if not isinstance(content, list):
        raise Invalid("non_string_content")
    texts, calls = [], []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            raise Invalid("non_string_content")
        kind, value = part.get("type", "text"), part.get("text", part.get("value"))
        if kind == "text":
            texts.append(_string(value))
        elif kind in ("reasoning", "thinking"):
            texts.append(f"<think>\n{_string(value)}\n</think>")
        elif kind == "tool_call":
            calls += _tool_calls_from_text(value) if isinstance(value, str) else _openai_tool_calls([value])
        elif isinstance(kind, str) and kind in MEDIA_PARTS:  # isinstance first: a list as type is unhashable
            raise Invalid("multimodal")  # not text training data; a placeholder would be left dangling
        else:
            raise Invalid("unsupported_content")
    return normalize_text("\n".join(texts)), calls


@register("openai", lambda r: _has_turns(r, "messages", "role") or _has_turns(r, "conversations", "role"))
def convert_openai(row: dict, mapping: dict) -> tuple:
    key, turns = _turn_list(row, "messages", "conversations")
    messages = []
    for turn in turns:
        if not isinstance(turn, dict):
            raise Invalid("bad_turn")
        role = _role(turn.get("role"))
        if role == "function_call":
            raise Invalid("unknown_role")
        content, calls = _openai_content(turn.get("content"))
        if turn.get("tool_calls"):
            calls += _openai_tool_calls(turn["tool_calls"])
        name = turn.get("name") if role == "tool" and isinstance(turn.get("name"), str) else None
        call_id = turn.get("tool_call_id") if role == "tool" and isinstance(turn.get("tool_call_id"), str) else None
        messages.append(_message(role, content, calls if role == "assistant" else None, name, call_id))
    return "chat", messages, None, {key}


def _prompt_messages(prompt) -> list[dict]:
    if isinstance(prompt, list):  # trl's conversational prompt
        return convert_openai({"messages": prompt}, {})[1]
    return [_message("user", _string(prompt))]


@register("prompt_completion", lambda r: "prompt" in r and any(k in r for k in RESPONSE_KEYS))
def convert_prompt_completion(row: dict, mapping: dict) -> tuple:
    response_key = next((k for k in RESPONSE_KEYS if k in row), None)
    if response_key is None:  # a later row of a prompt/completion file may lack it: quarantined, not an error
        raise Invalid("missing_fields")
    prompt, response = row.get("prompt"), row.get(response_key)
    messages = _prompt_messages(prompt)
    if isinstance(response, list):
        messages += convert_openai({"messages": response}, {})[1]
    else:
        messages.append(_message("assistant", _string(response)))
    if row.get("system"):
        messages.insert(0, _message("system", _string(row["system"])))
    kind = "chat" if isinstance(prompt, list) else "instruction"
    return kind, messages, None, {"prompt", response_key, "system"}


@register("qa", lambda r: "question" in r and "answer" in r)
def convert_qa(row: dict, mapping: dict) -> tuple:
    messages = [_message("user", _string(row.get("question"))), _message("assistant", _string(row.get("answer")))]
    return "instruction", messages, None, {"question", "answer"}


@register("text", lambda r: any(isinstance(r.get(k), str) for k in TEXT_KEYS))
def convert_text(row: dict | str, mapping: dict) -> tuple:
    if isinstance(row, str):
        return "text", None, _string(row), set()
    key = next((k for k in TEXT_KEYS if k in row), None)
    if key is None:
        raise Invalid("missing_fields")
    return "text", None, _string(row[key]), {key}


# The keys convert_mapped and to_record read from formats.mapping: columns (text, messages, prompt, response,
# system, tools), the turn keys (role, content) and the role tags; the config refuses any other.
@register("mapped")
def convert_mapped(row: dict, mapping: dict) -> tuple:
    """An explicit column/role mapping (LLaMA-Factory's dataset_info style)."""
    if "text" in mapping:
        return "text", None, _string(row.get(mapping["text"])), {mapping["text"]}
    if "messages" in mapping:
        turns = row.get(mapping["messages"])
        if not isinstance(turns, list):
            raise Invalid("missing_fields")
        role_key, content_key = mapping.get("role", "role"), mapping.get("content", "content")
        tags = {mapping[r]: r for r in ROLES if r in mapping}
        messages = []
        for turn in turns:
            if not isinstance(turn, dict):
                raise Invalid("bad_turn")
            tag = turn.get(role_key)
            role = (tags.get(tag) if isinstance(tag, str) else None) or _role(tag)  # a list tag: unhashable
            messages.append(_message(role, _string(turn.get(content_key))))
        consumed = {mapping["messages"]}
        if mapping.get("system") and mapping["system"] in row and "system" not in tags.values():
            messages.insert(0, _message("system", _string(row[mapping["system"]])))
            consumed.add(mapping["system"])
        return "chat", messages, None, consumed
    if "prompt" in mapping and "response" in mapping:
        messages = [_message("user", _string(row.get(mapping["prompt"]))),
                    _message("assistant", _string(row.get(mapping["response"])))]
        consumed = {mapping["prompt"], mapping["response"]}
        if mapping.get("system") and row.get(mapping["system"]):
            messages.insert(0, _message("system", _string(row[mapping["system"]])))
            consumed.add(mapping["system"])
        return "instruction", messages, None, consumed
    raise Invalid("bad_mapping")


# --- preference and multimodal rows ----------------------------------------------------------------

MEDIA_KEYS = ("images", "videos", "audios", "image", "video", "audio")   # LLaMA-Factory's media columns
MEDIA_PARTS = frozenset(("image", "image_url", "input_image", "video", "video_url", "audio", "input_audio"))
LABEL_KEYS = ("label", "kto_tag")
# (chosen, rejected) column pairs: trl's and LLaMA-Factory's (sharegpt, alpaca), and LLaMA-Factory v1's
# DPOSample, whose sides are whole conversations of v1 messages ({role, content: [{type, value}]})
PAIR_KEYS = (("chosen", "rejected"), ("chosen_messages", "rejected_messages"))
_ANSWER_KEYS = ("messages", "conversations", "completion", "response", "output", "answer")


def preference_kind(row) -> str | None:
    """"paired" for chosen/rejected rows (DPO, ORPO: trl's and LLaMA-Factory's shapes), "unpaired" for rows
    with a boolean desirability label (KTO), None for anything else."""
    if not isinstance(row, dict):
        return None
    if any(chosen in row and rejected in row for chosen, rejected in PAIR_KEYS):
        return "paired"
    label = next((row[k] for k in LABEL_KEYS if k in row), None)
    if isinstance(label, bool) and any(k in row for k in _ANSWER_KEYS):
        return "unpaired"
    return None


def is_multimodal(row) -> bool:
    return isinstance(row, dict) and any(row.get(k) not in (None, "", [], {}) for k in MEDIA_KEYS)


def sft_view(row: dict) -> dict:
    """A preference row as the SFT row it implies: the conversation with the chosen answer (the rejected
    one is not kept, not even in meta), or a KTO row without its label. Raises Dropped("undesirable") for
    a KTO row labelled undesirable."""
    kind = preference_kind(row)
    if kind == "unpaired":
        if not next(row[k] for k in LABEL_KEYS if k in row):
            raise Dropped("undesirable")
        return {k: v for k, v in row.items() if k not in LABEL_KEYS}
    if kind != "paired":
        return row
    if "chosen_messages" in row and "rejected_messages" in row:  # v1: the chosen side is the conversation
        rest = {k: v for k, v in row.items() if k not in ("chosen_messages", "rejected_messages")}
        return {**rest, "messages": row["chosen_messages"]}
    chosen = row["chosen"]
    rest = {k: v for k, v in row.items() if k not in ("chosen", "rejected")}
    for key in ("conversations", "messages"):
        if isinstance(rest.get(key), list):  # LLaMA-Factory: the prompt turns, and one answer turn each
            return {**rest, key: rest[key] + (chosen if isinstance(chosen, list) else [chosen])}
    for prompt_key, answer_key in (("prompt", "completion"), ("instruction", "output"), ("question", "answer")):
        if prompt_key in rest:
            return {**rest, answer_key: chosen}
    if isinstance(chosen, list):  # trl's implicit prompt: each side is the whole conversation
        return {**rest, "messages": chosen}
    raise Invalid("missing_fields")


PREFERENCE_NAMES = {"paired": "preference data (chosen/rejected pairs, as for DPO)",
                    "unpaired": "KTO data (answers labelled desirable or undesirable)"}


def check_file(sample: list, name: str, preference: str = "refuse", mapping: dict | None = None) -> None:
    """Refuse a file of preference rows when formats.preference is "refuse": training on it as SFT data
    would teach the rejected or undesirable answers too. One line: what the file is and how to opt in.
    An explicit mapping says which columns are the conversation: its files are taken as they are."""
    if preference != "refuse" or mapping:
        return
    kinds = Counter(k for k in map(preference_kind, sample) if k)
    if kinds:
        kind = kinds.most_common(1)[0][0]
        keep = "the chosen answers" if kind == "paired" else "the desirable answers (undesirable ones dropped)"
        raise NotSupervisedData(name, f"{PREFERENCE_NAMES[kind]}, not SFT data: set formats.preference to "
                                      f"\"chosen\" in the config to train on {keep} only")


PEEK_ROWS = 50


def check_input(file, cfg) -> None:
    """check_registry and check_file on an input's first rows (a batch of PEEK_ROWS): for the runner, so that
    a dataset registry or a preference file stops the run (or is skipped) before any output is written."""
    if cfg.formats.mapping:
        return
    batches = FileReader(file, cfg.read.model_copy(update={"batch_size": PEEK_ROWS})).batches()
    try:
        batch = next(batches, [])
    except UnreadableInput:
        raise
    except Exception:  # noqa: BLE001 - a read error is the normalize phase's to report, as it always was
        return
    finally:
        batches.close()
    sample = [row.value for row in batch if not row.error]
    check_registry(sample, file.shown)
    check_file(sample, file.shown, cfg.formats.preference)


# LLaMA-Factory's dataset_info.json: a dataset's location is one of these keys
REGISTRY_KEYS = frozenset(("file_name", "hf_hub_url", "ms_hub_url", "om_hub_url", "script_url", "cloud_file_name"))


def check_registry(sample: list, name: str) -> None:
    """Refuse LLaMA-Factory's dataset registry (dataset_info.json), found in every copy of its data folder: each
    of its entries says where a dataset is and how to read it, none is a record (read as data, every entry was
    quarantined as unknown_format)."""
    if sample and all(isinstance(row, dict) and REGISTRY_KEYS & row.keys() and row_format(row) is None
                      for row in sample):
        raise NotSupervisedData(name, "a LLaMA-Factory dataset registry (dataset_info.json: where datasets are "
                                      "and how to read them), not records; the data files it names are inputs "
                                      "of their own")


def row_format(row, preferred: str | None = None) -> str | None:
    """The format a row's own keys match: `preferred` where its detector matches, else the first detector
    in detection order (INPUT_FORMATS) that does; None for none. A preference row is judged as the SFT row it implies."""
    if isinstance(row, str):
        return "text"
    if not isinstance(row, dict):
        return None
    try:
        row = sft_view(row)
    except Invalid:
        return None
    if preferred in INPUT_FORMATS and REGISTRY[preferred].detect(row):
        return preferred
    return next((name for name, detect in detectors() if detect(row)), None)


def detect_format(sample: list, configured: str = "auto", mapping: dict | None = None) -> str | None:
    """The format of a file from its first parsed rows: the configured one, the mapping, or the
    detector that matches most rows (ties broken by detection order)."""
    if configured != "auto":
        return configured
    if mapping:
        return "mapped"
    if any(isinstance(v, str) for v in sample):
        return "text"
    votes = Counter(fmt for fmt in map(row_format, sample) if fmt)
    if not votes:
        return None
    best = max(votes.values())
    return next(name for name in INPUT_FORMATS if votes[name] == best)


def format_of_row(row, file_format: str | None, configured: str = "auto", mapping: dict | None = None) -> str | None:
    """The converter for one row of a file whose format is `file_format`. A configured format or mapping
    applies to every row. Detected, a file may mix formats (half Alpaca, half ShareGPT rows): a row that
    does not fit the file's format goes through the converter its own keys match; a row that matches none
    goes through the file's, which names what is missing (None: no format, the row is unknown_format)."""
    if configured != "auto" or mapping:
        return file_format
    return row_format(row, file_format) or file_format


# --- what the report and the terminal say about a file's formats ------------------------------------

COLUMNS_KEPT = 50     # distinct column names counted per shard: a row of a million keys stays small
COLUMN_CHARS = 64
COLUMNS_SHOWN = 10
WITHHELD = "(a name withheld: it looks like personal data)"


def count_columns(row, counts: dict, shown: Callable[[str], str]) -> None:
    """Add the column names of a row of no known format to `counts` (name -> rows): names only, never
    values, each as `shown` gives it (a name that looks like personal data is withheld: a CSV without a
    header row has a record as its column names)."""
    if not isinstance(row, dict):
        return
    for key in list(row)[:COLUMNS_KEPT]:
        name = str(key)[:COLUMN_CHARS]
        name = shown(name if name.isprintable() else name.encode("unicode_escape").decode("ascii"))
        if name in counts or len(counts) < COLUMNS_KEPT:
            counts[name] = counts.get(name, 0) + 1


def mapping_example(columns: list[str]) -> str:
    """A formats.mapping for the columns found, as the user would write it in the config."""
    named = [c for c in columns if c != WITHHELD]
    if len(named) >= 2:
        mapping = {"prompt": named[0], "response": named[1]}
    else:
        mapping = {"text": named[0] if named else "body"}
    return json.dumps({"formats": {"mapping": mapping}}, ensure_ascii=False)


def unknown_format_hint(entry: dict) -> str:
    """What a report's file entry says about its rows of no known format: the columns found and how to map them."""
    columns = entry.get("unknown_columns") or []
    found = f"columns found: {', '.join(columns)}" if columns else "no columns found"
    return f"{found}; name them in formats.mapping, e.g. {mapping_example(columns)}"


def file_format_notes(entry: dict) -> list[str]:
    """What a report's file entry says about formats, one note each: rows of several formats, each read by
    its own converter; rows of no known format, with the columns found and how to map them."""
    notes = []
    formats = entry.get("formats") or {}
    if len(formats) > 1:
        found = ", ".join(f"{fmt} {n}" for fmt, n in sorted(formats.items(), key=lambda kv: (-kv[1], kv[0])))
        notes.append(f"rows of {len(formats)} formats ({found}), each read by its own converter")
    unknown = entry.get("quarantined_by_reason", {}).get("unknown_format", 0)
    if unknown:
        notes.append(f"{unknown} row(s) of no known format quarantined ({unknown_format_hint(entry)})")
    return notes


LEADING_DONE = {"drop": "dropped", "system": "moved into the system message"}


def leading_assistant_note(counters: dict) -> str | None:
    """What formats.leading_assistant did, from the normalize stage's counters; None if nothing."""
    done = counters.get("leading_assistant") or {}
    parts = [f"{c.get('turns', 0)} assistant turn(s) before the first user turn {LEADING_DONE[policy]} in "
             f"{c.get('records', 0)} chat(s) (formats.leading_assistant: {policy})"
             for policy, c in sorted(done.items()) if policy in LEADING_DONE]
    return "; ".join(parts) or None


def _finite(value):
    """The value with every NaN or infinite float as None (nesting is bounded by read.max_depth)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _meta_json(row, consumed: set) -> str:
    if not isinstance(row, dict):
        return "{}"
    extra = {k: v for k, v in row.items() if k not in consumed}
    try:
        try:
            text = json.dumps(extra, ensure_ascii=False, sort_keys=True, default=str, allow_nan=False)
        except ValueError:
            # NaN and +/-infinity (a Parquet float column, NaN in a .jsonl line) were written as bare NaN /
            # Infinity: not JSON, json.loads in other languages and datasets' readers refuse it. JSON has no
            # such values, so they become null, as pandas' to_json writes them.
            text = json.dumps(_finite(extra), ensure_ascii=False, sort_keys=True, default=str, allow_nan=False)
    except ValueError:  # an int over Python's 4300-digit str() limit
        raise Invalid("too_large") from None
    # Lone surrogates (valid JSON escapes, e.g. "\\ud800") cannot be written as UTF-8: keep them as JSON
    # escapes, which decode back to the same value.
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def to_record(row, fmt: str, mapping: dict, source: dict, preference: str = "refuse",
              leading_assistant: str = "drop") -> dict:
    """One raw row to a canonical record (id from the normalized content). Raises Invalid (Dropped for a
    row removed by choice). A preference row under preference="chosen" becomes its SFT view, and the record
    says so in "_preference" ("paired" or "unpaired"); assistant turns before the first user turn are
    handled by `leading_assistant` (leading_assistant_turns), their number in "_leading_assistant". Both
    keys are internal, for the counts."""
    if not isinstance(row, (dict, str)) or isinstance(row, str) and fmt != "text":
        raise Invalid("not_an_object")  # e.g. .txt lines with format "alpaca" configured: was AttributeError
    if is_multimodal(row):
        raise Invalid("multimodal")  # kept, its <image> placeholders would point at nothing
    pref = preference_kind(row) if fmt != "mapped" else None
    if pref:
        if preference != "chosen":
            raise Invalid("preference_data")  # a stray row in a file check_file let through
        row = sft_view(row)
    try:
        kind, messages, text, consumed = REGISTRY[fmt].convert(row, mapping)
        meta = _meta_json(row, consumed)  # json.dumps recurses too: deep meta raised RecursionError
    except RecursionError:
        raise Invalid("too_deep") from None
    tools, leading = None, 0
    if messages is not None:
        messages, leading = leading_assistant_turns(messages, leading_assistant)
        messages = link_tool_calls(check_conversation(messages))
        tools_key = mapping.get("tools", "tools") if fmt == "mapped" else "tools"
        if isinstance(row, dict) and tools_key in row:
            try:
                tools = _tools(row[tools_key])
            except RecursionError:
                raise Invalid("too_deep") from None
            consumed = consumed | {tools_key}
            meta = _meta_json(row, consumed)
    elif not text:
        raise Invalid("empty_text")
    record = {"kind": kind, "messages": messages, "tools": tools, "text": text, "source": source, "meta": meta}
    record["id"] = record_id(record)
    if pref:
        record["_preference"] = pref
    if leading:
        record["_leading_assistant"] = leading
    return record
