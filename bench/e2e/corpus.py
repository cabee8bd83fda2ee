"""A synthetic mixed corpus for the end-to-end benchmark: Alpaca, ShareGPT, OpenAI messages and plain
text (one big file each, so large files are split into byte-range shards), Turkish, Russian and
English, ~1 KB per record, with 3% exact and 3% near duplicates, 5% records holding personal data and
0.2% broken lines. Deterministic for a given size and seed."""
from __future__ import annotations

import json
import random
from pathlib import Path

VOCAB = {
    "tr": ("sipariş kargo fatura iade teslimat müşteri hesap şifre kampanya indirim abonelik ödeme adres "
           "ürün destek talep durum mağaza süre iptal değişim garanti taksit kart bildirim").split(),
    "ru": ("заказ доставка возврат счёт оплата клиент аккаунт пароль тариф скидка подписка адрес товар "
           "поддержка заявка статус магазин срок отмена обмен гарантия карта уведомление").split(),
    "en": ("order shipping invoice refund delivery customer account password campaign discount subscription "
           "payment address product support ticket status store period cancel exchange warranty card").split(),
}
PII = {
    "tr": lambda r: f"TC kimlik {_tckn(r)}, telefon +90 5{r.randint(30, 59)} {r.randint(100, 999)} {r.randint(10, 99)} {r.randint(10, 99)}",
    "ru": lambda r: f"телефон +7 9{r.randint(10, 99)} {r.randint(100, 999)}-{r.randint(10, 99)}-{r.randint(10, 99)}, почта ivan{r.randint(1, 999)}@mail.example",
    "en": lambda r: f"email john.{r.randint(1, 9999)}@example.com, card 4111 1111 1111 1111",
}


def _tckn(r: random.Random) -> str:
    d = [r.randint(1, 9)] + [r.randint(0, 9) for _ in range(8)]
    d.append(((d[0] + d[2] + d[4] + d[6] + d[8]) * 7 - (d[1] + d[3] + d[5] + d[7])) % 10)
    d.append(sum(d) % 10)
    return "".join(map(str, d))


def _text(r: random.Random, lang: str, words: int) -> str:
    vocab = VOCAB[lang]
    return " ".join(r.choice(vocab) for _ in range(words)).capitalize() + "."


def _record(r: random.Random, fmt: str) -> dict | str:
    lang = r.choice(("tr", "ru", "en"))
    q, a = _text(r, lang, 40), _text(r, lang, 100)
    if r.random() < 0.05:
        q += " " + PII[lang](r)
    if fmt == "alpaca":
        return {"instruction": q, "input": "", "output": a}
    if fmt == "sharegpt":
        return {"conversations": [{"from": "human", "value": q}, {"from": "gpt", "value": a[: len(a) // 2]},
                                  {"from": "human", "value": _text(r, lang, 10)}, {"from": "gpt", "value": a[len(a) // 2:]}]}
    if fmt == "openai":
        return {"messages": [{"role": "system", "content": "You are a support agent."},
                             {"role": "user", "content": q}, {"role": "assistant", "content": a}]}
    return q + " " + a


def _near(value, r: random.Random):
    """A near duplicate: one word of the longest string replaced by its reverse."""
    def edit(text: str) -> str:
        words = text.split(" ")
        i = r.randrange(len(words) // 2, len(words))
        words[i] = words[i][::-1]
        return " ".join(words)

    if isinstance(value, str):
        return edit(value)
    value = json.loads(json.dumps(value, ensure_ascii=False))
    turns = value.get("conversations") or value.get("messages")
    if turns:
        key = "value" if "conversations" in value else "content"
        longest = max(turns, key=lambda t: len(t[key]))
        longest[key] = edit(longest[key])
    else:
        value["output"] = edit(value["output"])
    return value


def write_corpus(out: Path, records: int, seed: int = 0) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    r = random.Random(seed)
    formats = ("alpaca", "sharegpt", "openai", "text")
    paths = [out / f"{f}.{'txt' if f == 'text' else 'jsonl'}" for f in formats]
    handles = [open(p, "w", encoding="utf-8") for p in paths]
    recent: list[list] = [[] for _ in formats]
    for i in range(records):
        k = i % len(formats)
        roll = r.random()
        if roll < 0.03 and recent[k]:
            value = r.choice(recent[k])
        elif roll < 0.06 and recent[k]:
            value = _near(r.choice(recent[k]), r)
        else:
            value = _record(r, formats[k])
        if len(recent[k]) < 2000:
            recent[k].append(value)
        else:
            recent[k][r.randrange(2000)] = value
        if roll > 0.998:
            handles[k].write('{"broken": \n')
        elif formats[k] == "text":
            handles[k].write(value.replace("\n", " ") + "\n")
        else:
            handles[k].write(json.dumps(value, ensure_ascii=False) + "\n")
    for h in handles:
        h.close()
    return paths
