"""Synthetic corpus with planted exact duplicates, near duplicates and hard negatives (for bench/dedup).

Every record is a function of (seed, index) alone, so shards can be generated in parallel and any record can
regenerate the original it copies. Records are ~1 KB: half plain text, half chat (user + assistant), built from
a Zipf-distributed made-up vocabulary, so unrelated records share almost no word 5-grams.

Planted, per train record (by index, drawn from the record's own RNG):
  original   82%  a fresh document
  exact       5%  a copy of an earlier original with case/whitespace changes (exact after normalization)
  near        9%  a copy of an earlier original with word edits, sentence reordering, truncation or a mix
  hard_neg    4%  shares the first 20-45% of an earlier original, then new text (word-5-gram Jaccard < 0.5)
Validation records (``_eval`` True) follow the train records: 40% exact copies of a train original, 30% near
copies, 30% fresh documents.

Ground truth per record: order, family (index of the original it derives from, or its own index), kind of
plant, and the word-5-gram Jaccard with that original (computed exactly, with the tokenization the pipeline
uses: case-folded Unicode word tokens, role markers included).
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

VERSION = 2  # bump when generated records change (the bench's corpus cache is keyed by it)
TYPES = ("original", "exact", "near", "hard_neg", "eval_exact", "eval_near", "eval_fresh")
T_ORIG, T_EXACT, T_NEAR, T_NEG, T_EVAL_EXACT, T_EVAL_NEAR, T_EVAL_FRESH = range(7)
RATES = ((T_ORIG, 0.82), (T_EXACT, 0.05), (T_NEAR, 0.09), (T_NEG, 0.04))
EVAL_RATES = ((T_EVAL_EXACT, 0.4), (T_EVAL_NEAR, 0.3), (T_EVAL_FRESH, 0.3))
LOOKBACK = 50_000  # duplicates copy an original at most this many records earlier

_SYLLABLES = ("ka lo mi ne ru sa ti po de gu va ze bi fo ha je ku xi ya wo an el is or un er ar in "
              "ça şe lı ğu öz ük ра то ми зе").split()
_WORD = re.compile(r"\w+")


def _vocabulary(size: int = 40_000) -> tuple[list[str], list[float]]:
    rng = random.Random(12345)
    words, seen = [], set()
    while len(words) < size:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 3, 4))))
        if w not in seen:
            seen.add(w)
            words.append(w)
    cum, total = [], 0.0
    for k in range(size):
        total += 1.0 / (k + 1) ** 1.05
        cum.append(total)
    return words, cum


VOCAB, CUM = _vocabulary()


@dataclass
class Doc:
    kind: str  # "text" or "chat"
    sentences: list[list[str]]  # chat: the first `user` sentences are the user's turn
    user: int = 0


def _sentence(rng: random.Random) -> list[str]:
    return rng.choices(VOCAB, cum_weights=CUM, k=rng.randint(8, 20))


def _fresh(rng: random.Random, words: int = 160) -> Doc:
    sentences, n = [], 0
    while n < words:
        s = _sentence(rng)
        sentences.append(s)
        n += len(s)
    if rng.random() < 0.5:
        return Doc("chat", sentences, user=2)
    return Doc("text", sentences)


def _render_sentences(sentences: list[list[str]]) -> str:
    out = []
    for i, s in enumerate(sentences):
        if not s:
            continue
        out.append(" ".join([s[0].capitalize(), *s[1:]]) + ("." if i % 4 else ","))
        if i % 5 == 4:
            out.append("\n\n")
    return " ".join(out).replace(" \n\n ", "\n\n").strip()


def to_record(doc: Doc, index: int, is_eval: bool, shard: str) -> dict:
    base = {"id": f"{'val' if is_eval else 'tr'}-{index:08d}", "source": {"file": shard, "line": index},
            "meta": "{}", "_order": index, "_eval": is_eval}
    if doc.kind == "chat":
        return base | {"kind": "chat", "text": None, "messages": [
            {"role": "user", "content": _render_sentences(doc.sentences[:doc.user])},
            {"role": "assistant", "content": _render_sentences(doc.sentences[doc.user:])}]}
    return base | {"kind": "text", "text": _render_sentences(doc.sentences), "messages": None}


def _trainer_text(rec: dict) -> str:
    if rec.get("messages") is not None:
        return "\n".join(f"<|{m['role']}|>\n{m['content']}" for m in rec["messages"])
    return rec["text"]


def word_shingles(rec: dict, n: int = 5) -> set:
    tokens = _WORD.findall(_trainer_text(rec).casefold())
    return {tuple(tokens[i:i + n]) for i in range(max(1, len(tokens) - n + 1))}


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def _rng(seed: int, index: int, salt: int = 0) -> random.Random:
    return random.Random((seed * 1_000_003 + index) * 7 + salt)


def plant_type(seed: int, index: int, n_train: int) -> int:
    if index >= n_train:
        x = _rng(seed, index, 1).random()
        rates = EVAL_RATES
    else:
        x = _rng(seed, index, 1).random()
        rates = RATES
    for t, p in rates:
        if x < p:
            return t
        x -= p
    return rates[-1][0]


def original_doc(seed: int, index: int) -> Doc:
    return _fresh(_rng(seed, index, 2))


def _pick_original(seed: int, index: int, n_train: int, rng: random.Random) -> int | None:
    hi = min(index, n_train)
    lo = max(0, hi - LOOKBACK)
    for _ in range(50):
        if hi <= lo:
            return None
        i = rng.randrange(lo, hi)
        if plant_type(seed, i, n_train) == T_ORIG:
            return i
    return None


def _near_variant(doc: Doc, rng: random.Random) -> Doc:
    sentences = [list(s) for s in doc.sentences]
    how = rng.choice(("edit", "edit", "reorder", "truncate", "mix"))
    n_words = sum(len(s) for s in sentences)
    if how in ("edit", "mix"):
        for _ in range(rng.randint(1, 6 if how == "edit" else 3)):
            si = rng.randrange(len(sentences))
            s = sentences[si]
            op = rng.random()
            j = rng.randrange(len(s))
            if op < 0.5:
                s[j] = rng.choices(VOCAB, cum_weights=CUM)[0]
            elif op < 0.75:
                s.insert(j, rng.choices(VOCAB, cum_weights=CUM)[0])
            elif len(s) > 2:
                del s[j]
    if how in ("reorder", "mix"):
        user = doc.user
        lo = user if doc.kind == "chat" else 0
        i, j = rng.sample(range(lo, len(sentences)), 2)
        sentences[i], sentences[j] = sentences[j], sentences[i]
    if how in ("truncate", "mix"):
        drop = int(n_words * rng.uniform(0.02, 0.18 if how == "truncate" else 0.06))
        while drop > 0 and len(sentences) > doc.user + 1:
            last = sentences[-1]
            if len(last) <= drop:
                drop -= len(last)
                sentences.pop()
            else:
                del last[len(last) - drop:]
                drop = 0
    return Doc(doc.kind, sentences, doc.user)


def _exact_variant(rec: dict, rng: random.Random) -> dict:
    def vary(s: str) -> str:
        words = s.split(" ")
        for _ in range(rng.randint(1, 4)):
            j = rng.randrange(len(words))
            new = words[j].upper() if rng.random() < 0.5 else words[j].capitalize()
            if new.casefold() == words[j].casefold():  # "ı".upper() is "I": not the same word case folded
                words[j] = new
        out = " ".join(words)
        return ("  " + out + " \n") if rng.random() < 0.5 else out.replace(" ", "  ", 3)

    rec = dict(rec)
    if rec["messages"] is not None:
        rec["messages"] = [dict(m, content=vary(m["content"])) for m in rec["messages"]]
    else:
        rec["text"] = vary(rec["text"])
    return rec


def _hard_negative(doc: Doc, rng: random.Random) -> Doc:
    keep = max(1, int(len(doc.sentences) * rng.uniform(0.2, 0.45)))
    new = _fresh(rng, words=160 - sum(len(s) for s in doc.sentences[:keep]))
    return Doc(doc.kind, [list(s) for s in doc.sentences[:keep]] + new.sentences, doc.user)


def make_record(seed: int, index: int, n_train: int, shard: str) -> tuple[dict, tuple]:
    """(record, truth) where truth = (order, type, family, jaccard with the family's original)."""
    t = plant_type(seed, index, n_train)
    is_eval = index >= n_train
    rng = _rng(seed, index, 3)
    if t in (T_ORIG, T_EVAL_FRESH):
        return to_record(original_doc(seed, index), index, is_eval, shard), (index, t, index, 1.0)
    src = _pick_original(seed, index, n_train, rng)
    if src is None:  # nothing to copy yet: a fresh document
        t = T_EVAL_FRESH if is_eval else T_ORIG
        return to_record(original_doc(seed, index), index, is_eval, shard), (index, t, index, 1.0)
    orig = original_doc(seed, src)
    orig_rec = to_record(orig, src, False, shard)
    if t in (T_EXACT, T_EVAL_EXACT):
        rec = _exact_variant(to_record(orig, index, is_eval, shard), rng)
        return rec, (index, t, src, 1.0)
    if t in (T_NEAR, T_EVAL_NEAR):
        rec = to_record(_near_variant(orig, rng), index, is_eval, shard)
    else:
        rec = to_record(_hard_negative(orig, rng), index, is_eval, shard)
    j = jaccard(word_shingles(rec), word_shingles(orig_rec))
    family = index if t == T_NEG else src
    return rec, (index, t, family, j)


def make_shard(seed: int, start: int, stop: int, n_train: int, shard: str) -> tuple[list[dict], list[tuple]]:
    records, truth = [], []
    for i in range(start, stop):
        rec, tr = make_record(seed, i, n_train, shard)
        records.append(rec)
        truth.append(tr)
    return records, truth
