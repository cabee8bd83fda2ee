"""Two capitalized words as the doer of a person's verb in Turkish: "Halime Sarıkaya dün aradı", "Sabah Yahya
Kütük tekrar yazdı", "Kuryenin getirdiği paketi Cemile Ceyhan teslim almış".

subject_pairs (tr_lower_subject) reads a capitalized pair by how rare its words are, so a name of words the
corpus holds often, or of words that look like something else, is missed: "Halime" folds to "halim" + "e",
"Yahya" is frequent in English, "Ceyhan" is a river and a city, "Kütük" ends like a participle. Turkish
capitalizes a word inside a sentence only for a proper noun, and places and firms do not hand over a parcel or
call back: two capitalized words right before the rest of their clause in lower case, ending in a verb only a
person does (tr_spelling.person_verb, strict: not a thing's "geldi", not a passive), are a person's name, where
nothing but one opening word or a lower-case object stands before them in the sentence. Not when a word is a
stop, title, role, cue, office, month or weekday word, a greeting or reply word, a brand or a firm's generic
head ("Aras Kargo"), an everyday noun in a
case or possessive ending ("Paketi", "Hizmetleri", "Bankası": a compound's head or an object), nor when both
words are places, both everyday words ("Türk Telekom") or both English words ("Google Play").
"""
from __future__ import annotations

import re

from pipeline.data.pii.later import inflected_common
from pipeline.data.pii.name_context import CONTEXT_WORDS, ROLES, TITLES, TITLES_AFTER
from pipeline.data.pii.name_signals import COMMON_ZIPF, EVERYDAY_ZIPF, common_words
from pipeline.data.pii.names import LATIN_FIRST, LATIN_LOWER, LATIN_UPPER, NEVER, OFFICES, STOP
from pipeline.data.pii.not_person import PLACES, THING_NOUNS
from pipeline.data.pii.text import Hit, fold
from pipeline.data.pii.tr_later import clause_of_subject, marks_in
from pipeline.data.pii.tr_lower_subject import SUBJECT_SCORE, VERB_SHAPE
from pipeline.data.pii.tr_partner import CLAUSE_OPENERS
from pipeline.data.pii.tr_spelling import inflected_in_spelling, person_verb
from pipeline.data.pii.tr_vocative import REPLY_WORDS

# two title-case words, one space apart, then a space: the rest of the clause follows (clause_of_subject)
_PAIR = re.compile(rf"(?<![\w'’.-])([{LATIN_UPPER}][{LATIN_LOWER}]{{2,}}) ([{LATIN_UPPER}][{LATIN_LOWER}]{{2,}})(?= )")
_SENTENCE_END = ".!?:;\n"
# a sentence in capitals (no lower-case letter up to its end) and its words, lower-cased
# (matched where a sentence starts, _caps_sentences: "(?:^|(?<=[.!?:;\n]))" before it made the engine try every
# position)
_CAPS_SENTENCE = re.compile(rf"[ \t]*([{LATIN_UPPER}][^.!?:;\n{LATIN_LOWER}]*[.!?\n]?)")
_CAPS_WORD = re.compile(rf"[{LATIN_LOWER}]+")
_TR_LOWER = str.maketrans({"İ": "i", "I": "ı"})
_CALENDAR = frozenset(fold(w) for w in (
    "ocak şubat mart nisan mayıs haziran temmuz ağustos eylül ekim kasım aralık "
    "pazartesi salı çarşamba perşembe cuma cumartesi pazar").split())
_GREETINGS = frozenset(fold(w) for w in "merhaba selam günaydın iyi sayın değerli sevgili canım".split())
_BRANDS = frozenset(fold(w) for b in CONTEXT_WORDS["name_brands"] for w in b.split())
# the generic heads of Turkish firm names ("Aras Kargo", "Türk Telekom", "Anadolu Sigorta")
_FIRM_WORDS = frozenset(fold(w) for w in (
    "kargo market sigorta holding telekom telekomünikasyon bank banka turizm lojistik eczane otomotiv elektrik "
    "enerji yapı inşaat gıda tekstil teknoloji bilişim yazılım mobilya grup medya servis teknik koleji "
    "hastane taksi nakliyat emlak oto").split())
_NOT_NAME = STOP | NEVER | TITLES | TITLES_AFTER | OFFICES | THING_NOUNS | ROLES | CLAUSE_OPENERS | _CALENDAR \
    | _GREETINGS | _BRANDS | _FIRM_WORDS | frozenset(fold(w) for w in REPLY_WORDS)
# the case and possessive endings a noun takes as an object or a compound's head (folded: ı is i)
_CASE_ENDING = re.compile(r"(?:[yns]?[iuü]|[yn]?[ae]|n[iuü]n|l[ae]r[iı]|s[iuü]n[iuü]|l[ae]r[iı]n[iı])$")
# converbs and non-past verb forms (folded) that open a sentence before its subject ("Gelince", "Arayıp"); a past
# tense there is rare, and many names end like one ("Erdi", "Bartu", "Fahrettin")
_CONVERB = re.compile(r"(?:[iuü]p|[ae]r[ae]k|[iuü]nc[ae]|m[ae]k|m[ae]l[iı]|yor|[ae]c[ae]k)$")
_EN_WORD_ZIPF = 3.0  # both words this frequent in English: an English brand or phrase ("Google Play")
_ZIPF: dict[tuple[str, str], float] = {}


def _zipf(word: str, lang: str) -> float:
    z = _ZIPF.get((word, lang))
    if z is None:
        import wordfreq

        z = wordfreq.zipf_frequency(word, lang)
        if len(_ZIPF) < 1 << 16:
            _ZIPF[(word, lang)] = z
    return z


