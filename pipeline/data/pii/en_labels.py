"""English: the value of a shipping or billing label is a person's name when it holds a rare word ("Ship to: Nizam
Alanazi", "ship to: raiyan dhaka"-style lower case, "SHIP TO: RAY SALVADOR").

"ship to", "deliver to", "bill to" are no introductions in running text ("can you ship to Florence?"), so they
count only as a label: a colon after them, and a value of one to three words that ends the line, the text or
the clause (a comma or stop after it). The value is a name when no word of it is a stop, place or calendar
word (en_words.NOT_NAME), no word is an everyday English word unless a listed first name, and one word at least
is rare in English (Zipf < 3.0) or a listed first name: "Bill to: Accounts Payable" and "Ship to: Florence,
Alabama" stay.

The labels that name a person ("Caller:", "Name on the order:", "Account holder:", "Recipient:") count the same
way. A value is also a name when one word is an anchor of en_subject (a listed first name, or rare in English and
no place or stop word) and every other word may stand beside one, an everyday word too ("Caller: Bir
Quillbury", "name on the order: jane register", "Ship to: Pop Quillbury"). "Caller: unknown number" and
"Customer: premium tier" stay. A label with the word "name" in it says a name follows: two or three words none
of which is everyday ("Name on the order: Eleanor Barber", Zipf 3.8 both), or an anchor and title-case words
beside it ("Full name: Dedrick Here").
"""
from __future__ import annotations

import re

from pipeline.data.pii.en_subject import FIRM_WORDS, name_anchor, name_partner
from pipeline.data.pii.en_words import EVERYDAY_ZIPF, FIRST_NAMES, NOT_NAME, en_zipf
from pipeline.data.pii.text import Hit, fold

_RARE_ZIPF = 3.0
_WORD = r"[^\W\d_][^\W\d_'’-]*(?:[-'’][^\W\d_]+)?"
# a shipping label or a label that names a person, right before a colon, at a line or sentence start
_LABEL = re.compile(
    r"(?:^|[.!?;:\n][ \t]*)(?i:(?:ship|deliver|bill|sold|send)[ \t]+to"
    r"|(?:(?:customer|caller|client|contact|account|full|first|last)[ \t]+)?"
    r"name(?:[ \t]+on[ \t]+the[ \t]+(?:order|card|account|booking|ticket|parcel))?|caller|client|recipient"
    r"|addressee|account[ \t]+holder|card[ \t]*holder|contact[ \t]+person|attn)[ \t]*$")
# the last words of those labels: a cheap test at each colon before the regex
_LABEL_ENDS = ("to", "name", "caller", "client", "recipient", "addressee", "holder", "person", "attn", "order", "card",
               "account", "booking", "ticket", "parcel")
# the value: one to three words that end the line, the text or the clause
_VALUE = re.compile(rf"[ \t]*({_WORD}(?:[ \t]+{_WORD}){{0,2}})[ \t]*(?=[,.;]|[ \t]*$)", re.MULTILINE)


def label_names(text: str) -> list[Hit]:
    out = []
    k = text.find(":")
    while k >= 0:
        label = _LABEL.search(text, max(0, k - 40), k) \
            if text[max(0, k - 10):k].rstrip(" \t").lower().endswith(_LABEL_ENDS) else None
        if label is not None:
            m = _VALUE.match(text, k + 1)
            if m is not None and (_name_value([fold(w) for w in m.group(1).split()])
                                  or ("name" in label.group().lower() and _named_value(m.group(1).split()))):
                out.append(Hit(m.start(1), m.end(1), "PERSON", 0.7, "label"))
        k = text.find(":", k + 1)
    return out


def _name_value(keys: list[str]) -> bool:
    if any(k in FIRM_WORDS for k in keys):
        return False  # "Name on the order: Acme Corporation"
    if all(_may_be_name_word(k) for k in keys) and any(k in FIRST_NAMES or en_zipf(k) < _RARE_ZIPF for k in keys):
        return True
    return any(name_anchor(k) for k in keys) and all(name_anchor(k) or name_partner(k) for k in keys)


def _named_value(words: list[str]) -> bool:
    """The value of a label that says a name follows ("Name on the order:", "customer name:", "Full name:"): no
    word need be rare, none everyday ("Eleanor Barber", "hilary wang"); or a name anchor and the other words
    written as it is, title case, whatever they are as words ("Full name: Dedrick Here")."""
    keys = [fold(w) for w in words]
    if any(k in FIRM_WORDS for k in keys) or len(words) < 2:
        return False
    if all(_may_be_name_word(k) for k in keys):
        return True
    return any(name_anchor(k) for k in keys) and all(w[:1].isupper() and w[1:].islower() for w in words)


def _may_be_name_word(key: str) -> bool:
    return len(key) >= 2 and key not in NOT_NAME and (key in FIRST_NAMES or en_zipf(key) < EVERYDAY_ZIPF)
