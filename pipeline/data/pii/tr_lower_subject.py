"""A first name and a surname typed in lower case as the subject of a Turkish sentence: "necef ıpekci aboneliğini
iptal etmek istiyor", "sabah altan yener tekrar yazdı, kargo hâlâ çıkmamış".

lower_pairs.py needs a listed first name or a surname-shaped word to look at a lower-case pair; a name outside
the lists typed in lower case is missed. Turkish word order says where the subject stands: near the start of
the sentence, the rest of the clause after it in lower case up to a finite verb (tr_later.subject_of_clause).
Two adjacent words there, with nothing but common words before them, are a name when both are name-shaped
words: no stop or everyday word (wordfreq Zipf >= 4.3 in Turkish or English) unless a listed name, no
inflected common word ("aboneliğini"), no verb form; and one at least rare as a word (Zipf < 3.5) or a listed
first name. A rare word alone is as often a typo or an inflected verb: a pair of them, before a verb, seldom is.
"""
from __future__ import annotations

import re
from itertools import chain

from pipeline.data.pii.later import inflected_common
from pipeline.data.pii.name_context import AFTER_LEADS, CUES_AFTER, ROLES
from pipeline.data.pii.name_signals import EVERYDAY_ZIPF, common_words
from pipeline.data.pii.names import LATIN_FIRST, LATIN_LAST, LATIN_LOWER, LATIN_UPPER, STOP, SURNAME_ENDINGS
from pipeline.data.pii.not_person import PLACES
from pipeline.data.pii.text import Hit, fold
from pipeline.data.pii.tr_later import clause_of_subject
from pipeline.data.pii.tr_spelling import TURKISH_LETTERS, inflected_in_spelling, person_verb

SUBJECT_SCORE = 0.6  # as a lower-case pair of lower_pairs.py: above the default threshold

# where a sentence starts: the text's start, and after a mark (asked apart: "^" in an alternation made the engine
# try every position; together they give the matches of "(?:^|[.!?:\n])[ \t\u00a0]*")
_TEXT_START = re.compile(r"[ \t\u00a0]*")
_SENTENCE_START = re.compile(r"[.!?:\n][ \t\u00a0]*")
_WORD = re.compile(rf"[{LATIN_UPPER}]?[{LATIN_LOWER}]+(?=[ \u00a0,.!?\n]|$)")
# verb forms and converbs in folded spelling: -dı, -mış, -yor, -acak, -ıp, -arak, -ince, -meli, -mek
VERB_SHAPE = re.compile(r"(?:[dt][iuü][mnk]?|m[iuü]ş|yor|[ae]c[ae]k|[iuü]p|[ae]r[ae]k|[iuü]nc[ae]|m[ae]l[iı]|m[ae]k)$")
_NOT_NAME = STOP | frozenset("bir bu şu o ve ile için gibi ama çok daha en ben sen biz siz onlar".split())
# product and brand words typed in lower case are English-like ("xiaomi", "macbook" >= 3; "powerbank" has a w, no
# Turkish or Azerbaijani name does); a Turkish name is rare in English unless listed ("ramazan" 2.1, "altan" 1.9)
_EN_ZIPF = 2.5
# the word after the pair owned by it, possessive with no case ("tuşları", "bağlantım"): the pair is a modifier
_POSSESSED = re.compile(r"(?:(?<!n)[iuü]|[iuü]?m|l[ae]r[iı])$")
_TR_LOWER = str.maketrans({"İ": "i", "I": "ı"})
_CACHE: dict[str, int] = {}  # folded word -> 0 no name word, 1 a name word, 2 a rare or listed-first one
_KIND: dict[tuple[str, bool], int] = {}  # (word as written, spelled) -> _kind
# one-letter case and possessive endings (folded: ı is i): accusative, dative, "your" after a vowel
_CASE_ENDINGS = frozenset("aeiuün")
_COMMON: list = []
# an object before the subject: a word ending in an accusative (folded: ı is i; "paketi", "kargoyu") and a pair
# (in a look-ahead: the matches overlap, "getirdiği paketi X Y")
# (each word taken whole, no backtracking into it: a space must follow it, so the groups are whole words anyway; the
# same matches as "(?=([L]{3,}(?:[iuü]|y[iuü]))[ \u00a0]+([L]{3,})[ \u00a0]([L]{3,})(?=[ \u00a0]))" after the look-behind)
_OBJECT_PAIR = re.compile(rf"(?<![\w'’.-])(?=([{LATIN_LOWER}]{{4,}}+(?<=[iuü]))[ \u00a0]+([{LATIN_LOWER}]{{3,}}+)"
                          rf"[ \u00a0]([{LATIN_LOWER}]{{3,}}+)(?=[ \u00a0]))")
# two lower-case words ending where a Turkish name cue starts ("ile konuştum", "adına", "isimli")
_PAIR_BEFORE = re.compile(rf"(?<![\w'’.-])([{LATIN_LOWER}]{{3,}})[ \u00a0]([{LATIN_LOWER}]{{3,}})$")


