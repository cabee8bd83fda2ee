"""The value of a Turkish full-name label is a person's name, whatever its words mean alone.

"İsim soyisim: hava tas", "AD SOYAD: HEDİYE ÇAKMAK", "Alıcı: Kırık Yekta, kapıda ödeme" are form fields: the
label says that the words after its colon, up to the end of the line or a comma, are a first name and a surname.
The recognizers take a word there when it is a name of the lists or rare; this signal takes the whole value of
one to three words, also when they are everyday words ("Hava", "Erdi", "Bar") or typed in lower case.
"""
from __future__ import annotations

import re

from pipeline.data.pii.text import Hit, fold

LABEL_SCORE = 0.85  # a form label is as sure as an introduction

# labels that name a person's full name (folded: ı as i); "isim" or "ad" alone label a product or a file too
_LABELS = ("ad soyad", "ad-soyad", "ad / soyad", "adi soyadi", "adiniz soyadiniz", "isim soyisim", "isim-soyisim",
           "isim soyad", "musteri adi", "müşteri adi", "müşteri adi soyadi", "alici", "alici adi", "teslim alan",
           "gönderen adi", "hesap sahibi", "yetkili kişi")
_LABEL_VALUE = re.compile(
    r"(?<![\w])(?:" + "|".join(re.escape(fold(x)) for x in sorted(_LABELS, key=len, reverse=True)) + r")[ \t]*:[ \t]*"
    r"([^\W\d_]{2,}(?:[ \t][^\W\d_]{2,}){0,2})[ \t]*(?=[,.;/\n]|$)")


def labelled_names(ctx) -> list[Hit]:
    """PERSON hits for the values of full-name labels in the text of `ctx` (a TextContext)."""
    if ":" not in ctx.text:
        return []
    return [Hit(m.start(1), m.end(1), "PERSON", LABEL_SCORE, "label") for m in _LABEL_VALUE.finditer(ctx.norm)]
