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

Other shapes (``shape``), the worst cases for the LSH buckets, with the same kinds of ground truth:
  templated  every original fills one of a few fixed templates (support replies: fixed sentences around a
             name, an id, a product, a date and a free-text part); one template is 40% of the records. Two
             fills of a template share most of their 5-grams (Jaccard 0.3-0.75, below the threshold), so the
             LSH bands that fall on the fixed text hold a large share of the corpus in one bucket.
             86% originals, 5% exact and 9% near copies of an earlier original.
  neardup    mostly duplicates: 16% originals, 17% exact and 67% near copies; a third of the copies copy one
             of the first 20 originals, so those clusters (and their buckets) grow with the corpus.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import lru_cache

VERSION = 2  # bump when generated records change (the bench's corpus cache is keyed by it)
TYPES = ("original", "exact", "near", "hard_neg", "eval_exact", "eval_near", "eval_fresh")
T_ORIG, T_EXACT, T_NEAR, T_NEG, T_EVAL_EXACT, T_EVAL_NEAR, T_EVAL_FRESH = range(7)
RATES = ((T_ORIG, 0.82), (T_EXACT, 0.05), (T_NEAR, 0.09), (T_NEG, 0.04))
EVAL_RATES = ((T_EVAL_EXACT, 0.4), (T_EVAL_NEAR, 0.3), (T_EVAL_FRESH, 0.3))
LOOKBACK = 50_000  # duplicates copy an original at most this many records earlier
SHAPES = ("planted", "templated", "neardup")
SHAPE_RATES = {"planted": RATES, "templated": ((T_ORIG, 0.86), (T_EXACT, 0.05), (T_NEAR, 0.09)),
               "neardup": ((T_ORIG, 0.16), (T_EXACT, 0.17), (T_NEAR, 0.67))}
POPULAR = 20  # neardup: originals among the first records that a third of the copies copy
POPULAR_SHARE = 1 / 3
TEMPLATE_WEIGHTS = (0.4, 0.2, 0.15, 0.1, 0.1, 0.05)
TEMPLATE_FREE_WORDS = (4, 10, 22, 6, 30, 18)  # words of the free-text slot per template
TEMPLATE_SENTENCE_WORDS = ((28, 38), (12, 22), (12, 22), (20, 30), (12, 22), (16, 26))  # of a fixed sentence

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


def plant_type(seed: int, index: int, n_train: int, shape: str = "planted") -> int:
    if index >= n_train:
        x = _rng(seed, index, 1).random()
        rates = EVAL_RATES
    else:
        x = _rng(seed, index, 1).random()
        rates = SHAPE_RATES[shape]
    for t, p in rates:
        if x < p:
            return t
        x -= p
    return rates[-1][0]


@lru_cache(maxsize=4)
def _templates(seed: int) -> list[list]:
    """Per template, its items: a fixed sentence (list of words) or a slot name, alternating."""
    rng = random.Random(seed * 31 + 7)
    slots = ("name", "id", "product", "date", "free")
    out = []
    for t in range(len(TEMPLATE_WEIGHTS)):
        items = []
        for k in range(rng.randint(5, 7)):
            items.append(rng.choices(VOCAB, cum_weights=CUM, k=rng.randint(*TEMPLATE_SENTENCE_WORDS[t])))
            items.append(slots[(k + t) % len(slots)])
        out.append(items)
    return out


def _templated(seed: int, rng: random.Random) -> Doc:
    t = rng.choices(range(len(TEMPLATE_WEIGHTS)), weights=TEMPLATE_WEIGHTS)[0]
    sentences = []
    for item in _templates(seed)[t]:
        if isinstance(item, list):
            sentences.append(list(item))
            continue
        if item == "name":
            fill = rng.choices(VOCAB[200:], k=2)
        elif item == "id":
            fill = [str(rng.randrange(10 ** 6, 10 ** 7))]
        elif item == "product":
            fill = rng.choices(VOCAB, cum_weights=CUM, k=rng.randint(1, 3))
        elif item == "date":
            fill = [str(rng.randint(1, 28)), VOCAB[rng.randrange(12)], str(rng.randint(2019, 2026))]
        else:
            fill = rng.choices(VOCAB, cum_weights=CUM, k=TEMPLATE_FREE_WORDS[t] + rng.randint(-3, 3))
        sentences[-1].extend(fill)
    return Doc("chat" if t % 2 else "text", sentences, user=1 if t % 2 else 0)


def original_doc(seed: int, index: int, shape: str = "planted") -> Doc:
    if shape == "templated":
        return _templated(seed, _rng(seed, index, 2))
    return _fresh(_rng(seed, index, 2))


@lru_cache(maxsize=4)
def _popular(seed: int, n_train: int) -> tuple[int, ...]:
    return tuple([i for i in range(min(n_train, 400)) if plant_type(seed, i, n_train, "neardup") == T_ORIG][:POPULAR])


def _pick_original(seed: int, index: int, n_train: int, rng: random.Random, shape: str = "planted") -> int | None:
    hi = min(index, n_train)
    lo = max(0, hi - LOOKBACK)
    if shape == "neardup" and rng.random() < POPULAR_SHARE:
        popular = [i for i in _popular(seed, n_train) if i < hi]
        if popular:
            return rng.choice(popular)
    for _ in range(50):
        if hi <= lo:
            return None
        i = rng.randrange(lo, hi)
        if plant_type(seed, i, n_train, shape) == T_ORIG:
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


def make_record(seed: int, index: int, n_train: int, shard: str, shape: str = "planted") -> tuple[dict, tuple]:
    """(record, truth) where truth = (order, type, family, jaccard with the family's original)."""
    t = plant_type(seed, index, n_train, shape)
    is_eval = index >= n_train
    rng = _rng(seed, index, 3)
    if t in (T_ORIG, T_EVAL_FRESH):
        return to_record(original_doc(seed, index, shape), index, is_eval, shard), (index, t, index, 1.0)
    src = _pick_original(seed, index, n_train, rng, shape)
    if src is None:  # nothing to copy yet: a fresh document
        t = T_EVAL_FRESH if is_eval else T_ORIG
        return to_record(original_doc(seed, index, shape), index, is_eval, shard), (index, t, index, 1.0)
    orig = original_doc(seed, src, shape)
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


def make_shard(seed: int, start: int, stop: int, n_train: int, shard: str,
               shape: str = "planted") -> tuple[list[dict], list[tuple]]:
    records, truth = [], []
    for i in range(start, stop):
        rec, tr = make_record(seed, i, n_train, shard, shape)
        records.append(rec)
        truth.append(tr)
    return records, truth