def _en_zipf(key: str) -> float:
    import wordfreq

    return wordfreq.zipf_frequency(key, "en")


def _kind(key: str, word: str, spelled: bool = False) -> int:
    """0: no name word here; -1: name-shaped but an everyday word (a surname in capitals: "Aamer Kulak"); 1: a
    name-shaped word; 2: one that is rare as a word or a listed first name. A word that folds to an inflected
    common word is none, unless its stem is no word in its own spelling ("Raziye": "razi", not "razı")."""
    k = _KIND.get((word, spelled))
    if k is None:
        k = _key_kind(key)
        k = 0 if k and inflected_in_spelling(word, spelled) else k
        if len(_KIND) < 1 << 16:
            _KIND[(word, spelled)] = k
    return k


def _case_kind(k: int, key: str) -> int:
    """`k` (_kind), or 1 where the word is none only as a common word and a one-letter ending ("berke": "berk" +
    "e", "halime", "altan": "alta" + "n"): an accusative or dative is no subject, nor is a "your X" before a
    person's verb often one, so there such a word is a name's."""
    if k == 0 and key[-1:] in _CASE_ENDINGS and _key_kind(key) > 0 and key[:-1] in _COMMON[0] \
            and not inflected_common(key[:-1]):  # "kodunun" is "kodunu" + "n", itself inflected
        return 1
    return k


def introduced_name_word(word: str) -> bool:
    """A word after "ben" (I am) may be a name's: no stop word, verb form or inflected common word; an everyday
    word or an English-like one may ("Bar", "Kalem")."""
    low = word.translate(_TR_LOWER).lower()
    key = fold(low)
    return len(key) >= 2 and key not in _NOT_NAME and not VERB_SHAPE.search(key) \
        and not inflected_in_spelling(low, True)


def shouted_name_word(word: str) -> bool:
    """A word in capitals may be a name's in Turkish text: no inflected common word, verb form, stop or
    English-like product word ("KODUNUN", "ÇIKMAMIŞ", "ŞUBEYE" are none; "BUDAQOV", "TEKRAR" may be)."""
    low = word.translate(_TR_LOWER).lower()
    return _kind(fold(low), low, True) != 0


def _key_kind(key: str) -> int:
    k = _CACHE.get(key)
    if k is None:
        if not _COMMON:
            _COMMON.append(common_words("tr") | common_words("en"))
            _COMMON.append(common_words("tr", EVERYDAY_ZIPF) | common_words("en", EVERYDAY_ZIPF))
        listed = key in LATIN_FIRST or key in LATIN_LAST
        if len(key) < 3 or key in _NOT_NAME or key in PLACES or "w" in key \
                or (not listed and _en_zipf(key) >= _EN_ZIPF) or VERB_SHAPE.search(key):
            k = 0
        elif key in _COMMON[1] and not listed:
            k = -1
        else:
            k = 2 if key not in _COMMON[0] or key in LATIN_FIRST else 1
        if len(_CACHE) < 1 << 16:
            _CACHE[key] = k
    return k


def _english_like(key: str) -> bool:
    """A word that is no name here only for being frequent in English ("tas", "boz"): a capitalized surname
    may be one, where a person's verb follows the pair (subject_pairs)."""
    return len(key) >= 3 and key not in _NOT_NAME and key not in PLACES and "w" not in key \
        and VERB_SHAPE.search(key) is None and key not in LATIN_FIRST and key not in LATIN_LAST \
        and _en_zipf(key) >= _EN_ZIPF and key not in _COMMON[1]


def _first_before_surname(key1: str, key2: str, k2: int) -> bool:
    """A first name that is a place or an everyday word ("alı", "azerbaycan", "oktay") before a surname by its
    ending (-ov, -yev, -oğlu, -zade) that is rare as a word: the ending says the pair is a name, as it does for
    a capitalized pair (name_surname_endings). Not a stop, role, verb-shaped or inflected common word ("müşteri
    aliyev" keeps the role word)."""
    return k2 == 2 and len(key2) >= 6 and key2.endswith(SURNAME_ENDINGS) and len(key1) >= 3 \
        and key1 not in _NOT_NAME and key1 not in ROLES and VERB_SHAPE.search(key1) is None \
        and not inflected_common(key1)


def _owns_next(text: str, norm: str, end: int) -> bool:
    """The word after the pair is possessed by it ("macbook klavye tuşları takılıyor")."""
    w = _WORD.match(text, end + 1)
    return w is not None and _POSSESSED.search(norm[w.start():w.end()]) is not None


