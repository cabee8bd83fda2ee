"""Turkish spelling that folding hides: a stem common only once ı and i are one letter, and a person's verb.

later.inflected_common reads folded words (ı as i), so a name that folds to a common stem and a suffix looks
like an inflected word: "Raziye" folds to "razi" + "ye", and "razı" (content) is common; "IKLİMA" lower-cased
the Turkish way is "ıklima", which folds to "iklim" (climate) + "a". In its own spelling the stem is no word
("razi" Zipf 3.35 against "razı" 4.53, "ıklim" 0), or the suffix breaks vowel harmony ("Nailya": the dative of
"nail" is "naile"): the name is no inflected form. inflected_in_spelling asks wordfreq about the stem as written.

person_verb: the clause after a subject holds a verb only a person does (writes, calls, asks, hands over, wants),
the evidence that lets two capitalized words frequent in the corpus ("Hayri Zeybek", "Serhat Çiçek") be a name
where a pair of rare words needs none ("Xiaomi Redmi şarj olmuyor" has no such verb).
"""
from __future__ import annotations

import re

from pipeline.data.pii.later import inflected_common
from pipeline.data.pii.name_signals import COMMON_ZIPF, common_words
from pipeline.data.pii.text import fold

_TR_LOWER = str.maketrans({"İ": "i", "I": "ı"})
_CACHE: dict[str, bool] = {}
TURKISH_LETTERS = re.compile("[ığşİĞŞ]")
_FRONT, _BACK = frozenset("eiöü"), frozenset("aıou")
_VOWELS = _FRONT | _BACK

# the stems of verbs whose subject is a person (folded: ı as i), and the nouns of the compound verbs ("teslim
# etti", "iptal etmek istiyor", "şikayet etti") that say the same
_PERSON_VERB = re.compile(
    r"(?:yaz|ar(?:a[dmnyr]|iyor)|iste|söyl|sor[dmu]|ded|gel[dimi]|uğra|konuş|bekle|öde[dmy]|bildir|onayla|teslim|iptal|talep"
    r"|şikayet|şikâyet|rica|itiraz|kabul|ilet|gönder|ulaş|dön)")

_THING_VERB = re.compile(r"(?:gel|ilet|gönder|ulaş|dön)")
# a passive finite verb, folded: -(ı)l- or -(ı)n- before the tense ("edildi", "gönderilmiş", "arandı")
_PASSIVE = re.compile(r"(?:[iuü]l|[aeiuü]n)(?:d[iuü]|m[iuü]ş|[iuü]yor|[ae]c[ae]k)(?:l[ae]r)?$")


def inflected_in_spelling(word: str, spelled: bool = False) -> bool:
    """The word (as written: capitals lower-cased the Turkish way) is a common Turkish stem and a chain of
    suffixes with the stem common in its own spelling, not only folded (later.inflected_common). A word typed
    in lower case is read folded only unless `spelled` (its text holds ı, ğ or ş: typed with Turkish letters);
    chat typed without them writes "kapiya" for "kapıya"."""
    if not spelled and not word[:1].isupper():
        return inflected_common(fold(word))
    low = word.translate(_TR_LOWER).lower()
    hit = _CACHE.get(low)
    if hit is None:
        key = fold(low)
        hit = inflected_common(key) and _stem_common(low, key)
        if len(_CACHE) < 1 << 16:
            _CACHE[low] = hit
    return hit


def _stem_common(low: str, key: str) -> bool:
    import wordfreq

    common = common_words("tr")
    return any(key[:k] in common and _harmonic(low[:k], low[k:])
               and wordfreq.zipf_frequency(low[:k], "tr") >= COMMON_ZIPF for k in range(max(4, len(key) - 6), len(key)))


def _harmonic(stem: str, suffix: str) -> bool:
    """A suffix after a stem whose last vowel is front (e i ö ü) has no back vowel ("nail" + "ya" is no
    inflection: the dative is "naile"); -yor keeps its o everywhere. The other way round loanwords break the
    rule ("saate", "kontrole"), so a back stem takes any suffix."""
    last = next((c for c in reversed(stem) if c in _VOWELS), "")
    return last not in _FRONT or not any(c in _BACK for c in suffix.replace("yor", ""))


def person_verb(words: list[str], strict: bool = False) -> bool:
    """One of the folded words of a clause is a form of a verb whose subject is a person. `strict`: not one a
    thing does too (comes, is sent, reaches, returns: "yeni modem geldi"), and the clause's last verb is no
    passive ("teslim edildi": the subject was handed over)."""
    if strict:
        return _PASSIVE.search(words[-1]) is None and any(_PERSON_VERB.match(w) and not _THING_VERB.match(w)
                                                          for w in words)
    return any(_PERSON_VERB.match(w) for w in words)
