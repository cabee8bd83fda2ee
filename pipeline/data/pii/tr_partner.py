"""The other word of a two-word name found in part, in capitals or in lower case: "EDİP <MELEK>", "<GUNDUZ> AKCA",
"fevzi <tüfekçi>", "safahat <qarqari>".

neighbours.py grows a span written with a capital by a rare capitalized word beside it. A name typed in
capitals or in lower case is found by one word more often than by both (a listed first name, a surname-shaped
word), and its other word is often no rare word: a Turkish first name is a word the corpus holds often
("Fevzi" 4.0, "Yekta" 3.5). The word beside a one-word span, in the same casing and one space away, joins it
when it is a listed first name or surname, or no everyday word (wordfreq Zipf < 4.3 in Turkish and English),
no inflected common Turkish word ("müşterimiz", "aboneliğini"), and no stop, title, cue, place or firm word.
"""
from __future__ import annotations

import re

from pipeline.data.pii.later import inflected_common
from pipeline.data.pii.name_context import ROLES, TITLES, TITLES_AFTER
from pipeline.data.pii.name_signals import common_words
from pipeline.data.pii.names import LATIN_FIRST, LATIN_LAST, LATIN_LOWER, LATIN_UPPER, NEVER, OFFICES, STOP
from pipeline.data.pii.not_person import PLACES, THING_NOUNS
from pipeline.data.pii.text import fold
from pipeline.data.pii.tr_later import subject_of_clause
from pipeline.data.pii.tr_lower_subject import VERB_SHAPE
from pipeline.data.pii.tr_spelling import TURKISH_LETTERS, inflected_in_spelling
from pipeline.data.pii.tr_vocative import REPLY_WORDS

_CAPS_BEFORE = re.compile(rf"(?<![\w'’.-])([{LATIN_UPPER}]{{3,}})[ \u00a0]$")
_CAPS_AFTER = re.compile(rf"[ \u00a0]([{LATIN_UPPER}]{{3,}})(?![\w'’-])")
_LOWER_BEFORE = re.compile(rf"(?<![\w'’.-])([{LATIN_LOWER}]{{3,}})[ \u00a0]$")
_LOWER_AFTER = re.compile(rf"[ \u00a0]([{LATIN_LOWER}]{{3,}})(?![\w'’-])")
_TITLE_BEFORE = re.compile(rf"(?<![\w'’.-])([{LATIN_UPPER}][{LATIN_LOWER}]{{2,}})[ \u00a0]$")
_REPLY = frozenset(fold(w) for w in REPLY_WORDS)
_NOT_NAME = STOP | NEVER | TITLES | TITLES_AFTER | OFFICES | THING_NOUNS
_EVERYDAY: list = []  # Turkish and English words of Zipf >= 4.3, folded, built on first use
# time words and adverbs that open a clause before its subject (folded)
CLAUSE_OPENERS = frozenset(fold(w) for w in (
    "dün bugün yarın sabah akşam öğlen öğle gece şimdi tekrar yine gene hala hâlâ zaten ayrıca sonra önce biraz "
    "hemen artık lütfen ancak fakat çünkü galiba herhalde belki maalesef sanırım aslında").split())


def partner_word(word: str) -> bool:
    """A word that may be the other half of a name beside a one-word span (see the module's doc)."""
    key = fold(word)
    if key in _NOT_NAME:
        return False
    if key in LATIN_FIRST or key in LATIN_LAST:
        return True  # a listed name that is also a town somewhere ("ali") still is one beside a name
    if key in PLACES:
        return False
    if not _EVERYDAY:
        from pipeline.data.pii.name_signals import EVERYDAY_ZIPF

        _EVERYDAY.append(common_words("tr", EVERYDAY_ZIPF) | common_words("en", EVERYDAY_ZIPF))
    return key not in _EVERYDAY[0] and (not inflected_common(key) or _female_form(key))


