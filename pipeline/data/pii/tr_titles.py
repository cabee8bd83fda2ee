"""A capitalized word right before Bey or Hanım is a person's name, whatever the word means alone.

Turkish puts Bey / Hanım after a first name or a surname and after nothing else that is capitalized mid-text,
except a job or rank ("Müdür Bey", "Doktor Hanım", "Sayın"); a surname that is an everyday word or a city is
still a surname there: "Koca Hanım iadeyi kabul etmedi", "Samsun Bey tekrar aradı", "Çiçek Bey'e bilgi verdim".
The other recognizers take such a word only when it is rare or a name of the lists; this signal takes it on the
title alone, so the record-level pass (mentions.NameBook) then finds the person's other mentions.
"""
from __future__ import annotations

from pipeline.data.pii.name_context import ROLES, TITLES_AFTER, adjacent_words
from pipeline.data.pii.text import Hit, fold

TITLED_SCORE = 0.8  # as sure as a cue: the title says "person" as an introduction does

# jobs, ranks and forms of address a Turkish writer puts before Bey / Hanım instead of a name
_ROLE_WORDS = frozenset(fold(w) for w in (
    "müdür müdürü başkan başkanı doktor doktoru hoca avukat öğretmen hakim savcı komiser mühendis usta şef kaptan "
    "memur amir yönetici profesör vekil vali kaymakam muhtar albay binbaşı yüzbaşı teğmen general paşa efendi "
    "sayın değerli kıymetli sevgili müşteri abone alıcı gönderici hasta patron eşi beyefendi hanımefendi "
    "genel bölge şube satış teknik").split()) | ROLES


def titled_names(text: str, toks: list, taken: list[Hit], not_a_name) -> list[Hit]:
    """PERSON hits for the title-case tokens (`toks`: names.py's Latin tokens) right before a Bey / Hanım token,
    outside the spans `taken`. `not_a_name(key)`: a stop, title, office, cue or brand word."""
    out: list[Hit] = []
    for i in range(len(toks) - 1):
        t, nxt = toks[i], toks[i + 1]
        if nxt.key not in TITLES_AFTER or not adjacent_words(text, t, nxt):
            continue
        key = t.key
        if len(key) < 2 or not t.word[1:].islower() or key in TITLES_AFTER or key in _ROLE_WORDS \
                or not_a_name(key):
            continue
        if any(h.start < t.end and t.start < h.end for h in taken):
            continue
        out.append(Hit(t.start, t.end, "PERSON", TITLED_SCORE, "title"))
    return out
