"""Names typed in lower case without a cue: two adjacent lower-case words that are a first name and a surname
("orhan demirel tekrar yazdı", "elizabeth williams", "жулдыз сыздыкова звонила").

A single lower-case word says nothing (most first names are words somewhere), but a pair whose one word is a
first name the lists or the dictionary hold and whose other word is no ordinary word is a person far more often
than not. One of the pair must be:

* a first name: in the Latin lists (Faker's or the names-dataset extension's first names) and no word of the
  ambiguous lists, or, in Cyrillic, a first name in pymorphy3's dictionary (its Name tag holds in lower case);
* or a surname by its ending (-ov/-ova, -oğlu, -zade; -ов/-ова/-ин/-ский, -ович/-овна), the dictionary not
  knowing it as another word ("готова", "снова" are words);

and the other a name word too, or rare as a word (wordfreq: common in none of Turkish, English, Russian), and
neither a stop word nor an everyday word ("mehmet bey", "anna said", "ahmet yarın" stay words). A Russian
patronymic or a second surname-shaped word after the pair joins it ("бондарев ильназ фаргатович").

Where the place says a name stands (a calling verb after the pair, "serhat çiçek dün aradı", "коба евтеев
жалуется"; an introduction before it; or a labelled value, "ad soyad: metehan kaynak" ending the line), one
word need only be a name word or rare and the other any word but a stop word or a verb: many surnames are
everyday words ("Çiçek", "Kaynak", "Hall").
"""
from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache

from pipeline.data.pii import ru_morph
from pipeline.data.pii.later import inflected_common
from pipeline.data.pii.lower_cue import ends_value
from pipeline.data.pii.name_context import CUES_AFTER, VERBS_AFTER, strong_before
from pipeline.data.pii.name_signals import EVERYDAY_ZIPF, common_words
from pipeline.data.pii.names import (
    LATIN_AMBIGUOUS,
    LATIN_FIRST,
    LATIN_LAST,
    LATIN_LOWER,
    STOP,
    STOP_SURNAMES,
    SURNAME_ENDINGS,
    TURKISH_WORDS,
    PersonRecognizer,
)
from pipeline.data.pii.ru_names import RU_AMBIGUOUS, RU_FIRST, RU_STOP
from pipeline.data.pii.text import Hit, TextContext, WordTest, fold, load_data

PAIR_SCORE = 0.6  # above the default threshold: a pair of this shape is a name far more often than not

# English Zipf frequencies below which a listed first name, and an unlisted word, may be a name's in lower case
_EN_FIRST_ZIPF = 3.0
_EN_NAME_ZIPF = 3.5  # a listed name beside a first name ("imran hussain" 3.3; "golden" 4.7 is no surname here)
_EN_RARE_ZIPF = 2.0
_EXT = load_data("names_ext.json")
_AMBIGUOUS = LATIN_AMBIGUOUS | TURKISH_WORDS
LATIN_FIRST_ANY = (LATIN_FIRST | frozenset(_EXT["latin_first"])) - _AMBIGUOUS - STOP
LATIN_NAME_ANY = LATIN_FIRST_ANY | LATIN_LAST | frozenset(_EXT["latin_last"])
_RU_FIRST = frozenset(n.replace("ё", "е") for n in RU_FIRST) - RU_AMBIGUOUS
# the name words a lower-case pair holds one of (what TextContext.words must hold for the pass to run, and where
# it looks): not the listed names that are common English words ("white", "long"), which anchor no pair alone
_NAME_WORDS = frozenset(w for n in (LATIN_NAME_ANY - common_words("en")) | (LATIN_FIRST - _AMBIGUOUS) | _RU_FIRST
                        for w in (n, n.replace("i", "ı")) if len(w) >= 3)
