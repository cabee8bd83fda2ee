"""Capitalized words that Turkish context makes a thing, not a person: a product label's value, a device's failure.

"Ürün adı: Kırmızı Kalem" is a label ("adı", name) whose owner is a product: its value is no person's name,
while "Müşteri adı:" and "Adı:" alone still introduce one. "Xiaomi Redmi şarj olmuyor": two rare capitalized
words are a name by rarity alone, but the clause after them says what a device does ("does not charge",
"does not work", "broke down"), and no person's verb is in it. A hit found by rarity alone there is dropped.
"""
from __future__ import annotations

import re

from pipeline.data.pii.tr_later import clause_of_subject
from pipeline.data.pii.tr_spelling import person_verb

# folded (ı as i): the nouns whose "adı" (name) labels a thing
_THING_LABEL = re.compile(
    r"(?<!\w)(?:ürün|ürünün|urun|dosya|dosyanin|model|paket|paketin|şirket|şirketin|firma|firmanin|mağaza|marka|"
    r"kampanya|uygulama|cihaz|cihazin|proje|projenin|tarife|hizmet|kurum|kurumun|okul|otel|restoran|kitap|"
    r"kitabin|film|şarki|oyun|kanal|sayfa|grup|ekip|takim|site|sitenin)[ \t]+adi[ \t]*[:\-]?[ \t]*$")
# a device's verbs, folded: charge, work, open, break, heat, freeze, close, blink, connect
_THING_VERB = re.compile(r"(?:şarj|çaliş|açil|bozul|isin|don[au]|kapan|yanip|bağlan|kilitlen|reset|arizal)")


def thing_labelled(norm: str, start: int) -> bool:
    """The folded text right before `start` is a thing's name label ("ürün adı: ")."""
    return _THING_LABEL.search(norm, max(0, start - 30), start) is not None


def thing_subject(text: str, end: int) -> bool:
    """The words ending at `end` open a clause that says what a device does, with no person's verb in it."""
    clause = clause_of_subject(text, end)
    return clause is not None and any(_THING_VERB.match(w) for w in clause) and not person_verb(clause)
