"""Signals beyond the name lists for Latin-script (Turkish, English) person names, and the spans where no name
is looked for.

* Rarity: a capitalized word that is rare as an ordinary word of the text's language (and of English, which
  Turkish chats mix in) is likely a proper noun; in a name position (two such words side by side, after a
  cue, before a calling verb) a person. The word frequencies come from wordfreq (its wheel ships the lists;
  nothing is downloaded): a word is common when its Zipf frequency is >= COMMON_ZIPF (about once per 300,000
  words), read once per process.
* Code: text in ``` fences, inline `code`, URLs and SQL / Python / shell lines is not searched for names;
  identifiers (e-mails, keys) in it still are.
"""
from __future__ import annotations

import re
import threading
from functools import lru_cache
from itertools import count

from pipeline.data.pii.text import fold

COMMON_ZIPF = 3.5
# a word this common is an everyday word even beside a rare one; below it a word may be a name that the corpus
# holds often (Hulusi 4.0, Müjdat 3.8 in Turkish; aradı 4.2, müşteri 4.5, customer 4.6 are above)
EVERYDAY_ZIPF = 4.3
_COMMON: dict[tuple[str, float], frozenset] = {}
_LOCK = threading.Lock()


def common_words(lang: str, zipf: float = COMMON_ZIPF) -> frozenset:
    """The folded words of `lang` with a Zipf frequency >= zipf (empty for a language wordfreq lacks)."""
    words = _COMMON.get((lang, zipf))
    if words is None:
        with _LOCK:
            if (lang, zipf) not in _COMMON:
                _load_common(lang)
            words = _COMMON[(lang, zipf)]
    return words


def _load_common(lang: str) -> None:
    import wordfreq

    # The list of frequency buckets (bucket i: frequency 10 ** (-i / 100), most frequent first; no word is in two),
    # down to the lowest floor: building the whole word -> frequency dict (700k words for Russian) cost more than
    # the rest of the load. English through wordfreq's cache, which zipf_frequency's dict is built from
    # (en_words, lower_pairs look words up there): one read serves both.
    floors = {zipf: 10 ** (zipf - 9) for zipf in (COMMON_ZIPF, EVERYDAY_ZIPF)}  # zipf = log10(frequency per 1e9)
    needed = next(i for i in count() if wordfreq.cB_to_freq(-i) < min(floors.values()))
    try:
        buckets = wordfreq.get_frequency_list(lang, "best") if lang == "en" else _frequent_buckets(lang, needed)
    except LookupError:
        buckets = []
    for zipf, floor in floors.items():
        words = set()
        for index, bucket in enumerate(buckets):
            if wordfreq.cB_to_freq(-index) < floor:
                break
            words.update(fold(w) for w in bucket if w.isalpha())
        _COMMON[(lang, zipf)] = frozenset(words)


def _frequent_buckets(lang: str, n: int) -> list[list[str]]:
    """The first `n` buckets of wordfreq's list of `lang`, uncached (the whole list is tens of MB and not needed
    after the load). The file is read only that far: it is a gzipped msgpack array [header, bucket 0, bucket 1,
    ...] (wordfreq.read_cBpack's format), and the rare words, most of it, come last (reading all of Russian's cost
    ~0.13 CPU-s, its first 550 buckets ~0.01). A language without a file of its own name, or a file not in that
    format, is read whole by wordfreq (which picks the nearest language)."""
    import gzip

    import msgpack
    import wordfreq

    path = wordfreq.available_languages("best").get(lang)
    if path is not None:
        with gzip.open(path, "rb") as infile:
            unpacker = msgpack.Unpacker(infile, raw=False)
            size = unpacker.read_array_header()
            if unpacker.unpack() == {"format": "cB", "version": 1}:
                return [unpacker.unpack() for _ in range(min(n, size - 1))]
    return wordfreq.get_frequency_list.__wrapped__(lang, "best")[:n]


@lru_cache(maxsize=16)
def _common_union(langs: frozenset, zipf: float) -> frozenset:
    """The common words of all `langs` (shared: the Turkish and the English detectors ask for the same union)."""
    return frozenset().union(*(common_words(x, zipf) for x in langs))


class Rarity:
    """rare(key): the folded word is common neither in the text's language nor in Turkish or English (chats mix
    them, and a short text's language guess is often wrong); everyday(key): it is very common in one of them."""

    __slots__ = ("common", "everyday_words")

    def __init__(self, lang: str):
        langs = frozenset({lang, "tr", "en"})
        self.common = _common_union(langs, COMMON_ZIPF)
        self.everyday_words = _common_union(langs, EVERYDAY_ZIPF)

    def rare(self, key: str) -> bool:
        return key not in self.common

    def everyday(self, key: str) -> bool:
        return key in self.everyday_words


# ------------------------------------------------------------------------------------------------ code

_FENCE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
_INLINE = re.compile(r"`[^`\n]+`")
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"'`]+", re.I)
# a line shaped like code: SQL, Python, shell; the test is on the line's start and a token that prose lacks
_CODE_LINE = re.compile(
    r"^[ \t]*(?:"
    r"(?:SELECT|INSERT\s+INTO|UPDATE|DELETE\s+FROM|CREATE\s+(?:TABLE|INDEX|VIEW)|ALTER\s+TABLE|WITH)\b"
    r"(?=.*\b(?:FROM|WHERE|SET|VALUES|TABLE|AS|JOIN)\b)"
    r"|(?:def|class)\s+\w+\s*[(:]|(?:from\s+[\w.]+\s+)?import\s+[\w.]+(?:\s+as\s+\w+)?\s*$"
    r"|print\(|@\w+(?:\.\w+)*(?:\(.*\))?\s*$|[\w.\[\]\"']+\s*=\s*[\w.]+\(.*\)\s*$"
    r"|\$\s+\S|(?:sudo|git|pip|npm|docker|kubectl|curl|wget|chmod|mkdir)\s+(?:-|\w+\s+-|install\b|clone\b"
    r"|commit\b|push\b|pull\b|run\b|build\b|checkout\b|exec\b|apply\b|get\b)"
    r")[^\n]*", re.M)
_MAY_HOLD_CODE = re.compile(r"[`$=@]|://|www\.|\b(?:SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|WITH|def|class|import|"
                            r"print|sudo|git|pip|npm|docker|kubectl|curl|wget|chmod|mkdir)\b")


def code_spans(text: str) -> list[tuple[int, int]]:
    """Sorted, non-overlapping spans of `text` that are code or URLs: no person is looked for there."""
    if _MAY_HOLD_CODE.search(text) is None:
        return []
    spans = [m.span() for rx in (_FENCE, _INLINE, _URL, _CODE_LINE) for m in rx.finditer(text)]
    spans.sort()
    out: list[tuple[int, int]] = []
    for s, e in spans:
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(e, out[-1][1]))
        else:
            out.append((s, e))
    return out


def outside(hits: list, spans: list[tuple[int, int]]) -> list:
    """`hits` less the PERSON hits that overlap one of `spans`."""
    if not spans:
        return hits
    return [h for h in hits if h.entity != "PERSON" or not any(s < h.end and h.start < e for s, e in spans)]
