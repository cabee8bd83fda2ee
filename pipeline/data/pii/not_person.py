"""A PERSON span whose context says it names a place, a car or a brand: "stuck in Jackson", "Jackson,
Mississippi", "Renault Clio", "Крем Ив Роше", "магазин Пятёрочка".

The name recognizers take a capitalized name word for a person where nothing says otherwise; these tests say
otherwise, each from a list (pipeline/resources/pii/not_persons.json, bench/pii/build_not_persons.py: GeoNames
cities, car makes and models, product and firm nouns) together with the words around the span. A span that a
strong cue made (score >= CUED_SCORE: "my name is Austin Lincoln") is never taken for a place.
"""
from __future__ import annotations

import re
from itertools import pairwise

from pipeline.data.pii.ru_morph import oblique_name
from pipeline.data.pii.text import Hit, fold, load_data

_DATA = load_data("not_persons.json")
PLACES = frozenset(_DATA["places"])
REGIONS = frozenset(_DATA["regions"])
VEHICLES = {make: frozenset(models) for make, models in _DATA["vehicles"].items()}
THING_NOUNS = frozenset(_DATA["thing_nouns"])
# a preposition before a one-word place; not "to" or "from", which come before persons as often ("spoke to",
# "an e-mail from")
PLACE_PREPOSITIONS = frozenset("in near outside around across via into throughout within".split())
CUED_SCORE = 0.8
_WORD_BEFORE = re.compile(r"([^\W\d_]+)[ \u00a0]$")
_WORD_AFTER = re.compile(r"[ \u00a0]([^\W_][\w-]*)")
_REGION_AFTER = re.compile(r",[ \u00a0]([^\W\d_]+(?:[ \u00a0][^\W\d_]+)?)")


def place_or_thing(text: str, h: Hit) -> bool:
    """The PERSON span h names a place, a car or a brand (see the module's doc)."""
    span = text[h.start:h.end]
    before = _WORD_BEFORE.search(text, max(0, h.start - 40), h.start)
    word_before = fold(before.group(1)) if before else ""
    words = [fold(w) for w in span.split()]
    if not words:
        return False
    if (word_before in THING_NOUNS or words[0] in THING_NOUNS) and not any(oblique_name(w) for w in span.split()):
        return True  # "Крем Ив Роше", "магазин Пятёрочка"; not "купила крем Марии"
    if _vehicle(words, word_before, text, h.end):
        return True
    return len(words) == 1 and h.score < CUED_SCORE and words[0] in PLACES and _place_context(text, h, word_before)


def _vehicle(words: list[str], word_before: str, text: str, end: int) -> bool:
    """A car make and one of its models, the span holding either: "Renault Clio", "a Ford Focus"."""
    pairs = list(pairwise(words))
    if word_before:
        pairs.append((word_before, words[0]))
    after = _WORD_AFTER.match(text, end)
    if after:
        pairs.append((words[-1], fold(after.group(1))))
    return any(model in VEHICLES.get(make, ()) for make, model in pairs)


def _place_context(text: str, h: Hit, word_before: str) -> bool:
    """A place preposition before the word ("in Jackson", not "in Jackson's name"), or a region after it
    ("Florence, Alabama")."""
    if text.startswith(("'s", "’s"), h.end):
        return False
    if word_before in PLACE_PREPOSITIONS and text[h.start - len(word_before) - 1:h.start - 1].islower():
        return True
    region = _REGION_AFTER.match(text, h.end)
    return region is not None and any(fold(r) in REGIONS for r in (region.group(1), region.group(1).split()[0]))
