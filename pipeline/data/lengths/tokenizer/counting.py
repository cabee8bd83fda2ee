"""Exact token counts of SentencePiece-converted BPE tokenizers without running the whole tokenizer pipeline
(SentencePieceCounter, the fast path of HFHandle)."""
from __future__ import annotations

import json
import re

_SEG_RE = re.compile("\u2581+[^\u2581]*|[^\u2581]+")
# A run of more characters than this without a space is no prose (a blob, a hash run, an attack): its count may
# be off by one token per LONG_SEGMENT_CHARS, and memory stays that of one piece (SentencePieceCounter)
LONG_SEGMENT_CHARS = 1 << 16


class SentencePieceCounter:
    """Exact token counts for SentencePiece-converted BPE tokenizers (the Mistral/Llama 32k family), without
    running the whole tokenizer pipeline for every record.

    Such a tokenizer replaces spaces with "▁", prepends one "▁" to each text section (between special tokens),
    and runs BPE over the section as a single word. When no vocabulary piece has a "▁" after another character,
    no merge can cross the start of a "▁"-run, so the section's tokens are the concatenation of the BPE of its
    "▁*[^▁]+" segments. Segment counts are memoized (text is Zipfian: most segments repeat), and only the
    segments holding an assistant-span boundary are tokenized with offsets. The constructor refuses any
    tokenizer whose structure differs, and a self-check against the real tokenizer guards the rest."""

    SELF_CHECK = ("", " ", "  ", "Hello world", "  leading spaces", "trailing  ", "a\n\nb", "tab\there",
                  "Привет, мир! Как дела?", "Merhaba dünya, nasılsın? İĞÜŞÖÇ ığüşöç", "emoji 😀🚀 and 中文",
                  "[INST] hi [/INST]yo", "x</s>y  z", "</s>x<s>", "<s></s>", " </s> ", "\u2581word \u2581\u2581x",
                  "<unk>", "a<s>b</s>c<unk>d", "1234567890 3.14159", "ünïcödé\u00a0nbsp", "\u200bzero width")

    def __init__(self, backend):
        d = json.loads(backend.to_str())
        model = d.get("model") or {}
        pre, norm = d.get("pre_tokenizer"), d.get("normalizer")
        if (model.get("type") != "BPE" or model.get("dropout") or model.get("continuing_subword_prefix")
                or model.get("end_of_word_suffix") or model.get("ignore_merges")):
            raise ValueError("not a plain BPE model")
        if (norm is None and isinstance(pre, dict) and pre.get("type") == "Metaspace"
                and pre.get("replacement") == "\u2581" and pre.get("split") is False
                and pre.get("prepend_scheme") in ("always", "first")):
            self.mode = pre["prepend_scheme"]
        elif (pre is None and isinstance(norm, dict) and norm.get("type") == "Sequence"
              and norm.get("normalizers") == [{"type": "Prepend", "prepend": "\u2581"},
                                              {"type": "Replace", "pattern": {"String": " "},
                                               "content": "\u2581"}]):
            self.mode = "normalizer"
        else:
            raise ValueError("not a SentencePiece-style pre-tokenization")
        if any(re.search("[^\u2581]\u2581", piece) for piece in model.get("vocab", {})):
            raise ValueError("a vocabulary piece crosses a word start")
        added = d.get("added_tokens") or []
        if any(t.get("normalized") or t.get("lstrip") or t.get("rstrip") or t.get("single_word") for t in added):
            raise ValueError("added tokens with normalization or stripping")
        contents = sorted({t["content"] for t in added if t.get("content")}, key=len, reverse=True)
        self.special_re = re.compile("|".join(map(re.escape, contents))) if contents else None
        self.backend = backend
        self.model = backend.model
        self.post = len(backend.encode("", add_special_tokens=True)) - len(backend.encode("", add_special_tokens=False))
        self.cache: dict[str, int] = {}         # segment -> tokens
        self.wcache: dict[str, int] = {}        # piece -> tokens of "▁" + piece
        self.offsets_cache: dict[str, list[tuple[int, int]]] = {}
        for text in self.SELF_CHECK:
            for special in (True, False):
                if self.count(text, special) != len(backend.encode(text, add_special_tokens=special)):
                    raise ValueError(f"self-check failed on {text!r}")

    # -- sections and segments
    def _sections(self, text: str):
        pos = 0
        if self.special_re is not None:
            for m in self.special_re.finditer(text):
                if m.start() > pos:
                    yield pos, m.start(), False
                yield m.start(), m.end(), True
                pos = m.end()
        if pos < len(text):
            yield pos, len(text), False

    def _normalized(self, section: str, offset: int) -> tuple[str, int]:
        s = section.replace(" ", "\u2581")
        if self.mode == "normalizer":
            return "\u2581" + s, 1
        if (self.mode == "always" or offset == 0) and not s.startswith("\u2581"):
            return "\u2581" + s, 1
        return s, 0

    def _split(self, text: str) -> list[tuple[int, int, str | None, int]]:
        """[(start, end, None, 0) for a special token | (start, end, normalized text, 1 if "▁" was prepended)]."""
        out = []
        for start, end, special in self._sections(text):
            if special:
                out.append((start, end, None, 0))
            else:
                norm, d = self._normalized(text[start:end], start)
                out.append((start, end, norm, d))
        return out

    def _counts(self, segs: list[str]) -> list[int]:
        try:
            return list(map(self.cache.__getitem__, segs))
        except KeyError:
            return self._filled(self.cache, segs, "")

    def _filled(self, cache: dict, keys: list[str], prefix: str) -> list[int]:
        """Counts of the keys, the ones missing from the memo counted by the BPE model itself (a few
        microseconds each; a batched tokenizer call costs more per short segment)."""
        if len(cache) > 2_000_000:
            cache.clear()
        tokenize, get = self.model.tokenize, cache.get
        out = []
        for key in keys:
            n = get(key)
            if n is None:
                if len(key) > LONG_SEGMENT_CHARS:  # not memoized: such a run does not repeat
                    n = self._long_segment_count(prefix, key)
                else:
                    n = cache[key] = len(tokenize(prefix + key))
            out.append(n)
        return out

    def _long_segment_count(self, prefix: str, key: str) -> int:
        """A segment longer than LONG_SEGMENT_CHARS counted in pieces of that size: BPE over it whole holds
        one Python token object per token (640 MB for an 8M-character word, the largest record the caps
        allow), in pieces it holds one piece's. Within one token per cut of the whole-word count."""
        tokenize, step = self.model.tokenize, LONG_SEGMENT_CHARS
        return len(tokenize(prefix + key[:step])) + sum(len(tokenize(key[i:i + step]))
                                                         for i in range(step, len(key), step))

    def _section_count(self, norm: str) -> int:
        # Fast path: no "▁" run longer than one, so every segment but a leading one is "▁" + a piece of
        # norm.split("▁"); the pieces are the memo keys (no new strings, no regex).
        pieces = norm.split("\u2581")
        head = pieces[0]
        if pieces.count("") == (0 if head else 1):
            words = pieces[1:]
            wcache = self.wcache
            try:
                n = sum(map(wcache.__getitem__, words))
            except KeyError:
                n = sum(self._filled(wcache, words, "\u2581"))
            return n + (sum(self._counts([head])) if head else 0)
        return sum(self._counts(_SEG_RE.findall(norm)))

    def count_batch(self, texts: list[str], add_special_tokens: bool) -> list[int]:
        base = self.post if add_special_tokens else 0
        out = []
        for text in texts:
            n = base
            for _, _, norm, _ in self._split(text):
                n += 1 if norm is None else self._section_count(norm)
            out.append(n)
        return out

    def count(self, text: str, add_special_tokens: bool) -> int:
        return self.count_batch([text], add_special_tokens)[0]

    def count_spans_batch(self, texts: list[str], spans: list[list[tuple[int, int]]]) -> list[tuple[int, int]]:
        return [self.count_spans(t, sp) for t, sp in zip(texts, spans)]

    def count_spans(self, text: str, spans: list[tuple[int, int]]) -> tuple[int, int]:
        """(tokens, tokens overlapping any span): transformers' assistant-mask rule (a token counts when
        token_end > a and token_start < b, in characters of `text`), without special tokens added."""
        total = trainable = 0
        spans = [(a, b) for a, b in spans if b > a]
        for off, end, norm, d in self._split(text):
            touching = [(a, b) for a, b in spans if a < end and b > off]
            if norm is None:
                total += 1
                trainable += 1 if touching else 0
            elif not touching:
                total += self._section_count(norm)
            else:
                n, t = self._section_spans(norm, off, d, touching)
                total += n
                trainable += t
        return total, trainable

    @staticmethod
    def _segment_around(norm: str, p: int) -> tuple[int, int]:
        """[start, end) of the "▁*[^▁]+" segment holding normalized position p."""
        rep = "\u2581"
        q = p
        if norm[q] != rep:
            j = norm.rfind(rep, 0, q)
            q = 0 if j < 0 else j
        while q > 0 and norm[q - 1] == rep:
            q -= 1
        if q == 0 and norm[0] != rep:
            r = norm.find(rep)
        else:
            i = q
            while i < len(norm) and norm[i] == rep:
                i += 1
            r = norm.find(rep, i)
        return q, (len(norm) if r < 0 else r)

    def _section_spans(self, norm: str, off: int, d: int, spans: list[tuple[int, int]]) -> tuple[int, int]:
        """Tokens of one text section and those overlapping the spans. The section is cut at the span
        boundaries: whole segments on either side are counted from the memo; only a segment a boundary falls
        inside is tokenized with offsets."""
        n = len(norm)
        points = {0, n}
        straddled = set()
        for a, b in spans:
            for x in (a, b):
                p = x - off + d
                if 0 < p < n:
                    q, r = self._segment_around(norm, p)
                    if q == p:
                        points.add(p)
                    else:
                        straddled.add((q, r))
                        points.update((q, r))
        cuts = sorted(points)
        total = trainable = 0
        for x, y in zip(cuts, cuts[1:]):
            if (x, y) in straddled:
                seg = norm[x:y]
                total += self._counts([seg])[0]
                trainable += self._overlap(seg, x, off, d, spans)
                continue
            count = self._section_count(norm[x:y])
            total += count
            start, stop = off + max(x - d, 0), off + max(y - d, d)
            if any(a <= start and stop <= b for a, b in spans):
                trainable += count
        return total, trainable

    def _token_chars(self, seg: str) -> list[tuple[int, int]]:
        """Character ranges of the segment's tokens (a byte-fallback token covers its whole character)."""
        got = self.offsets_cache.get(seg)
        if got is None:
            from itertools import accumulate

            floor: list[int] = []             # byte position -> index of the character holding it
            for i, c in enumerate(seg):
                floor.extend([i] * len(c.encode("utf-8")))
            floor.append(len(seg))
            boundary = {0, *accumulate(len(c.encode("utf-8")) for c in seg)}
            got = [(floor[bs], floor[be] + (0 if be in boundary else 1))
                   for bs, be in (t.offsets for t in self.model.tokenize(seg))]
            if len(self.offsets_cache) > 200_000:
                self.offsets_cache.clear()
            self.offsets_cache[seg] = got
        return got

    def _overlap(self, seg: str, seg_start: int, off: int, d: int, spans: list[tuple[int, int]]) -> int:
        """Tokens of one segment overlapping any of the spans, in original characters."""
        n = 0
        for cs, ce in self._token_chars(seg):
            # a prepended "▁" is aligned with the section's first character, as the tokenizer's offsets do
            ts, te = off + max(seg_start + cs - d, 0), off + max(seg_start + ce - d, d)
            if any(te > a and ts < b for a, b in spans):
                n += 1
        return n
