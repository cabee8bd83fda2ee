"""Shingle sketches (pipeline.data.dedup.sketch) and the verification that uses them."""
from __future__ import annotations

import random

import numpy as np
import pytest

from pipeline.core.config import DedupConfig
from pipeline.data import dedup as D
from pipeline.data.dedup.params import sketch_window
from pipeline.data.dedup.sketch import sketch_arrays

VOCAB = [f"w{i}" for i in range(3000)]


def test_distinct_sorted_and_bottom_k_keep_the_smallest_distinct_values():
    rng = np.random.default_rng(0)
    sets = [rng.integers(0, 60, int(rng.integers(0, 40))).astype(np.uint32) for _ in range(300)]
    values, counts = D.distinct_sorted(np.concatenate(sets), np.array([len(s) for s in sets]))
    sketch, sizes = D.bottom_k(values, counts, 16)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    for i, s in enumerate(sets):
        assert sketch[offsets[i]:offsets[i + 1]].tolist() == sorted(set(s.tolist()))[:16]


@pytest.mark.parametrize("k", [8, 16, 40])
def test_pair_jaccard_is_exact_for_whole_sets_and_bottom_k_otherwise(k):
    rng = np.random.default_rng(k)
    sets = [rng.integers(0, 60, int(rng.integers(0, 40))).astype(np.uint32) for _ in range(300)]
    sketch, sizes = D.bottom_k(*D.distinct_sorted(np.concatenate(sets), np.array([len(s) for s in sets])), k)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    a, b = rng.integers(0, 300, 2000), rng.integers(0, 300, 2000)
    got = D.pair_jaccard(sketch, offsets, a, b, k)
    for x, y, j in zip(a.tolist(), b.tolist(), got.tolist()):
        sa, sb = set(sets[x].tolist()), set(sets[y].tolist())
        if len(sa) < k and len(sb) < k:
            want = len(sa & sb) / len(sa | sb) if sa | sb else 0.0
        else:  # the share of the union's k smallest values that are in both
            union = sorted(sa | sb)[:k]
            want = sum(v in sa and v in sb for v in union) / len(union)
        assert j == pytest.approx(want, abs=1e-12)


def _rec(words: list[str], order: int) -> dict:
    return {"id": f"r{order}", "kind": "text", "messages": None, "text": " ".join(words),
            "source": {"file": "train.jsonl", "line": order}, "meta": "{}", "_order": order, "_eval": False}


def _shingles(words: list[str]) -> set:
    return {tuple(words[i:i + 5]) for i in range(len(words) - 4)}


def test_pairs_near_the_threshold_are_decided_by_their_true_jaccard(tmp_path):
    """Copies with 2-4 words replaced: true Jaccard 0.7-0.9 with their original. A MinHash estimate of 128
    values misses some above 0.8 and passes some below; with the sketches, every copy below 0.8 is kept and
    every one at 0.8 or more removed, but where the estimate is under the sketch window (by design: 1 in 44 at
    0.8, 1 in 15,000 at 0.85)."""
    rng = random.Random(5)
    records, true_j = [], {}
    for p in range(300):
        words = rng.choices(VOCAB, k=150)
        copy = list(words)
        for _ in range(rng.choice((2, 3, 3, 4))):
            copy[rng.randrange(len(copy))] = rng.choice(VOCAB)
        records += [_rec(words, 2 * p), _rec(copy, 2 * p + 1)]
        sa, sb = _shingles(words), _shingles(copy)
        true_j[f"r{2 * p + 1}"] = len(sa & sb) / len(sa | sb)
    keys = D.compute_keys(records, DedupConfig())
    sigs = D.signature_array(keys.column("signature"), 128)
    estimate = {f"r{i + 1}": float((sigs[i] == sigs[i + 1]).mean()) for i in range(0, len(records), 2)}
    # The case this is about is in the data: the estimate alone would decide these wrongly.
    assert any(true_j[r] >= 0.8 > estimate[r] for r in true_j)
    assert any(true_j[r] < 0.8 <= estimate[r] for r in true_j)
    path = D.write_keys(keys, tmp_path / "keys.parquet")
    removed = set(D.find_duplicates([path], DedupConfig(), str(tmp_path)).removed.column("id").to_pylist())
    # LSH's own misses aside (no band in common: probability 0.002 at 0.8; one pair here).
    bands = np.stack([keys.column(c).to_numpy() for c in keys.column_names if c.startswith("band_")], axis=1)
    candidate = {f"r{i + 1}" for i in range(0, len(records), 2) if (bands[i] == bands[i + 1]).any()}
    low = sketch_window(128, 0.8)[0]
    assert removed == {r for r, j in true_j.items() if j >= 0.8 and r in candidate and estimate[r] >= low}
    assert len(candidate) > 290 and all(r in removed for r, j in true_j.items() if j >= 0.85 and r in candidate)
    assert sum(true_j[r] >= 0.8 and estimate[r] < low for r in true_j) <= 3
    # The sketches of these 146-shingle records are their whole shingle sets.
    _, offsets = sketch_arrays(keys.column("sketch"))
    assert np.diff(offsets).tolist() == [len(_shingles(r["text"].split())) for r in records]
