"""The Presidio engine and the fast path over it.

`build_analyzer(languages)` is a plain Presidio AnalyzerEngine (no-op NLP engine: no model download) whose
registry holds this package's recognizers for tr, ru and en. `Detector` uses the same recognizer objects
the fast way:
  * one engine per process (module cache keyed by the languages),
  * language per record, recognizers per language,
  * per text, a TextContext shared by all recognizers (the digit runs and folded text are computed once),
  * a prefilter: each recognizer first asks a cheap question (a run of >= N digits? an '@'? a street word?
    a context word?) and is skipped when the text cannot hold its entity,
  * natasha sees only windows around capitalized Cyrillic words the gazetteer did not explain (a word it
    does not know only where a name may be: a gazetteer word or a name cue next to it, or two or three
    capitalized words), batched across all texts of a batch.
`resolve()` turns raw hits into the spans to anonymize (overlaps merged) and the residual candidates
(scored below the threshold, left in the text).
"""
from __future__ import annotations

import gc
import re
import threading
from collections import OrderedDict

from pipeline.core.env import set_defaults

set_defaults()  # before presidio: no network at import

from pipeline.data.pii.latin_names import LatinNameRecognizer, may_hold_lower_case_name  # noqa: E402
from pipeline.data.pii.lower_pairs import LowerPairRecognizer  # noqa: E402
from pipeline.data.pii.names import PersonRecognizer  # noqa: E402
from pipeline.data.pii.ner_person import NatashaPersonRecognizer  # noqa: E402
from pipeline.data.pii.recased import recased_hits  # noqa: E402
from pipeline.data.pii.recognizers import IDENTIFIER_RECOGNIZERS  # noqa: E402
from pipeline.data.pii.ru_names import RussianNameGazetteer, may_hold_lower_case_ru_name  # noqa: E402
from pipeline.data.pii.text import Hit, TextContext  # noqa: E402

RESIDUAL_FLOOR = 0.4  # below this a candidate is noise (a capitalized word, a 10-digit number with a 1/10 checksum)
# equal scores on overlapping spans: the more specific type names the merged span
# ("postgres://app:pw@host": SECRET, not EMAIL)
_PRIORITY = {"SECRET": 3, "IBAN": 2, "CREDIT_CARD": 2, "TCKN": 1, "INN": 1, "SNILS": 1, "OGRN": 1, "OGRNIP": 1}
# a text without any of these (a digit, "@", a capital, ":" or "=" of a secret, the bracket of "[at]") holds
# no candidate of the pattern recognizers
# (every capital a Latin name token may start with: "Əylisli geri aranacak" alone in a tool argument)
_QUICK = re.compile(r"[\d@A-ZА-ЯЁÇĞİÖŞÜÂÊÎÔÛÉÈÁÍÓÚÑƏÄËÏÀÌÒÙÃÕÅØÆŒ:=\[({<]")
# an e-mail address spelled out in lower case ("name at example dot org"): the words of its dot
_SPELLED_DOTS = (" dot ", " nokta ", " точка ")


def _spelled_email_hint(text: str) -> bool:
    return any(d in text for d in _SPELLED_DOTS) and (" at " in text or " собака " in text)


def may_hold_pii(text: str) -> bool:
    """The prefilter: False for a text in which no recognizer can find anything (the step skips such keys
    and short values before they become work for the detector)."""
    return len(text) >= 4 and (_QUICK.search(text) is not None or may_hold_lower_case_name(text)
                               or may_hold_lower_case_ru_name(text) or _spelled_email_hint(text))


# hits of recently scanned texts, per process: at most this many texts of at most this many characters
_CACHED_TEXTS = 4096
_CACHED_TEXT_CHARS = 8192


def make_recognizers(lang: str) -> list:
    """The recognizers of one language: every identifier recognizer, the Latin and Cyrillic name gazetteers
    (names cross scripts: a Russian name in a Turkish chat), and natasha for Russian text."""
    recs = [cls(lang) for cls in IDENTIFIER_RECOGNIZERS]
    recs += [LatinNameRecognizer(lang), RussianNameGazetteer(lang), LowerPairRecognizer(lang)]
    if lang == "ru":
        recs.append(NatashaPersonRecognizer(lang))
    return recs