_LATIN_SURNAME_END = tuple(e for e in SURNAME_ENDINGS if len(e) >= 2)
_RU_SURNAME_END = re.compile(r"(?:[оеё]в|[иы]н)(?:а|у|ым|ой|е)?$|(?:ск|цк)(?:ий|ая|ого|ой|ому|ую|им)$"
                             r"|(?:ович|евич|овна|евна|ична|инична)(?:а|у|ем|е|ой|ы)?$|енко$")
_WORD = re.compile(rf"(?<![\w'’@./\\-])(?:[{LATIN_LOWER}]{{3,}}|[а-яё]{{3,}})(?![\w@/\\-])")
_CYR = re.compile("[а-яё]")
_CYR_LETTERS = frozenset("абвгдеёжзийклмнопрстуфхцчшщъыьэюя")
_INTEREST = LATIN_NAME_ANY | _RU_FIRST
# the endings of a surname-shaped word in any case form (the windows' cheap test; _surname_shaped decides)
_SURNAME_ENDS = _LATIN_SURNAME_END + tuple(
    stem + case for stems, cases in (
        (("ов", "ев", "ёв", "ин", "ын"), ("", "а", "у", "ым", "ой", "е", "ою")),
        (("ск", "цк"), ("ий", "ая", "ого", "ой", "ому", "ую", "им")),
        (("ович", "евич", "овн", "евн", "ичн"), ("", "а", "у", "ем", "е", "ой", "ы")),
        (("енко",), ("",))) for stem in stems for case in cases)
_SURNAME_END_PAIRS = frozenset(e[-2:] for e in _SURNAME_ENDS)
_CYR_LOWER_PAIR = re.compile(r"[а-яё]{3,} [а-яё]{3,}")
_LABELLED_PAIR = re.compile(rf"[:—–][ \u00a0]*([{LATIN_LOWER}]{{3,}}) ([{LATIN_LOWER}]{{3,}})(?=[ \u00a0]*(?:[\n,.;]|$))")
_NOT_NAME = frozenset("the and bir ile için gibi ben sen biz siz это как что".split())
_NOT_LOOSE = (STOP - STOP_SURNAMES) | _NOT_NAME | RU_STOP
# a Russian finite verb or the word before one ("снова написал", "звонила вчера"): the subject stands before it
_RU_VERB = re.compile(r"[ \u00a0]+(?:([а-яё]+)[ \u00a0]+)?([а-яё]+(?:л[аио]?|л[аи]сь|лся|ет|ит|ут|ют|ат|ят|ется|ится))"
                      r"(?![\w-])")
_ONE_WORD = re.compile(r"[ \u00a0]+[^\W\d_]{2,}(?=[ \u00a0])")
_LABEL_END = ":—–"


# the tests of one word below are pure and asked for every pair the word is in (a third of the stage's CPU
# went to asking them again)
_per_word = lru_cache(maxsize=1 << 16)


@_per_word
def _common(key: str) -> bool:
    return any(key in common_words(lang) for lang in ("tr", "en", "ru"))


@_per_word
def _everyday(key: str) -> bool:
    return any(key in common_words(lang, EVERYDAY_ZIPF) for lang in ("tr", "en", "ru"))


@lru_cache(maxsize=65536)
def _en_zipf(key: str) -> float:
    """The word's Zipf frequency in English (wordfreq): English prose in lower case is full of pairs of a word
    that is also a first name and a rarer word ("basil pesto", "soothing melody"); a first name typed in
    lower case is rarer as an English word than that (Orhan 2.3, Melika 1.1; Basil 3.7, Melody 3.8)."""
    import wordfreq

    return wordfreq.zipf_frequency(key, "en")


@_per_word
def _first_name(key: str) -> bool:
    if _CYR.search(key):
        return key.replace("ё", "е") in _RU_FIRST or (ru_morph.reading(key).kind == "first"
                                                     and key.replace("ё", "е") not in RU_AMBIGUOUS)
    return key in LATIN_FIRST_ANY and _en_zipf(key) < _EN_FIRST_ZIPF


