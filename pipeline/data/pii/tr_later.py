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