def build_analyzer(languages=("tr", "ru", "en")):
    """A Presidio AnalyzerEngine with this package's recognizers only, on the no-op NLP engine."""
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NoOpNlpEngine

    languages = list(languages)
    nlp = NoOpNlpEngine(models=[{"lang_code": lang, "model_name": "no_op"} for lang in languages])
    registry = RecognizerRegistry(supported_languages=languages)
    for lang in languages:
        for rec in make_recognizers(lang):
            registry.add_recognizer(rec)
    return AnalyzerEngine(registry=registry, nlp_engine=nlp, supported_languages=languages)


def results_to_hits(results) -> list[Hit]:
    """Presidio RecognizerResults -> Hits."""
    return [Hit(r.start, r.end, r.entity_type, float(r.score),
                (r.recognition_metadata or {}).get("method", "pattern")) for r in results]


def resolve(hits: list[Hit], threshold: float, floor: float = RESIDUAL_FLOOR) -> tuple[list[Hit], list[Hit]]:
    """Spans to anonymize (score >= threshold; overlapping ones merged into one span whose type is that of
    a member covering the union, else of the best-scored member) and residual candidates (floor <= score <
    threshold, not overlapping a kept span)."""
    if len(hits) <= 1:  # most texts: nothing to merge or to weigh (a fast path, same result)
        return _resolve_single(hits, threshold, floor)
    above = sorted((h for h in hits if h.score >= threshold), key=lambda h: (h.start, -h.end))
    kept: list[Hit] = []
    cluster: list[Hit] = []
    cl_end = -1

    def flush():
        if not cluster:
            return
        s = min(h.start for h in cluster)
        e = max(h.end for h in cluster)
        covering = [h for h in cluster if h.start == s and h.end == e]
        best = max(covering or cluster, key=lambda h: (h.score, _PRIORITY.get(h.entity, 0), h.end - h.start))
        kept.append(Hit(s, e, best.entity, max(h.score for h in cluster), best.method))

    for h in above:
        if cluster and h.start < cl_end:
            cluster.append(h)
            cl_end = max(cl_end, h.end)
        else:
            flush()
            cluster = [h]
            cl_end = h.end
    flush()
    residual = []
    for h in sorted((h for h in hits if floor <= h.score < threshold), key=lambda h: -h.score):
        if any(h.start < k.end and k.start < h.end for k in kept):
            continue
        if any(h.start < r.end and r.start < h.end for r in residual):
            continue
        residual.append(h)
    return kept, residual


def _resolve_single(hits: list[Hit], threshold: float, floor: float) -> tuple[list[Hit], list[Hit]]:
    """resolve() of none or one hit."""
    if not hits or hits[0].score < floor:
        return [], []
    return ([hits[0]], []) if hits[0].score >= threshold else ([], [hits[0]])