@_per_word
def _surname_shaped(key: str) -> bool:
    if len(key) < 5:
        return False
    if _CYR.search(key):
        # the dictionary reads "айдарханов" as a possessive of a word it knows: a known word only when common too
        return _RU_SURNAME_END.search(key) is not None and not (ru_morph.ordinary_word(key) and _common(key)) \
            and not ru_morph.not_a_name(key)
    return key.endswith(_LATIN_SURNAME_END) and not _common(key)


@_per_word
def _name_word(key: str) -> bool:
    """A listed or dictionary name, or a word rare in all three languages (no stop or everyday word)."""
    if key in STOP or key in _NOT_NAME or key in RU_STOP:
        return False
    if _CYR.search(key):
        r = ru_morph.reading(key)
        if r.kind is not None:
            return key.replace("ё", "е") not in RU_AMBIGUOUS
        return not r.other and not (r.known and r.name == 0.0) and not _common(key)
    if key in _AMBIGUOUS or _common(key) and key not in LATIN_NAME_ANY:
        return False
    if key in LATIN_NAME_ANY:
        return _en_zipf(key) < _EN_NAME_ZIPF
    return _en_zipf(key) < _EN_RARE_ZIPF and not inflected_common(key)


@_per_word
def _anchor(key: str) -> bool:
    return _first_name(key) or _surname_shaped(key)


@_per_word
def _loose(key: str) -> bool:
    """Any word but a stop word or, in Cyrillic, a verb, adverb, pronoun and the like: beside a name word in a
    place that says a name stands there."""
    if key in _NOT_LOOSE:
        return False
    if _CYR.search(key):
        return not ru_morph.reading(key).other
    # an everyday English word is no surname unless listed ("tell john i said hi"); Turkish surnames often are
    # everyday words ("Çiçek", "Kaynak")
    return key not in common_words("en", EVERYDAY_ZIPF) or key in LATIN_NAME_ANY


def _pair(k1: str, k2: str) -> bool:
    if k1 in LATIN_FIRST and k2 in LATIN_LAST and k1 not in _AMBIGUOUS and k2 not in STOP:
        return True  # "elizabeth williams": a first name and a surname of Faker's curated lists, in that order
    return (_anchor(k1) and _name_word(k2)) or (_anchor(k2) and _name_word(k1))


@_per_word
def _strong(key: str) -> bool:
    """A first name, a surname by its ending, a listed name, or a Cyrillic word the dictionary lacks and that is
    rare (a rare Latin word is as often an inflected Turkish verb: "bekleyebileceğini")."""
    if _anchor(key):
        return True
    if _CYR.search(key):
        r = ru_morph.reading(key)
        return (r.kind is not None and key.replace("ё", "е") not in RU_AMBIGUOUS) \
            or (not r.known and not _common(key) and key not in RU_STOP)
    return key in LATIN_NAME_ANY and key not in _AMBIGUOUS and key not in STOP


_MAY, _LEAD = 1, 2


@_per_word
def _roles(key: str) -> int:
    """_MAY: a word a pair may hold (listed, surname-ended or Cyrillic); _LEAD: a word a pair may turn on (the
    first name of _pair's first test, or _strong, which _anchor implies). A pair whose words lack either role
    is none: a flag per word saves asking the tests of every pair of a long text."""
    may = key in _INTEREST or key.endswith(_LATIN_SURNAME_END) or key[0] in _CYR_LETTERS
    lead = (key in LATIN_FIRST and key not in _AMBIGUOUS) or _strong(key)
    return (_MAY if may else 0) | (_LEAD if lead else 0)


def _cued_pair(k1: str, k2: str) -> bool:
    return (_strong(k1) and _loose(k2)) or (_strong(k2) and _loose(k1))


