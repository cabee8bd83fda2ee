"""Tekken through mistral-common, encoded as mistral-finetune encodes (MistralCommonHandle)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pipeline.core.records import template_inputs
from pipeline.data.lengths.tokenizer.chat_template import is_chat, template_hash
from pipeline.data.lengths.tokenizer.handle import COUNT_METHOD_VERSION, TokenizerHandle, digest
from pipeline.data.lengths.tokenizer.resolve import TokenizerSpec


class MistralCommonHandle(TokenizerHandle):
    """Tekken through mistral-common in fine-tuning mode (a conversation may end with an assistant turn)."""

    def __init__(self, spec: TokenizerSpec):
        import mistral_common
        from mistral_common.protocol.instruct.validator import ValidationMode
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

        self.spec = spec
        self.name = spec.name
        self.mistral = MistralTokenizer.from_file(spec.location, mode=ValidationMode.finetuning)
        self.instruct = self.mistral.instruct_tokenizer
        self.raw = self.instruct.tokenizer
        self.fingerprint = digest(Path(spec.location).read_bytes() + COUNT_METHOD_VERSION.encode())
        self.template = f"mistral-common {mistral_common.__version__} {type(self.instruct).__name__}"
        self.template_hash = template_hash(self.template)
        self.template_source = "mistral-common"

    def _request(self, messages: list[dict], tools: list[dict] | None = None):
        from mistral_common.protocol.instruct.messages import AssistantMessage, SystemMessage, ToolMessage, UserMessage
        from mistral_common.protocol.instruct.request import ChatCompletionRequest
        from mistral_common.protocol.instruct.tool_calls import Function, FunctionCall, Tool, ToolCall

        out, call_no, pending = [], 0, []
        for m in messages:
            role, content = m.get("role"), m.get("content") or ""
            if role == "system":
                out.append(SystemMessage(content=content))
            elif role == "user":
                out.append(UserMessage(content=content))
            elif role == "assistant":
                calls = []
                for c in m.get("tool_calls") or ():
                    call_no += 1
                    # mistral-common takes 9-alphanumeric ids only (formats generates those where the source
                    # has none); other ids are replaced here, as mistral-finetune's validation would refuse them
                    cid = c.get("id") if re.fullmatch(r"[A-Za-z0-9]{9}", str(c.get("id") or "")) \
                        else f"call{call_no:05d}"
                    pending.append(cid)
                    fn = c.get("function") or c
                    args = fn.get("arguments")
                    calls.append(ToolCall(id=cid, function=FunctionCall(
                        name=fn.get("name") or "",
                        arguments=args if isinstance(args, str) else json.dumps(args or {}, ensure_ascii=False))))
                out.append(AssistantMessage(content=content or None, tool_calls=calls or None))
            elif role == "tool":
                cid = pending.pop(0) if pending else f"call{call_no + 1:05d}"
                out.append(ToolMessage(content=content, tool_call_id=cid, name=m.get("name")))
        defs = None
        if tools:
            defs = [Tool(function=Function(name=t["function"]["name"],
                                           description=t["function"].get("description") or "",
                                           parameters=t["function"].get("parameters") or {}))
                    for t in tools]
        return ChatCompletionRequest(messages=out, tools=defs), out

    def measure(self, records: list[dict]) -> list[tuple[int, int] | Exception]:
        results: list[Any] = []
        for r in records:
            try:
                if is_chat(r):
                    request, msgs = self._request(*template_inputs(r))
                    tokens = self.mistral.encode_chat_completion(request).tokens
                    last_user = max((i for i, m in enumerate(msgs) if m.role == "user"), default=-1)
                    trainable = 0
                    for i, m in enumerate(msgs):
                        if m.role == "assistant":
                            trainable += len(self.instruct.encode_assistant_message(m, i < last_user))  # incl. its EOS
                    results.append((len(tokens), min(trainable, len(tokens))))
                else:
                    text = r.get("text") or ""
                    n = len(self.raw.encode(text, bos=True, eos=True))
                    results.append((n, n))
            except Exception as exc:  # noqa: BLE001
                results.append(exc)
        return results

    def _piece_ends(self, text: str) -> list[int]:
        import codecs

        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        ends, pos = [], 0
        for i in self.raw.encode(text, bos=False, eos=False):
            pos += len(decoder.decode(self.raw.id_to_byte_piece(i)))
            ends.append(min(pos, len(text)))
        ends = sorted({e for e in ends if e > 0})
        if not ends or ends[-1] != len(text):
            ends.append(len(text))
        return ends
