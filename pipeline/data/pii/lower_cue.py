"""Lower-case names next to a cue, beyond the lists: the words a person types for a name in lower case are often
ordinary-looking ("customer name: aru bcu"), so latin_names.py's rule (each word a listed name or rare as a word)
misses a surname that is a somewhat common word. Two places make the pair a name anyway:

* a labelled value: after a strong cue ("customer name:", "talep sahibi:"), a second word that ends the
  value (a line end, the text's end, a comma or a full stop right after it) and is no everyday word;
* the subject of a calling verb: two words right before it ("... x y asked for a replacement"), neither an
  everyday word nor an inflected Turkish word ("faturanın kopyasını istedi") unless listed, one at least a
  listed name or rare as a word; a listed first name that is also a word ("faith") counts when the other word
  is a listed name too.
"""
from __future__ import annotations

from pipeline.data.pii.later import inflected_common
from pipeline.data.pii.name_signals import Rarity

_VALUE_END = frozenset("\n,.;")


def ends_value(text: str, end: int) -> bool:
    """The word that ends at `end` ends a labelled value: the text ends or a line end, comma or stop follows."""
    return end >= len(text) or text[end] in _VALUE_END


def labelled_second_word(key: str, rarity: Rarity, stop: frozenset) -> bool:
    """After a strong cue and a name word, a second word that ends the value: no stop or everyday word."""
    return len(key) >= 3 and key not in stop and not rarity.everyday(key)


def pair_before_verb(first: str, second: str, rarity: Rarity, stop: frozenset, listed, ambiguous) -> bool:
    """Two folded lower-case words right before a calling verb that are a name (see the module doc).
    `listed(key)`: a first name or surname of the lists."""
    keys = (first, second)
    if any(len(k) < 3 or k in stop for k in keys):
        return False
    if all(listed(k) for k in keys):
        return True  # "faith adkins asked": a first name that is also a word, with a listed surname
    if any(k in ambiguous for k in keys):
        return False
    if any((rarity.everyday(k) or inflected_common(k)) and not listed(k) for k in keys):
        return False
    return any(listed(k) or rarity.rare(k) for k in keys)
