"""The value of a Turkish full-name label is a person's name, whatever its words mean alone.

"İsim soyisim: hava tas", "AD SOYAD: HEDİYE ÇAKMAK", "Alıcı: Kırık Yekta, kapıda ödeme" are form fields: the
label says that the words after its colon, up to the end of the line or a comma, are a first name and a surname.
The recognizers take a word there when it is a name of the lists or rare; this signal takes the whole value of
one to three words, also when they are everyday words ("Hava", "Erdi", "Bar") or typed in lower case.

The owner of a line, an account or a request is a person too, with or without a colon: "Hat sahibi Kalem Kulak
olarak kayıtlı", "TALEP SAHİBİ KALEM KULAK", "Bu hattı Kalem Kulak kullanıyor". Without a colon the words must be
capitalized (or in capitals), or be two words before "olarak": "hat sahibi değişti" is no name.

A greeting and "ben" (I am) introduce the writer: "Merhaba, ben Kalem Bar." The sentence's one to three words
after it are the name when each may be a name's word (no inflected or verb form: "Merhaba, ben yine yazıyorum"
is none), an everyday word too ("Bar").
"""
from __future__ import annotations

import re

from pipeline.data.pii.name_signals import common_words
from pipeline.data.pii.text import Hit, fold
from pipeline.data.pii.tr_lower_subject import introduced_name_word

LABEL_SCORE = 0.85  # a form label is as sure as an introduction

# labels that name a person's full name (folded: ı as i); "isim" or "ad" alone label a product or a file too
_LABELS = ("ad soyad", "ad-soyad", "ad / soyad", "adi soyadi", "adiniz soyadiniz", "isim soyisim", "isim-soyisim",
           "isim soyad", "musteri adi", "müşteri adi", "müşteri adi soyadi", "alici", "alici adi", "teslim alan",
           "gönderen adi", "hesap sahibi", "yetkili kişi", "hat sahibi", "hattin sahibi", "talep sahibi",
           "kart sahibi", "sipariş sahibi", "abonelik sahibi", "sözleşme sahibi", "fatura sahibi")
# the owners' labels without a colon: the value ends at punctuation, "olarak" or a line end
_OWNERS = ("hesap", "hat", "hattin", "talep", "kart", "sipariş", "abonelik", "sözleşme", "fatura")
_OWNER_VALUE = re.compile(
    r"(?<![\w])(?:(?:" + "|".join(_OWNERS) + r")[ \t]+sahibi[ \t]+|bu[ \t]+hatti[ \t]+)"
    r"([^\W\d_]{2,}(?:[ \t][^\W\d_]{2,}){0,2}?)(?=[ \t]*(?:[,.;\n]|$)|[ \t]+(olarak|kullan)\w*)")
# a greeting and "ben" (I am), then the sentence's one to three words: "MERHABA, BEN KALEM BAR."
_INTRO_VALUE = re.compile(
    r"(?<![\w])(?:merhaba|selam|selamlar|iyi günler|günaydin)[ \t]*[,!]?[ \t]*ben[ \t,]+"
    r"([^\W\d_]{2,}(?:[ \t][^\W\d_]{2,}){0,2})[ \t]*(?=[,.!;\n]|$)")
_DURATION = re.compile("[dt][iu]r$")  # folded: -dır, -dir, -dur, -dür, -tır...
_LABEL_VALUE = re.compile(
    r"(?<![\w])(?:" + "|".join(re.escape(fold(x)) for x in sorted(_LABELS, key=len, reverse=True)) + r")[ \t]*:[ \t]*"
    r"([^\W\d_]{2,}(?:[ \t][^\W\d_]{2,}){0,2})[ \t]*(?=[,.;/\n]|$)")


def labelled_names(ctx) -> list[Hit]:
    """PERSON hits for the values of full-name labels in the text of `ctx` (a TextContext)."""
    out = [Hit(m.start(1), m.end(1), "PERSON", LABEL_SCORE, "label") for m in _LABEL_VALUE.finditer(ctx.norm)] \
        if ":" in ctx.text else []
    if "sahib" in ctx.norm or "hatti" in ctx.norm:
        out += [Hit(m.start(1), m.end(1), "PERSON", LABEL_SCORE, "label") for m in _OWNER_VALUE.finditer(ctx.norm)
                if (_capitalized(ctx.text[m.start(1):m.end(1)]) or (m.group(2) == "olarak" and " " in m.group(1))
                    or (m.group(2) == "kullan" and _rare_pair(ctx.text[m.start(1):m.end(1)])))
                and not any(h.start < m.end(1) and m.start(1) < h.end for h in out)]
    if "ben " in ctx.norm or "ben," in ctx.norm:
        out += [Hit(m.start(1), m.end(1), "PERSON", LABEL_SCORE, "label") for m in _INTRO_VALUE.finditer(ctx.norm)
                if all(introduced_name_word(w) for w in ctx.text[m.start(1):m.end(1)].split())]
    return out


def _rare_pair(value: str) -> bool:
    """Two words that may be a name's, one of them rare as a word: "bu hattı busenaz sayılı kullanıyor" in lower
    case ("bu hattı iki kişi kullanıyor" stays: both are everyday words)."""
    words = value.split()
    return len(words) == 2 and all(introduced_name_word(w) for w in words) \
        and any(_rare(fold(w)) for w in words)


def _rare(key: str) -> bool:
    """No common word of Turkish or English, nor one with a duration's "-DIr" ("süredir", "yıllardır")."""
    tr, en = common_words("tr"), common_words("en")
    return key not in tr and key not in en and not (_DURATION.search(key) and key[:-3] in tr)


def _capitalized(value: str) -> bool:
    """Every word of the value starts with a capital."""
    return all(w[:1].isupper() for w in value.split())