def _cued(ctx: TextContext, s: int, e: int) -> bool:
    """The place says a name stands at s..e: a calling verb or name cue after it (one word may come between),
    an introduction before it, or a label and a colon or dash before it with the value ending at e."""
    norm, text = ctx.norm, ctx.text
    for at in (e, _skip_one_word(norm, e)):
        if at >= 0 and (VERBS_AFTER.match(norm, at) or CUES_AFTER.match(norm, at)):
            return True
    m = _RU_VERB.match(text, e)
    if m is not None and ru_morph.reading(m.group(2)).other and (m.group(1) is None or _common(m.group(1))):
        return True
    if strong_before(ctx, s):
        return True
    k = s - 1
    while k >= 0 and text[k] in " \u00a0":
        k -= 1
    return k > 0 and text[k] in _LABEL_END and ends_value(text, e)


def _skip_one_word(norm: str, e: int) -> int:
    """Past one everyday word ("dün", "tekrar", "again"; no name word) after e, or -1."""
    m = _ONE_WORD.match(norm, e)
    return m.end() if m is not None and _common(m.group().strip()) and not _name_word(m.group().strip()) else -1


def lower_pairs(ctx: TextContext) -> list[Hit]:
    """PERSON hits for pairs (and a third word) of adjacent lower-case name words (see the module doc)."""
    text = ctx.text
    if not _may_lead(ctx):
        return _labelled_rare_pairs(ctx)  # no word turns a pair on: the pass below would find none
    # only around the words a pair may hold: a pass over every word of a long text in Python costs more than
    # the rest of the recognizers together
    words = _role_words(ctx)
    # the only places a pair may start: most words of a long text are in none
    starts = [i for i in range(len(words) - 1) if words[i][3] | words[i + 1][3] == _MAY | _LEAD]
    out: list[Hit] = _labelled_rare_pairs(ctx)
    i = 0
    while i + 1 < len(words):
        found = _found(ctx, text, words, i)
        if not found:
            at = bisect_right(starts, i)
            i = starts[at] if at < len(starts) else len(words)
            continue
        j = i + 2
        nxt = _found(ctx, text, words, i + 1) if j < len(words) else 0
        if found == _CUED and nxt:
            i += 1  # "az önce emre çelik ile konuştum": the pair nearest the cue is the name
            continue
        if found == nxt == _PAIR:
            j += 1  # three name words ("oltaç benziroğlu tekrar aradı": "tekrar" is cued only)
        s1, end = words[i][0], words[j - 1][1]
        if j < len(words) and words[j][0] == end + 1 and text[end] == " " and _third_word(words[j][2]):
            end = words[j][1]
            j += 1
        if not any(h.start < end and s1 < h.end for h in out):
            out.append(Hit(s1, end, "PERSON", PAIR_SCORE, "lower_pair"))
        i = j
    return out


def _may_lead(ctx: TextContext) -> bool:
    """A word of the text may turn a pair on (_LEAD): every word _role_words reads is one of ctx.words, folded.
    Most Russian texts hold none, and their every word would be read otherwise."""
    return bool(_LEADING.select(ctx.words))


@_per_word
def _leads(word: str) -> bool:
    return len(word) >= 3 and word.isalpha() and bool(_roles(fold(word)) & _LEAD)


_LEADING = WordTest(_leads)


def _role_words(ctx: TextContext) -> list[tuple[int, int, str, int]]:
    """(start, end, folded word, _roles) of the windows' words (one without a role still pairs with a word that
    has both: "invoice cancel")."""
    text, norm = ctx.text, ctx.norm
    out = []
    for ws, we in _windows(ctx):
        for m in _WORD.finditer(text, ws, we):
            s, e = m.span()
            k = norm[s:e]
            out.append((s, e, k, _roles(k)))
    return out


