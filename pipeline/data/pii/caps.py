"""Names in text written in capitals, by context: "DENİZ ÇELİK DÜN ARADI", "MÜŞTERİ ADI: DENİZ ÇELİK".

In capitals a capital letter says nothing, and the words of many names are everyday words too ("Deniz" sea,
"Çelik" steel), so the list-and-rarity rules of latin_names.LatinNameRecognizer miss them there. A cue does not
care about case: two or three adjacent words in capitals right after a strong introduction or title, or right
before a calling verb, a cue after a name ("ADINA", "İLE KONUŞTUM") or Bey/Hanım, are a name when each is a
listed name (an ambiguous one too) or no everyday word, and none is a stop, cue or title word ("BİLGİ İSTEDİ"
is no name). The run is the two words nearest the cue; a third joins only when it is rare as a word ("SABAH X
Y TEKRAR YAZDI": "SABAH" is no name's).

The other half: in capitals, an everyday word that is no listed name does not join the run after a listed first
name ("MEHMET ÇELİK OLARAK KAYITLI": "OLARAK" is no name's), and a cue word never starts one ("ADINA" is also a
first name).
"""
from __future__ import annotations

from pipeline.data.pii.name_context import (
    adjacent_words,
    after_title,
    context_before,
    cue_after,
    strong_before,
    title_after,
    verb_after,
)
from pipeline.data.pii.name_signals import Rarity
from pipeline.data.pii.text import Hit

CAPS_CUED_SCORE = 0.8  # a cue makes it as sure as a cue does in mixed case


def cued_caps_name(ctx, toks: list, i: int, rarity: Rarity, name_word) -> tuple[int, Hit | None]:
    """The token to go on from and the name in capitals that a cue makes of the run of capitalized words from
    toks[i] on (see the module doc). `name_word(key)`: may be a name's word in capitals (listed or no everyday
    word; no stop, cue, title or office word)."""
    text = ctx.text
    j = i
    while j < len(toks) and j - i < 4 and (j == i or adjacent_words(text, toks[j - 1], toks[j])):
        tk = toks[j]
        if not tk.word.isupper() or len(tk.key) < 2 or not name_word(tk.key):
            break
        j += 1
    if j == i:
        return i + 1, None
    last = toks[j - 1]
    if verb_after(ctx, last) or cue_after(ctx, last) or title_after(text, toks, j - 1):
        s = max(i, j - 2)
        if s > i and j - s == 2 and rarity.rare(toks[s - 1].key):
            s -= 1  # three words: the first is rare as a word
        if j - s >= 2 or after_title(text, toks, s) or strong_before(ctx, toks[s].start):
            return j, Hit(toks[s].start, last.end, "PERSON", CAPS_CUED_SCORE, "caps")
        return j, None
    if after_title(text, toks, i) or strong_before(ctx, toks[i].start) or context_before(ctx, toks[i].start):
        e = min(j, i + 2)
        if e < j and rarity.rare(toks[e].key):
            e += 1
        if e - i >= 2:
            return e, Hit(toks[i].start, toks[e - 1].end, "PERSON", CAPS_CUED_SCORE, "caps")
    return i + 1, None