def subject_pairs(ctx) -> list[Hit]:
    """PERSON hits for pairs of name-shaped words, both in lower case or both capitalized, that are the subject
    of a Turkish sentence. Capitalized, the surname may be an everyday word ("Aamer Kulak tekrar yazdı")."""
    text, norm = ctx.text, ctx.norm
    out: list[Hit] = []
    spelled = TURKISH_LETTERS.search(text) is not None
    first = _TEXT_START.match(text)
    for m in chain((first,), _SENTENCE_START.finditer(text, first.end())):
        pos, words = m.end(), []
        for _ in range(5):  # the pair among the first five words, after common words only
            w = _WORD.match(text, pos)
            if w is None:
                break
            words.append((w.start(), w.end()))
            pos = w.end() + 1
            if pos > len(text) or text[pos - 1] not in " \u00a0":
                break
        for i in range(len(words) - 1):
            (s1, e1), (s2, e2) = words[i], words[i + 1]
            k1, k2 = _kind(norm[s1:e1], text[s1:e1], spelled), _kind(norm[s2:e2], text[s2:e2], spelled)
            title = text[s2].isupper()
            if title and k2 == 0 and _english_like(norm[s2:e2]) and _en_zipf(norm[s1:e1]) < _EN_ZIPF:
                k2 = -1  # "Rafet Tas": a capitalized surname that is an English word, as an everyday one, after
                # a first name no English one ("Tommy Hilfiger" is a brand)
            if title != text[s1].isupper() and not (i == 0 and title):
                k1 = 0  # one casing for both words; the first may be capitalized as the sentence's first
            if k1 <= 0 and (title == text[s1].isupper() or i == 0) \
                    and _first_before_surname(norm[s1:e1], norm[s2:e2], k2):
                k1 = 1
            c1 = k1 or _case_kind(k1, norm[s1:e1])
            c2 = k2 or _case_kind(k2, norm[s2:e2])
            if c1 > 0 and (c2 > 0 or (title and c2 < 0)) and not _owns_next(text, norm, e2):
                clause = clause_of_subject(text, e2)
                # one word rare will do; two words frequent in the corpus need a person's verb ("Hayri Zeybek
                # tekrar yazdı"), in lower case one no thing does, in the active ("berke topuz dün aradı", not
                # "yeni modem geldi")
                rare = k1 > 0 and (k2 > 0 or (title and k2 < 0)) and max(k1, k2) == 2
                if clause is not None and (rare or (c2 > 0 or title) and person_verb(clause, not title)):
                    out.append(Hit(s1, e2, "PERSON", SUBJECT_SCORE, "lower_subject"))
                    break
            if norm[s1:e1] not in _COMMON[0]:
                break  # a rare word before the pair: not a sentence of common words and a name
    return out


def cued_pairs(ctx) -> list[Hit]:
    """PERSON hits for two lower-case words right before a name cue ("az önce halime kaynar ile konuştum"):
    the word before the cue a name-shaped word (_kind), the one before it too, read without the inflection test
    ("halime" is no "halim" + dative before a name and its cue), and no role word ("müşteri temsilcisi ile")."""
    text, norm = ctx.text, ctx.norm
    if " ile " not in norm and "ad" not in norm and "isim" not in norm or not ctx.may_hold_phrase(AFTER_LEADS):
        return []  # (AFTER_LEADS: what a text holds where CUES_AFTER can match; "ad" is in "adres")
    spelled = TURKISH_LETTERS.search(text) is not None
    out = []
    for cue in CUES_AFTER.finditer(norm):
        m = _PAIR_BEFORE.search(text, max(0, cue.start() - 60), cue.start())
        if m is None:
            continue
        (s1, e1), (s2, e2) = m.span(1), m.span(2)
        k1, key1 = _key_kind(norm[s1:e1]), norm[s1:e1]
        if k1 > 0 and key1 not in ROLES and _kind(norm[s2:e2], text[s2:e2], spelled) > 0:
            out.append(Hit(s1, e2, "PERSON", SUBJECT_SCORE, "lower_subject"))
    return out


def object_first_pairs(ctx) -> list[Hit]:
    """PERSON hits for a pair of name-shaped words after an inflected object and before the rest of the clause
    with a person's verb, all in lower case or all in capitals ("kuryenin getirdiği paketi X Y teslim almış",
    "PAKETİ X Y TESLİM ALMIŞ"): Turkish puts the object first as often as the subject."""
    text, norm = ctx.text, ctx.norm
    out: list[Hit] = []
    low = spelled = None  # computed at the first candidate: most texts have none
    for m in _OBJECT_PAIR.finditer(norm):
        (s1, e1), (s2, e2) = m.span(2), m.span(3)
        written = text[m.start():e2]
        if not (written.islower() or written.isupper()) or not inflected_common(m.group(1)):
            continue
        if low is None:
            low, spelled = text.translate(_TR_LOWER).lower(), TURKISH_LETTERS.search(text) is not None
            if len(low) != len(text):
                return out  # a letter whose lower case is longer: the offsets would drift
        clause = clause_of_subject(low, e2)
        nxt = text[e2:e2 + 40].split(maxsplit=1)  # the clause in the pair's casing too
        if clause is None or not person_verb(clause, True) or not nxt or nxt[0].islower() != written.islower():
            continue
        c1 = _case_kind(_kind(norm[s1:e1], low[s1:e1], spelled), norm[s1:e1])
        c2 = _case_kind(_kind(norm[s2:e2], low[s2:e2], spelled), norm[s2:e2])
        if c1 > 0 and c2 > 0:
            out.append(Hit(s1, e2, "PERSON", SUBJECT_SCORE, "lower_subject"))
    return out