def _labelled_rare_pairs(ctx: TextContext) -> list[Hit]:
    """A labelled value of two words rare as words, neither listed ("talep sahibi: elmeddin abbasli")."""
    out = []
    for m in _LABELLED_PAIR.finditer(ctx.text):
        k1, k2 = ctx.norm[m.start(1):m.end(1)], ctx.norm[m.start(2):m.end(2)]
        if _name_word(k1) and _name_word(k2):
            out.append(Hit(m.start(1), m.end(2), "PERSON", PAIR_SCORE, "lower_pair"))
    return out


_CUED, _PAIR = 1, 2
_REACH = 48  # characters around a candidate word that its pair and a third word lie in


def _windows(ctx: TextContext) -> list[tuple[int, int]]:
    """Merged stretches around each listed name or surname-shaped word, cut at spaces."""
    text = ctx.text
    at: list[int] = []
    for w in (ctx.words & _NAME_WORDS) | _shaped_words(ctx):
        k, n = text.find(w), len(w)
        while k >= 0:
            if (k == 0 or not text[k - 1].isalpha()) and (k + n >= len(text) or not text[k + n].isalpha()):
                at.append(k)
            k = text.find(w, k + n)
    if _CYR_LOWER_PAIR.search(text) is not None:
        return [(0, len(text))]  # Russian text: a name the dictionary alone knows may be anywhere (cached parses)
    out: list[tuple[int, int]] = []
    for k in sorted(at):
        s = text.rfind(" ", 0, max(0, k - _REACH)) + 1
        e = text.find(" ", k + _REACH)
        e = len(text) if e < 0 else e
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(e, out[-1][1]))
        else:
            out.append((s, e))
    return out



def _found(ctx: TextContext, text: str, words: list, i: int) -> int:
    """words[i] and words[i + 1], adjacent and of one script: a pair of name words (_PAIR), a cued pair (_CUED),
    or none (0)."""
    s1, e1, k1, roles1 = words[i]
    s2, e2, k2, roles2 = words[i + 1]
    if roles1 | roles2 != _MAY | _LEAD or s2 != e1 + 1 or text[e1] != " " or (k1[0] in _CYR_LETTERS) != (k2[0] in _CYR_LETTERS):
        return 0
    if _pair(k1, k2):
        return _PAIR
    return _CUED if _cued_pair(k1, k2) and _cued(ctx, s1, e2) else 0


def _third_word(key: str) -> bool:
    """A patronymic or surname after a Russian pair ("ильназ фаргатович", "мариям жангировна")."""
    return bool(_CYR.search(key)) and (ru_morph.reading(key).kind in ("middle", "last") or _surname_shaped(key))


_SURNAME_SHAPED = WordTest(lambda w: w[-2:] in _SURNAME_END_PAIRS and len(w) >= 5 and w.endswith(_SURNAME_ENDS))


# a label's colon or dash before a lower-case word ("фио: гасырбек молдахмет"): a value that may be a name
_LABELLED = re.compile(rf"[:—–][ \u00a0]*[{LATIN_LOWER}а-яё]")


def _shaped_words(ctx: TextContext) -> frozenset:
    """The text's words with a surname's ending, computed once per text."""
    # the last two letters first: one set test rules out most words before endswith tries every ending
    return ctx.memo("surname_shaped", lambda: _SURNAME_SHAPED.select(ctx.words))


def may_hold_lower_pair(ctx: TextContext) -> bool:
    """A cheap test: a listed name or a surname-shaped word among the text's words, or a label's colon before a
    lower-case word (a Russian name the dictionary alone holds is found beside one of these, or after a label)."""
    text = ctx.text
    return not ctx.words.isdisjoint(_NAME_WORDS) \
        or (":" in text or "—" in text or "–" in text) and _LABELLED.search(text) is not None \
        or bool(_shaped_words(ctx))


class LowerPairRecognizer(PersonRecognizer):
    """PERSON from lower-case pairs of name words (lower_pairs)."""

    def triggered(self, ctx: TextContext) -> bool:
        return may_hold_lower_pair(ctx)

    def find(self, ctx: TextContext) -> list[Hit]:
        return lower_pairs(ctx)
