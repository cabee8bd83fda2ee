"""A word of a person found in the record that opens a later Turkish sentence as its subject is that person.

The record-level pass (mentions.NameBook) skips a first name that is also a word ("Bekir", "Sevda", "Cuma")
at a sentence start, where a capital says nothing. Turkish says more there: a subject is followed by the rest
of its clause in lower case, ending in a finite verb ("Bekir az önce tekrar yazdı", "Cuma faturanın kopyasını
istedi"). Not where the next word makes the capitalized one part of a noun phrase ("Cuma günü", "Kara kutu
bulundu" is left alone only by its time noun) or of a compound verb ("Umut ediyorum", "Kabul etti").
"""
from __future__ import annotations

import re

from pipeline.data.pii.text import fold

_LOWER_CLAUSE = re.compile(r"[ \u00a0]+((?:[^\W\d_A-ZÇĞİÖŞÜ][^\W\d_]*[ \u00a0,]+){0,7}[^\W\d_A-ZÇĞİÖŞÜ][^\W\d_]*)"
                           r"[ \u00a0]*(?:[.!?\n]|$)")
# a Turkish finite verb, folded: past -dı/-mış, present -(ı)yor, future -acak, with an optional -dır / -lar and
# person ending; not the aorist -ar/-er, which English words end in too ("Will is a regular")
_FINITE = re.compile(r"(?:[dt][iuü]|m[iuü]ş|[iuü]yor|[ae]c[ae]k)(?:d[iuü]r|l[ae]r|[mn]|[iuü][mn]|s[iuü]n[iuü]z)?$")
# nouns that make a capitalized word before them a time or a thing ("Cuma günü", "Kara kutu"), and the first
# syllables of the verbs that make it half of a compound verb ("Umut ediyorum", "Kabul olmadı")
_NOT_AFTER_SUBJECT = re.compile(r"(?:gün|akşam|sabah|öğle|gece|hafta|ay[iı]?\b|yıl|sene|saat|kutu|deniz|et[mt]|ed[eiı]|"
                                r"ol[adu]|yap)")


# where a clause may end
_SPACES = " \u00a0"
_LOOK_BACK = 40  # characters before a sentence's end read for its last word: spaces, then the word's tail
_TAIL = 12  # _FINITE matches at most nine letters at a word's end
_FINITE_LAST = frozenset("iuüşrkmnz")  # the last letter of every match of _FINITE


def marks_in(text: str, marks: str) -> list[int]:
    """The positions of the characters of `marks` in `text` (a str.find loop per mark: a regex scan for the
    class tests every character at several times the cost), not sorted."""
    out = []
    for ch in marks:
        k = text.find(ch)
        while k >= 0:
            out.append(k)
            k = text.find(ch, k + 1)
    return out


def may_close_a_clause(text: str) -> bool:
    """False when clause_of_subject is None at every position of `text` and of its lower-cased copy: no
    sentence (or the text) ends in a word of a finite verb's shape. Once per text, it spares the subject
    signals their scans of texts with no such verb. (The tail of the text before each end is read, not its
    last word: a finite ending there is all _FINITE can match, so this answers True for every text the word
    would, and for a few more.)"""
    ends = marks_in(text, ".!?\n")
    ends.append(len(text))
    for end in ends:
        lo = max(0, end - _LOOK_BACK)
        tail = text[lo:end].rstrip(_SPACES)
        if not tail:
            if lo > 0:
                return True  # spaces only: the word is further back
            continue
        # (the last letter first; a non-ASCII one, İ, is folded in the search)
        if (tail[-1].lower() in _FINITE_LAST or not tail[-1].isascii()) \
                and _FINITE.search(fold(tail[-_TAIL:])) is not None:
            return True
    return False


def subject_of_clause(text: str, end: int) -> bool:
    """The word ending at `end` is followed by the rest of its sentence in lower case (eight words at most),
    ending in a finite verb, and the next word is no time noun or half of a compound verb."""
    return clause_of_subject(text, end) is not None


def clause_of_subject(text: str, end: int) -> list[str] | None:
    """The folded words of the clause after a subject ending at `end` (subject_of_clause), or None."""
    m = _LOWER_CLAUSE.match(text, end)
    if m is None:
        return None
    words = fold(m.group(1)).replace(",", " ").split()
    if _FINITE.search(words[-1]) is None or _NOT_AFTER_SUBJECT.match(words[0]) is not None:
        return None
    return words
