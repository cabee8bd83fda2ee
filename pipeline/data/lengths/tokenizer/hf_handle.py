"""A Hugging Face tokenizer as the trainer uses it (HFHandle): the chat template rendered through transformers
(or render_default for the default template), the assistant spans, and batched counts."""
from __future__ import annotations

import json
import os
import re
from typing import Any

from pipeline.core.records import template_inputs
from pipeline.data.lengths.tokenizer.cache import sentencepiece_folder
from pipeline.data.lengths.tokenizer.chat_template import (
    DEFAULT_CHAT_TEMPLATE,
    has_generation_blocks,
    is_chat,
    render_default,
    template_hash,
)
from pipeline.data.lengths.tokenizer.counting import SentencePieceCounter
from pipeline.data.lengths.tokenizer.handle import COUNT_METHOD_VERSION, TokenizerHandle, digest
from pipeline.data.lengths.tokenizer.resolve import TokenizerSpec


class HFHandle(TokenizerHandle):
    def __init__(self, spec: TokenizerSpec, cache_dir=None, chat_template: str | None = None):
        import transformers
        from transformers import AutoTokenizer

        transformers.logging.set_verbosity_error()
        self.spec = spec
        if spec.kind == "mistral-32k":
            location = str(sentencepiece_folder(spec.location, cache_dir))
            local_only = True
        else:
            location = spec.location
            local_only = spec.local_only or os.environ.get("HF_HUB_OFFLINE") == "1"
        self.tokenizer = tok = AutoTokenizer.from_pretrained(location, local_files_only=local_only)
        self.name = spec.name
        own = tok.chat_template if isinstance(tok.chat_template, str) else (
            tok.chat_template.get("default") if isinstance(tok.chat_template, dict) else None)
        self.template_source = ("override" if chat_template else "default" if not own or own == DEFAULT_CHAT_TEMPLATE
                                else "tokenizer")
        self.template = chat_template or own or DEFAULT_CHAT_TEMPLATE
        self.template_hash = template_hash(self.template)
        self.has_generation = has_generation_blocks(self.template)
        self.builtin_template = self.template == DEFAULT_CHAT_TEMPLATE
        self.special = dict(tok.special_tokens_map)
        self.eos = tok.eos_token
        backend = getattr(tok, "backend_tokenizer", None) if getattr(tok, "is_fast", False) else None
        if backend is not None:
            from tokenizers import Tokenizer

            serialized = backend.to_str()
            self.backend = Tokenizer.from_str(serialized)
            self.backend.no_truncation()
            self.backend.no_padding()
            ident = serialized
            try:
                self.fast = SentencePieceCounter(self.backend)
            except ValueError:
                self.fast = None
        else:  # slow tokenizer: per-record calls through transformers
            self.backend = None
            self.fast = None
            ident = json.dumps(sorted(tok.get_vocab().items()), ensure_ascii=False)
        meta = json.dumps({"class": type(tok).__name__, "special": self.special,
                           "add_bos": getattr(tok, "add_bos_token", None),
                           "add_eos": getattr(tok, "add_eos_token", None)}, sort_keys=True, default=str)
        self.fingerprint = digest(ident + "\x00" + meta + "\x00" + COUNT_METHOD_VERSION)

    # -- rendering
    def render(self, conversations: list[list[dict]], add_generation_prompt: bool = False,
               spans: bool = False, tools: list[dict] | None = None
               ) -> tuple[list[str], list[list[tuple[int, int]]] | None]:
        """What apply_chat_template(conversations, tools=tools, tokenize=False) renders (one tools list for
        the batch, as there)."""
        from transformers.utils.chat_template_utils import render_jinja_template

        rendered, indices = render_jinja_template(
            conversations=conversations, tools=tools, chat_template=self.template,
            return_assistant_tokens_mask=spans, add_generation_prompt=add_generation_prompt, **self.special)
        return rendered, (indices if spans else None)

    def _prompt_before(self, msgs: list[dict], i: int, tools: list[dict] | None = None) -> str:
        """The rendered conversation before message i, with the generation prompt (what precedes an answer)."""
        try:
            (before,), _ = self.render([msgs[:i]], add_generation_prompt=True, tools=tools)
        except Exception:  # noqa: BLE001 - some templates reject an empty conversation
            before = ""
        return before

    def _prefix_spans(self, msgs: list[dict], full: str, tools: list[dict] | None = None
                      ) -> list[tuple[int, int]] | None:
        """Assistant spans for a template without generation blocks; None when the template is not
        prefix-consistent (then counts fall back to token differences)."""
        spans = []
        for i, m in enumerate(msgs):
            if m.get("role") != "assistant":
                continue
            before = self._prompt_before(msgs, i, tools)
            (upto,), _ = self.render([msgs[: i + 1]], tools=tools)
            if not (full.startswith(upto) and upto.startswith(before)):
                return None
            spans.append((len(before), len(upto)))
        return spans

    def _count_tokens(self, texts: list[str], add_special_tokens: bool) -> list[int]:
        if self.fast is not None:
            return self.fast.count_batch(texts, add_special_tokens)
        if self.backend is not None:
            return [len(e) for e in self.backend.encode_batch_fast(texts, add_special_tokens=add_special_tokens)]
        return [len(self.tokenizer(t, add_special_tokens=add_special_tokens)["input_ids"]) for t in texts]

    def _text_inputs(self, records: list[dict]) -> list[str]:
        eos = self.eos
        out = []
        for r in records:
            text = r.get("text") or ""
            if r.get("messages") and not text:
                text = "\n".join(m.get("content") or "" for m in r["messages"])
            if eos and not text.endswith(eos):
                text += eos
            out.append(text)
        return out

    def measure(self, records: list[dict]) -> list[tuple[int, int] | Exception]:
        results: list[Any] = [None] * len(records)
        chat_idx = [i for i, r in enumerate(records) if is_chat(r)]
        text_idx = [i for i, r in enumerate(records) if not is_chat(r)]
        if text_idx:
            counts = self._count_tokens(self._text_inputs([records[i] for i in text_idx]), True)
            for i, n in zip(text_idx, counts):
                results[i] = (n, n)
        if chat_idx:
            convs = [template_inputs(records[i]) for i in chat_idx]   # (messages, tools)
            if self.builtin_template:
                bos, eos = self.special.get("bos_token"), self.special.get("eos_token")
                rendered, spans, ok = [], [], []
                for j, (conv, tools) in enumerate(convs):
                    try:
                        text, sp = render_default(conv, bos, eos, tools)
                    except Exception as exc:  # noqa: BLE001 - e.g. content that is not a string
                        results[chat_idx[j]] = exc
                        continue
                    rendered.append(text)
                    spans.append(sp)
                    ok.append(j)
                for j, n, t in zip(ok, *self._chat_counts(rendered, spans, [convs[j] for j in ok])):
                    results[chat_idx[j]] = (n, t)
                return results
            # apply_chat_template takes one tools list per call: render each group of records with the same
            # tools together (records without tools are one group)
            groups: dict[str, list[int]] = {}
            for j, (_, tools) in enumerate(convs):
                key = json.dumps(tools, ensure_ascii=False) if tools else ""
                groups.setdefault(key, []).append(j)
            done: dict[int, tuple[str, Any]] = {}
            for members in groups.values():
                tools = convs[members[0]][1]
                try:
                    texts, sps = self.render([convs[j][0] for j in members], spans=self.has_generation, tools=tools)
                    for k, j in enumerate(members):
                        done[j] = (texts[k], sps[k] if sps else [])
                except Exception:  # render one by one to isolate the records the template rejects
                    for j in members:
                        try:
                            (text,), sp = self.render([convs[j][0]], spans=self.has_generation, tools=tools)
                        except Exception as exc:  # noqa: BLE001 - reported per record
                            results[chat_idx[j]] = exc
                            continue
                        done[j] = (text, sp[0] if sp else [])
            ok = sorted(done)
            rendered = [done[j][0] for j in ok]
            spans = [done[j][1] for j in ok]
            if not self.has_generation:
                spans = [self._prefix_spans(convs[j][0], text, convs[j][1]) for j, text in zip(ok, rendered)]
            for (j, n, t) in zip(ok, *self._chat_counts(rendered, spans, [convs[j] for j in ok])):
                results[chat_idx[j]] = (n, t)
        return results

    def _chat_counts(self, rendered: list[str], spans: list, convs: list) -> tuple[list[int], list[int]]:
        totals, trainable = [], []
        if self.fast is not None and all(sp is not None for sp in spans):
            for n, t in self.fast.count_spans_batch(rendered, spans):
                totals.append(n)
                trainable.append(t)
            return totals, trainable
        if self.backend is None:
            for text, sp, (conv, tools) in zip(rendered, spans, convs):
                enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=False)
                ids = enc["input_ids"]
                totals.append(len(ids))
                trainable.append(self._slow_trainable(conv, sp, text, tools))
            return totals, trainable
        encs = self.backend.encode_batch(rendered, add_special_tokens=False)
        fallback = []
        for k, (enc, sp, text) in enumerate(zip(encs, spans, rendered)):
            totals.append(len(enc))
            if sp is None:
                trainable.append(0)
                fallback.append(k)
            else:
                trainable.append(sum(_tokens_overlapping(enc, a, b, len(text)) for a, b in sp if b > a))
        for k in fallback:  # template not prefix-consistent: token differences per assistant turn
            trainable[k] = self._diff_trainable(*convs[k])
        return totals, trainable

    def _diff_trainable(self, msgs: list[dict], tools: list[dict] | None = None) -> int:
        total = 0
        for i, m in enumerate(msgs):
            if m.get("role") != "assistant":
                continue
            before = self._prompt_before(msgs, i, tools)
            (upto,), _ = self.render([msgs[: i + 1]], tools=tools)
            a, b = self._count_tokens([before, upto], False)
            total += max(b - a, 0)
        return total

    def _slow_trainable(self, msgs: list[dict], spans, text: str, tools: list[dict] | None = None) -> int:
        if self.has_generation:
            out = self.tokenizer.apply_chat_template(
                msgs, tools=tools, chat_template=self.template, tokenize=True, return_dict=True,
                return_assistant_tokens_mask=True)
            return int(sum(out["assistant_masks"]))
        return self._diff_trainable(msgs, tools)

    def _piece_ends(self, text: str) -> list[int]:
        if not text:
            return []
        if self.backend is not None:
            offsets = self.backend.encode(text, add_special_tokens=False).offsets
        else:  # a slow tokenizer has no offsets: cut at word ends (each cut is measured anyway)
            offsets = [(m.start(), m.end()) for m in re.finditer(r"\S+\s*|\s+", text)]
        ends = sorted({e for _, e in offsets if 0 < e <= len(text)})
        if not ends or ends[-1] != len(text):
            ends.append(len(text))
        return ends


def _tokens_overlapping(enc, a: int, b: int, n_chars: int) -> int:
    """Tokens of `enc` overlapping chars [a, b): the rule of transformers' assistant mask (a token counts when
    token_end > a and token_start < b), computed from char_to_token instead of walking all offsets."""
    j = None  # first token ending after a = first token covering the first covered char >= a
    for c in range(a, min(b, n_chars)):
        j = enc.char_to_token(c)
        if j is not None:
            break
    if j is None:
        return 0
    k = len(enc)  # tokens starting before b
    for c in range(b, n_chars):
        t = enc.char_to_token(c)
        if t is not None:
            k = t + (1 if enc.token_to_chars(t)[0] < b else 0)
            break
    return max(k - j, 0)