def _low(word: str) -> str:
    return word.replace("İ", "i").replace("I", "ı").lower()


def _everyday(low: str) -> bool:
    return _zipf(low, "tr") >= EVERYDAY_ZIPF or _zipf(fold(low), "en") >= EVERYDAY_ZIPF


def _inflected_noun(low: str) -> bool:
    """An everyday Turkish noun in its own spelling and a case or possessive ending ("paketi", "kargoyu",
    "hizmetleri"); the stem must be everyday and no listed first name, so "Evren" ("evre" + "n") and "Cemile"
    (a female form of "Cemil") are no such words."""
    key = fold(low)
    if not inflected_common(key):
        return False
    return any(_CASE_ENDING.fullmatch(key, k) is not None and _zipf(low[:k], "tr") >= EVERYDAY_ZIPF
               and key[:k] not in LATIN_FIRST for k in range(max(3, len(key) - 6), len(key)))


def _name_word(low: str) -> bool:
    key = fold(low)
    return len(key) >= 3 and key not in _NOT_NAME and not _inflected_noun(low)


def _opening(text: str, start: int) -> str | None:
    """The sentence's words before `start`, or None where a word after the first is capitalized or no plain word
    ("Sabah", "Kuryenin getirdiği paketi" pass; "Dün Ali ile Veli", "Ankara'da" do not)."""
    i = start
    while i > 0 and text[i - 1] not in _SENTENCE_END:
        i -= 1
    words = text[i:start].split()
    if any(not w.isalpha() for w in words) or any(not w.islower() for w in words[1:]):
        return None
    return " ".join(words)


def _a_name_pair(w1: str, w2: str, first_in_sentence: bool) -> bool:
    l1, l2 = _low(w1), _low(w2)
    if not (_name_word(l1) and _name_word(l2)):
        return False
    if first_in_sentence and _CONVERB.search(fold(l1)) and _zipf(l1, "tr") >= COMMON_ZIPF:
        return False  # a converb opening the sentence ("Gelince Ali ..."), not a rare name ("Bartu")
    k1, k2 = fold(l1), fold(l2)
    if (k1 in PLACES and k2 in PLACES) or (_everyday(l1) and _everyday(l2)):
        return False
    return _zipf(k1, "en") < _EN_WORD_ZIPF or _zipf(k2, "en") < _EN_WORD_ZIPF


def _shouted_word(low: str) -> bool:
    """A lower-cased word from capitals that may be a name's: no common word in an inflection ("kuryenin") or a
    verb form common as a word ("getirdiği"); a rare word with a verb's ending is a name ("Fahrettin": -tin)."""
    key = fold(low)
    return "w" not in key and not inflected_in_spelling(low, True) \
        and not (VERB_SHAPE.search(key) and _zipf(low, "tr") >= COMMON_ZIPF)


def title_subject_pairs(ctx) -> list[Hit]:
    """PERSON hits for capitalized pairs that do a person's deed in a Turkish sentence (see the module doc)."""
    text = ctx.text
    out: list[Hit] = []
    m = _PAIR.search(text)
    while m is not None:
        nxt = _PAIR.search(text, m.start(2))  # pairs overlap: "Sabah Öykü Saraç" holds two
        opening = _opening(text, m.start())
        if opening is not None and _a_name_pair(m.group(1), m.group(2), not opening):
            clause = clause_of_subject(text, m.end())
            if clause is not None and person_verb(clause, True) and not common_words("tr").isdisjoint(clause):
                out.append(Hit(m.start(), m.end(), "PERSON", SUBJECT_SCORE, "lower_subject"))
        m = nxt
    return out


def _caps_sentences(text: str):
    """The matches finditer gives of _CAPS_SENTENCE after "(?:^|(?<=[.!?:;\n]))": one at the text's start and one
    after each mark, tried there only. A match holds no mark but its last character, so none overlaps the next
    start."""
    m = _CAPS_SENTENCE.match(text)
    if m is not None:
        yield m
    for mark in sorted(marks_in(text, ".!?:;\n")):
        m = _CAPS_SENTENCE.match(text, mark + 1)
        if m is not None:
            yield m


def caps_subject_pairs(ctx) -> list[Hit]:
    """PERSON hits for the first two words of a sentence in capitals, or the two after a clause opener ("SABAH"),
    before the rest of the clause with a person's verb: no capital marks a proper noun there, so one word must be
    rare as a Turkish word (Zipf < 3.5: "FAHRETİN KULE ABONELİĞİNİ İPTAL ETMEK İSTİYOR", not "YENİ KURYE
    PAKETİ TESLİM ETTİ"), and neither an inflected common word nor a common verb form (_shouted_word)."""
    text = ctx.text
    out: list[Hit] = []
    for m in _caps_sentences(text):
        low = m.group(1).translate(_TR_LOWER).lower()
        words = list(_CAPS_WORD.finditer(low))
        if len(low) != len(m.group(1)) or len(words) < 3:
            continue  # a letter whose lower case is longer: the offsets would drift
        i = 1 if fold(words[0].group()) in CLAUSE_OPENERS else 0
        w1, w2 = words[i], words[i + 1] if i + 1 < len(words) else None
        if w2 is None or low[w1.end():w2.start()] != " " or not _a_name_pair(w1.group(), w2.group(), i == 0) \
                or min(_zipf(w1.group(), "tr"), _zipf(w2.group(), "tr")) >= COMMON_ZIPF \
                or not (_shouted_word(w1.group()) and _shouted_word(w2.group())):
            continue
        clause = clause_of_subject(low, w2.end())
        if clause is not None and person_verb(clause, True):
            out.append(Hit(m.start(1) + w1.start(), m.start(1) + w2.end(), "PERSON", SUBJECT_SCORE, "lower_subject"))
    return out
