"""A capitalized word addressed after a Turkish reply word is a person's name: "Tamamdır Nizami, hallediyorum",
"Teşekkürler Sadettin!", "Peki Savcı, bakıyorum".

Support chats open a reply with a word of assent or thanks and the customer's name, then a comma or an
exclamation mark: a vocative. A capitalized word in that place is the name, an everyday word too ("Tamam
Savcı,"), unless it is a form of address ("Tamam Abi,", "Teşekkürler Efendim!", "Peki Arkadaşlar,") or a title,
job, stop or cue word. Greetings (Merhaba, Günaydın) are titles already (context.json name_titles_before).
"""
from __future__ import annotations

import re

from pipeline.data.pii.names import LATIN_LOWER
from pipeline.data.pii.text import Hit, fold

VOCATIVE_SCORE = 0.7

REPLY_WORDS = ("tamam", "tamamdır", "tamamdir", "peki", "evet", "hayır", "teşekkürler", "teşekkür ederim", "sağolun",
          "sağ olun", "rica ederim", "elbette", "tabii", "anladım", "memnuniyetle", "maalesef", "üzgünüm")
_VOCATIVE = re.compile(
    r"(?:^|(?<=[.!?:\n]))[ \t]*(?:" + "|".join(re.escape(fold(w)) for w in sorted(REPLY_WORDS, key=len, reverse=True))
    + rf")[ ,]+([{LATIN_LOWER}]{{3,}})[ \t]*[,!?]", re.M)  # matched in the folded text: the capital is tested apart;
# a label's value opens a sentence too ("Arama kaydı: Tamamdır X, hallediyorum")
# forms of address that are no names (folded)
_ADDRESS = frozenset(fold(w) for w in (
    "abi abla usta hoca efendi beyefendi hanımefendi kardeş dost can arkadaş müdür şef patron kaptan reis hocam "
    "bebek tatlım hayatım").split())
_PLURAL = re.compile(r"l[ae]r$")


def _name_shaped(key: str, not_a_name) -> bool:
    """No stop, title, cue or firm word, no form of address: one of _ADDRESS, alone or with a possessive
    ("hocam", "efendim", "kardeşim"; not "Kerem", "Selim"), or a plural ("arkadaşlar"). An everyday word may be a
    name here ("Savcı")."""
    if not_a_name(key) or key in _ADDRESS or _PLURAL.search(key):
        return False
    return not (key.endswith("m") and (key[:-1] in _ADDRESS or key[:-2] in _ADDRESS))


def vocative_names(ctx, not_a_name) -> list[Hit]:
    """PERSON hits for the names addressed after a reply word (`not_a_name(key)`: a stop, title, office, cue
    or firm word)."""
    if "," not in ctx.text and "!" not in ctx.text:
        return []
    out = []
    for m in _VOCATIVE.finditer(ctx.norm):
        s, e = m.span(1)
        if ctx.text[s].isupper() and _name_shaped(ctx.norm[s:e], not_a_name):
            out.append(Hit(s, e, "PERSON", VOCATIVE_SCORE, "vocative"))
    return out
