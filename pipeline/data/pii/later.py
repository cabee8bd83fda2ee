"""Which words of a name found once in a record the record-level pass (mentions.NameBook) looks for again.

A word found as a person's name anywhere in a record is that person's in every casing of the record
("eflinaz" typed in lower case two turns later), as long as it is no ordinary word: rare in Turkish and in
English (wordfreq, name_signals.common_words). And a name that starts a sentence keeps its first word when
that word is rare and no inflected form of a common word: "Eflinaz Harmankaya aradı" is a full name,
"Dosyayı Harmankaya adına açtım" starts with an inflected noun ("dosya" + "yı").
"""
from __future__ import annotations

import re
from functools import lru_cache

from pipeline.data.pii.name_signals import EVERYDAY_ZIPF, common_words
from pipeline.data.pii.text import fold

_LANGS = ("tr", "en")


_COMMON_TR_EN: list = []  # the union of the two lists, built on first use (one lookup per word, not two)


def rare_word(key: str) -> bool:
    """The folded word is common neither in Turkish nor in English."""
    if not _COMMON_TR_EN:
        _COMMON_TR_EN.append(frozenset().union(*(common_words(lang) for lang in _LANGS)))
    return key not in _COMMON_TR_EN[0]


# a chain of Turkish inflectional suffixes, in folded spelling (ı is i): case, possessive, plural, -lik
_SUFFIX_CHAIN = re.compile(r"(?:[yns]?[iuü]|[yn]?[ae]|l[ae]r|n?[dt][ae]n?|[iuü]?n|[iuü]?m|[iuü]?n[iuü]z|[iuü]m[iuü]z"
                           r"|y?l[ae]|[cç][ae]|ki|l[iuü][kğ])+")


@lru_cache(maxsize=1 << 16)  # asked of the same words again and again (every candidate word of every text)
def inflected_common(key: str) -> bool:
    """The folded word is a common Turkish word and a chain of inflectional suffixes ("siparişinizi", "dosyayı",
    "aboneliğini"): a stem of four letters at least, six letters of suffixes at most. Not a compound of common
    words, as many surnames are ("Karagöz": "kara" + "göz"). Turkish only: an English name often starts with a
    word ("Evander")."""
    common = common_words("tr")
    return any(key[:k] in common and _SUFFIX_CHAIN.fullmatch(key, k) is not None
               for k in range(max(4, len(key) - 6), len(key)))


def sentence_start_name_word(key: str) -> bool:
    """A capitalized first word of a sentence that belongs to the name after it (see the module doc): rare, or
    common but no everyday word of Turkish or English (wordfreq Zipf < 4.3 in both): many first names are that
    frequent ("Imran" 3.6, "Salman" 3.6, "Clare" 3.7), while the words that open a sentence before a name are
    everyday ones ("Yesterday", "Please") or inflected Turkish nouns ("Dosyayı")."""
    return len(key) >= 3 and (rare_word(key) or not everyday_word(key)) and not inflected_common(key)


_EVERYDAY_TR_EN: list = []


def everyday_word(key: str) -> bool:
    """The folded word is an everyday word (wordfreq Zipf >= 4.3) of Turkish or English."""
    if not _EVERYDAY_TR_EN:
        _EVERYDAY_TR_EN.append(frozenset().union(*(common_words(lang, EVERYDAY_ZIPF) for lang in _LANGS)))
    return key in _EVERYDAY_TR_EN[0]


_LOWER_WORD_AFTER = re.compile(r"[ \u00a0]+[^\W\d_A-ZÇĞİÖŞÜА-ЯЁ][^\W\d_]*(?![\w'’])")


def surname_opens_sentence(text: str, end: int, surname: bool) -> bool:
    """A surname of the record's person that is also a word starts a sentence and a lower-case word follows
    ("Kara faturanın kopyasını istedi" after "Ayşe Kara" was found): the person, where the record names one with
    that surname. A first name that is also a word stays a word there ("Can you check", "Frank talk")."""
    return surname and _LOWER_WORD_AFTER.match(text, end) is not None


def lower_case_mention(key: str) -> bool:
    """A book word that, typed in lower case elsewhere in the record, is still the person's name."""
    return len(key) >= 4 and rare_word(key)


def lower_case_name_words(value: str) -> tuple[str, ...]:
    """The words of a name found in lower case ("evander quillbury"), written as a name is, so that the record's
    capitalized mentions are found too ("Told Evander ..."); a Turkish word that starts with i both ways
    ("İlkay", "Ilkay")."""
    out: list[str] = []
    for w in value.split():
        if len(w) < 3 or not w.isalpha() or not w.islower():
            continue
        out.append(w[:1].upper() + w[1:])
        if w[0] == "i":
            out.append("İ" + w[1:])
    return tuple(out)


def capitalized_forms(word: str) -> tuple[str, ...]:
    """A name word as it is written in mixed case, from any casing: "EFLİNAZ" -> "Eflinaz" (str.lower would make
    "İ" an i and a combining dot), "IŞIK" -> "Işık" and "Işik", "JOHN" -> "John"."""
    if not word.isupper():
        return (word,)
    rest = word[1:].replace("İ", "i")
    return tuple(dict.fromkeys((word[:1] + rest.lower(), word[:1] + rest.replace("I", "ı").lower())))


def drop_sentence_opener(text: str, hit, listed, everyday, turkish: bool, signed) -> object:
    """A PERSON hit of two or more words that starts a sentence, less its first word when that word is no
    listed name (`listed(key)`) and an everyday word (`everyday(key)`) or, in Turkish text, an inflected common
    word: "Dosyayı Kayratbek adına", "Belgeleri Kayratbek Bey'den". A rarer common word stays: many names are
    ("Caller: Evander Quillbury" keeps its). Not after a colon: "Müşteri adı: Deniz Çelik" is a label and a name;
    not under a closing formula (`signed(start)`: "Saygılarımla,\nDeniz Çelik") or a line that ends with a
    comma: a signature is a name alone."""
    space = text.find(" ", hit.start, hit.end)
    if space < 0 or not _after_full_stop(text, hit.start) or signed(hit.start):
        return hit
    key = fold(text[hit.start:space])
    if listed(key) or not (everyday(key) or (turkish and inflected_common(key))):
        return hit
    return hit._replace(start=space + 1)


def _after_full_stop(text: str, start: int) -> bool:
    """`start` begins the text, a sentence after . ! ? or a line whose line above does not end with a comma."""
    k = start - 1
    while k >= 0 and text[k] in " \t\u00a0":
        k -= 1
    if k >= 0 and text[k] == "\n":
        above = text[:k].rstrip(" \t\u00a0\r\n")
        return not above.endswith(",")
    return k < 0 or text[k] in ".!?"