class Detector:
    """The recognizers of one process, used the fast way (see module doc)."""

    def __init__(self, languages=("tr", "ru", "en")):
        self.languages = tuple(languages)
        self.analyzer = build_analyzer(self.languages)
        self.fast: dict[str, list] = {}
        self.digit_free: dict[str, list] = {}  # the fast recognizers to ask about a text without a digit
        self.natasha: dict[str, NatashaPersonRecognizer] = {}
        self.ru_gazetteer: dict[str, RussianNameGazetteer] = {}
        self.names: dict[str, list] = {}  # the name recognizers of the fast path: run again on text in capitals
        for lang in self.languages:
            recs = self.analyzer.registry.get_recognizers(language=lang, all_fields=True)
            self.fast[lang] = []
            for rec in recs:
                if isinstance(rec, NatashaPersonRecognizer):
                    self.natasha[lang] = rec
                else:
                    self.fast[lang].append(rec)
                    if isinstance(rec, RussianNameGazetteer):
                        self.ru_gazetteer[lang] = rec
            self.digit_free[lang] = [r for r in self.fast[lang] if not getattr(r, "NEEDS_A_DIGIT", False)]
            self.names[lang] = [r for r in self.fast[lang] if isinstance(r, PersonRecognizer)]
        self.texts_skipped = 0
        self.texts_cached = 0
        self._cache: OrderedDict[tuple[str, str], tuple[Hit, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def detect(self, items: list[tuple[str, str]], each=None) -> list[list[Hit]]:
        """Raw hits for each (text, language) item. A text seen before (the same system prompt or canned
        reply in every record) takes its hits from a per-process LRU instead of being scanned again. `each`
        (optional) is called with each text scanned and its TextContext, for the caller's passes over the same
        text (they read the views computed here)."""
        out: list[list[Hit]] = []
        jobs: list[tuple[int, int, str]] = []  # (item index, offset, window text) for natasha
        first: dict[tuple[str, str], int] = {}  # texts scanned in this call -> their item index
        repeats: list[tuple[int, int]] = []  # (item index, index of the same text scanned in this call)
        for idx, (text, lang) in enumerate(items):
            if not text or not may_hold_pii(text):
                self.texts_skipped += 1
                out.append([])
                continue
            if lang not in self.fast:
                lang = self.languages[0]
            key = (text, lang)
            if len(text) <= _CACHED_TEXT_CHARS:
                with self._lock:
                    cached = self._cache.get(key)
                    if cached is not None:
                        self._cache.move_to_end(key)
                if cached is not None:
                    self.texts_cached += 1
                    out.append(list(cached))
                    continue
                if key in first:
                    repeats.append((idx, first[key]))
                    self.texts_cached += 1
                    out.append([])
                    continue
                first[key] = idx
            ctx = TextContext(text, lang)
            hits: list[Hit] = []
            for rec in (self.fast if ctx.has_digit else self.digit_free)[lang]:
                if rec.triggered(ctx):
                    hits.extend(rec.find(ctx))
            if each is not None:
                each(text, ctx)
            hits.extend(recased_hits(text, lang, self.names[lang], hits))
            if lang in self.natasha:
                gaz = self.ru_gazetteer.get(lang)
                covered = [h for h in hits if h.entity == "PERSON"]
                if gaz is not None:
                    for s, e in gaz.natasha_windows(ctx, covered):
                        jobs.append((idx, s, text[s:e]))
            out.append(hits)
        if jobs:
            rec = next(iter(self.natasha.values()))
            found = rec.find_many([w for _, _, w in jobs])
            for (idx, off, _), hits in zip(jobs, found):
                out[idx].extend(Hit(h.start + off, h.end + off, h.entity, h.score, h.method) for h in hits)
        for idx, src in repeats:
            out[idx] = list(out[src])
        with self._lock:  # a thread-pool task runner shares this process's detector
            for key, idx in first.items():
                self._cache[key] = tuple(out[idx])
            while len(self._cache) > _CACHED_TEXTS:
                self._cache.popitem(last=False)
        return out

    def clear_cache(self) -> None:
        """Forget the hits of texts seen before (benchmarks: time a second pass over the same texts)."""
        with self._lock:
            self._cache.clear()

    def analyze_plain(self, text: str, lang: str) -> list[Hit]:
        """The baseline: one AnalyzerEngine.analyze call with every recognizer of the language."""
        return results_to_hits(self.analyzer.analyze(text=text, language=lang))


_DETECTORS: dict[tuple, Detector] = {}
_LOCK = threading.Lock()


def get_detector(languages) -> Detector:
    """One Detector per process and language set (built on first use)."""
    key = tuple(languages)
    det = _DETECTORS.get(key)
    if det is None:
        with _LOCK:
            det = _DETECTORS.get(key)
            if det is None:
                det = _DETECTORS[key] = Detector(key)
                # the engine lives as long as the process: out of the cyclic GC's sight, so that its full
                # collections do not walk the recognizers, gazetteers and models again and again
                gc.freeze()
    return det