def _female_form(key: str) -> bool:
    """A listed first name and -e / -ye, a Turkish female name made of a male one ("Bedri": "Bedriye", "Selim":
    "Selime"), which reads as the name in the dative to the inflection test."""
    return (key.endswith("ye") and key[:-2] in LATIN_FIRST) or (key.endswith("e") and key[:-1] in LATIN_FIRST)


def first_name_before(text: str, s: int, floor: int) -> int:
    """Where a PERSON span written with a capital starts once the capitalized word right before it joins: a
    Turkish first name the corpus holds often ("Serhat" 4.1, "Nilgün" 3.7) before a surname found alone
    ("Serhat <Kara>", the surname found by "Kara Bey" elsewhere). The word is no everyday word (Zipf < 4.3: the
    greetings and forms of address are above), no inflected common word in its own spelling, no stop, title,
    place or firm word; the text is typed with Turkish letters (ı, ğ, ş: English has many such words, "Cheers").
    A place name is a first name too where the pair is a clause's subject ("Malang <İkiz> bugün mağazaya gelip
    cihazı teslim etti"): a city before a surname does not do a person's deed."""
    m = _TITLE_BEFORE.search(text, max(floor, s - 40), s)
    if m is None or TURKISH_LETTERS.search(text) is None:
        return s
    place_subject = fold(m.group(1)) in PLACES and subject_of_clause(text, _word_end(text, s))
    if _frequent_first_name(m.group(1)) or place_subject:
        return m.start(1)
    return s


def _word_end(text: str, s: int) -> int:
    e = s
    while e < len(text) and text[e].isalpha():
        e += 1
    return e


def _frequent_first_name(word: str) -> bool:
    key = fold(word)
    if len(key) < 3 or key in _NOT_NAME or key in PLACES or key in _REPLY:
        return False  # "Tamamdır <Nizami>": a reply word before the customer addressed
    if not _EVERYDAY:
        from pipeline.data.pii.name_signals import EVERYDAY_ZIPF

        _EVERYDAY.append(common_words("tr", EVERYDAY_ZIPF) | common_words("en", EVERYDAY_ZIPF))
    return key not in _EVERYDAY[0] and not inflected_in_spelling(word)


def _everyday_first_name(text: str, word: str, e: int) -> bool:
    """A lower-case everyday word before a lower-case surname found alone, the pair the subject of a Turkish
    clause ("oktay <macit> bugün mağazaya gelip cihazı teslim etti", "bu hattı ümit <celik> kullanıyor"): many
    Turkish first names are everyday words ("ümit" hope, 4.7). Not a time word or adverb that opens a clause
    ("dün <celik> aradı"), a stop, role, verb-shaped or inflected word, or an English-like word ("modem", "mobil":
    things are named in English words; Zipf >= 3.5 in English)."""
    key = fold(word)
    return key not in CLAUSE_OPENERS and key not in common_words("en") and key not in _NOT_NAME and key not in ROLES and key not in PLACES \
        and len(key) >= 4 and VERB_SHAPE.search(key) is None and not inflected_common(key) \
        and not inflected_in_spelling(word) and TURKISH_LETTERS.search(text) is not None and subject_of_clause(text, e)


def grow_by_partner(text: str, s: int, e: int, floor: int, limit: int) -> tuple[int, int]:
    """s..e, a one-word PERSON span all in capitals or all in lower case, grown by the word beside it in the same
    casing, before it or else after it, never past floor..limit."""
    span = text[s:e]
    if " " in span or not span.isalpha():
        return s, e
    if span.isupper():
        before, after = _CAPS_BEFORE, _CAPS_AFTER
    elif span.islower():
        before, after = _LOWER_BEFORE, _LOWER_AFTER
    else:
        return s, e
    m = before.search(text, max(floor, s - 40), s)
    if m is not None and (partner_word(m.group(1)) or (span.islower() and _everyday_first_name(text, m.group(1), e))):
        return m.start(1), e
    m = after.match(text, e, limit)
    if m is not None and partner_word(m.group(1)):
        return s, m.end(1)
    return s, e
