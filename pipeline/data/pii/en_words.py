"""English word frequencies for the English name signals (en_*.py).

The shared recognizers weigh a word against Turkish and English together (chats mix them); in a text known to be
English only English counts: "Nasir" is a Turkish word (nasır) but rare in English, "Bir" a Turkish word and no
English one. wordfreq's Zipf (log10 of the frequency per billion words; its wheel ships the lists) per word,
cached.
"""
from __future__ import annotations

from functools import lru_cache

from pipeline.data.pii.name_context import TITLES, TITLES_AFTER
from pipeline.data.pii.names import LATIN_AMBIGUOUS, LATIN_FIRST, NEVER, OFFICES, PLACE_BEFORE, STOP
from pipeline.data.pii.not_person import PLACES, THING_NOUNS, VEHICLES
from pipeline.data.pii.text import fold

EVERYDAY_ZIPF = 4.3  # name_signals' everyday word: "Clare" 3.7 and "Imran" 3.2 are below, "Frank" 4.8 above
CALENDAR = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july "
    "august september october november december".split())
# words people are addressed by that are no names ("Thanks Sunshine!", "Morning Team")
ADDRESS_TERMS = frozenset(
    "all everyone everybody team folks guys sir madam maam dear darling sweetie honey hun love mate pal buddy boss "
    "bro dude champ gents ladies sunshine friend friends again there legend chief gorgeous handsome beautiful "
    "sweetheart babe bestie fam doc".split())
NOT_NAME = STOP | NEVER | TITLES | TITLES_AFTER | OFFICES | PLACE_BEFORE | THING_NOUNS | PLACES \
    | frozenset(VEHICLES) | CALENDAR | ADDRESS_TERMS
FIRST_NAMES = LATIN_FIRST | LATIN_AMBIGUOUS


@lru_cache(maxsize=65536)
def en_zipf(word: str) -> float:
    import wordfreq

    return wordfreq.zipf_frequency(word, "en")


def name_like(word: str, below: float = EVERYDAY_ZIPF) -> bool:
    """A capitalized word ("Deepu", not "DEEPU" or "McX") that may be a name in English text: a listed first
    name, or an English word rarer than Zipf `below`; never a stop, title, place, calendar or address word."""
    key = fold(word)
    if len(key) < 3 or not word[:1].isupper() or not word[1:].islower() or key in NOT_NAME:
        return False
    return key in FIRST_NAMES or en_zipf(key) < below
