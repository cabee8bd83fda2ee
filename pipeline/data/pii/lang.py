"""Language of a record by script and stop words (tr / ru / en): cheap, no model."""
from __future__ import annotations

import re

# counted as runs (sum of their lengths): findall of single characters allocates one string per letter
_CYR_RUNS = re.compile(r"[А-Яа-яЁё]+")
_TR_LETTERS = "çğışöüÇĞİŞÖÜ"  # counted with str.count: a regex class of non-ASCII letters is 3x slower
_STRIP = ".,!?;:\"'()«»“”-—–"
_TR_WORDS = frozenset(
    "ve bir bu için ile da de mi mı çok ne ama gibi daha olarak var yok ben sen siz biz merhaba teşekkür "
    "teşekkürler lütfen nasıl şu evet hayır değil olan kadar sonra önce size bana numaram numarası hesap "
    "sipariş siparişim iyi günler tamam rica ederim eder misiniz mısınız hâlâ yardımcı olur istiyorum".split())
_EN_WORDS = frozenset(
    "the and is are was to of you your for with this that please hello thanks thank have has will can could "
    "would my our we it on in at be not from order account number i me".split())
assert not _TR_WORDS & _EN_WORDS  # a word counts for one language only


def detect_language(text: str, allowed: tuple[str, ...] = ("tr", "ru", "en")) -> str:
    """'ru' when Cyrillic letters dominate, else 'tr' or 'en' by stop words and Turkish letters; always one
    of `allowed` (the configured languages). Looks at the first 600 characters; words with digits or
    symbols (keys, tokens, URLs, e-mails) do not count."""
    words = [w for x in text[:600].split() if len(w := x.strip(_STRIP)) <= 20 and w.isalpha()]
    cleaned = "".join(words)
    cyr = sum(map(len, _CYR_RUNS.findall(cleaned, 0, 300)))
    if not cleaned:
        lang = allowed[0]
    elif cyr * 2 > min(len(cleaned), 300):  # Cyrillic letters are most of the characters
        lang = "ru"
    else:
        lowered = " ".join(words).lower().split()  # one lower() call, not one per word
        tr = 2 * sum(map(_TR_WORDS.__contains__, lowered))
        en = 2 * sum(map(_EN_WORDS.__contains__, lowered))
        tr += 0.5 * sum(map(cleaned.count, _TR_LETTERS))
        lang = "tr" if tr > en else "en"
    if lang in allowed:
        return lang
    if lang == "ru":
        return allowed[0]
    for alt in ("tr", "en"):
        if alt in allowed:
            return alt
    return allowed[0]
