"""Synthetic mixed records for bench/tokens: chat, instruction and plain text in Turkish, Russian and English.

Every record is a function of (seed, index). Mix: 40% chat (1-3 user/assistant exchanges, a system message in
a third of them, a tool call in 5%), 30% instruction (user + assistant, as normalized from alpaca), 30% text.
Words come from a Zipf-distributed vocabulary per language: real frequent words first, then made-up words
from the language's syllables (so the tokenizer meets the scripts, diacritics and rare words of real text).
Lengths are log-normal: user turns ~45 words (median), answers ~110, texts ~220, with a long tail (capped at
6000 words), so a few records exceed common max lengths.
"""
from __future__ import annotations

import random

import numpy as np

KINDS = (("chat", 0.4), ("instruction", 0.3), ("text", 0.3))
LANGS = ("tr", "ru", "en")

_COMMON = {
    "tr": ("ve bir bu da de için ile çok ne gibi daha olarak sonra kadar ama her şey ben sen o biz siz onlar "
           "var yok değil olan oldu ancak çünkü nasıl neden zaman gün yıl iş insan ülke şehir İstanbul Ankara "
           "güzel büyük küçük yeni eski önemli gerekli mümkün bilgi sistem hizmet müşteri sipariş ödeme "
           "teşekkürler lütfen merhaba evet hayır şimdi bugün yarın dün çalışma öğrenci öğretmen okul kitap "
           "soru cevap örnek açıklama ürün fiyat kargo teslimat iade hesap şifre güvenlik"),
    "ru": ("и в не на я что с он как это по но из у за от к так же все она мы вы они бы только был было "
           "может когда очень уже если или ещё нет да время год день человек работа дело жизнь Москва Россия "
           "вопрос ответ пример система данные услуга клиент заказ оплата спасибо пожалуйста здравствуйте "
           "сейчас сегодня завтра вчера новый большой маленький важный нужно можно информация компания "
           "продукт цена доставка возврат счёт пароль безопасность студент учитель школа книга"),
    "en": ("the of and to a in is that for it as was with be by on not he this are or his from at which but "
           "have an they you were her she there been one all we their has would when if so no will can more "
           "about time people year way day man work system data service customer order payment thanks please "
           "hello yes now today tomorrow new large small important need information company product price "
           "delivery return account password security student teacher school book question answer example"),
}
_SYLLABLES = {
    "tr": "ka la me ri sı nu ça şe lı ğu öz ük ba de gi ol ya tü mü an er ın ün ır ak ek ik ok ar ler lar dir".split(),
    "ru": "ка ло ми не ру са ти по де гу ва зе би фо ха ют ой ей ий ов ск ст пр ны ть ся ра то ще жи".split(),
    "en": "ka lo mi ne ru sa ti po de gu va ze bi fo ha tion ing er ed ly th st pr con pre ment able".split(),
}


def _vocabulary(lang: str, size: int = 20_000) -> tuple[np.ndarray, np.ndarray]:
    rng = random.Random(f"vocab-{lang}")
    words = list(dict.fromkeys(_COMMON[lang].split()))
    seen = set(words)
    syl = _SYLLABLES[lang]
    while len(words) < size:
        w = "".join(rng.choice(syl) for _ in range(rng.choice((1, 2, 2, 3, 3, 4))))
        if w not in seen:
            seen.add(w)
            words.append(w)
    cum = np.cumsum(1.0 / np.arange(1, size + 1) ** 1.05)
    return np.array(words, dtype=object), cum / cum[-1]


_VOCAB = {lang: _vocabulary(lang) for lang in LANGS}
_PUNCT_ARR = np.array([",", ",", ".", ".", ".", "?", "!", ":", ";"], dtype=object)


def _words(rng: np.random.Generator, lang: str, n: int) -> str:
    """n words: Zipf draws, ~2% numbers, punctuation every ~8 words, a line break now and then."""
    words, cum = _VOCAB[lang]
    picked = words[np.searchsorted(cum, rng.random(n))].copy()
    numbers = rng.random(n) < 0.02
    if numbers.any():
        picked[numbers] = [str(v) for v in rng.integers(1, 10_000, int(numbers.sum()))]
    punct = rng.random(n) < 0.12
    punct[-1] = False
    if punct.any():
        marks = _PUNCT_ARR[rng.integers(0, len(_PUNCT_ARR), int(punct.sum()))]
        breaks = rng.random(int(punct.sum())) < 0.06
        marks = np.where(breaks, marks + "\n", marks + " ")
        picked[punct] = picked[punct] + marks
    sep = np.where(punct, "", " ")
    sep[-1] = ""
    text = "".join((picked + sep).tolist())
    return text[:1].upper() + text[1:] + "."


def _length(rng: np.random.Generator, median: float, sigma: float = 0.9, cap: int = 6000) -> int:
    return max(1, min(cap, int(np.exp(rng.normal(0, sigma)) * median)))


LOOKUP_TOOL = {"type": "function", "function": {
    "name": "lookup", "description": "Search the knowledge base",
    "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "What to look up"}},
                   "required": ["query"]}}}


def make_record(index: int, seed: int = 0) -> dict:
    rng = np.random.default_rng([seed, index])
    r = rng.random()
    kind = "chat" if r < 0.4 else "instruction" if r < 0.7 else "text"
    lang = LANGS[index % 3]
    rec = {"id": f"r{index}", "kind": kind, "messages": None, "tools": None, "text": None,
           "source": {"file": f"{kind}-{lang}.jsonl", "line": index}, "meta": "{}"}
    if kind == "text":
        rec["text"] = _words(rng, lang, _length(rng, 220))
        return rec
    msgs = []
    if kind == "chat" and rng.random() < 0.33:
        msgs.append({"role": "system", "content": _words(rng, lang, _length(rng, 20, 0.5, 200))})
    turns = 1 if kind == "instruction" else int(rng.choice((1, 1, 2, 2, 3)))
    for t in range(turns):
        msgs.append({"role": "user", "content": _words(rng, lang, _length(rng, 45))})
        if kind == "chat" and rng.random() < 0.05:
            # the record form (pipeline/core/records.py): transformers' tool-call form, arguments an object, the
            # tool result with the call's id and name, and the tool's definition in `tools`
            call_id = f"call{index}x{t}"
            msgs.append({"role": "assistant", "content": "",
                         "tool_calls": [{"type": "function", "id": call_id, "function": {
                             "name": "lookup", "arguments": {"query": _words(rng, lang, 4)}}}]})
            msgs.append({"role": "tool", "content": _words(rng, lang, _length(rng, 30)), "tool_call_id": call_id,
                         "name": "lookup"})
            rec["tools"] = [LOOKUP_TOOL]
        msgs.append({"role": "assistant", "content": _words(rng, lang, _length(rng, 110))})
    rec["messages"] = msgs
    return rec


def make_records(n: int, seed: int = 0) -> list[dict]:
    return [make_record(i, seed) for i in range(n)]
