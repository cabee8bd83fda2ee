"""Settings of the dedup stage that are not in DedupConfig, and the LSH banding."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from pipeline.core.config import DedupConfig

REASONS = ("exact_duplicate", "near_duplicate", "validation_leak")
KEY_FORMAT = 2  # bump when the key layout or the hashing changes: key files of another format are refused
MINHASH_SEED = 1  # datasketch's default seed: signatures equal datasketch.MinHash(num_perm, seed=1)
CHAR_MODE_MAX_WORDS = 20  # texts with fewer words than max(this, 4 * ngram) use character n-grams
CHAR_MODE_MEAN_WORD_LEN = 12.0  # longer mean "words" mean a script without spaces: character n-grams
LSH_MIN_CANDIDATE_PROB = 0.99  # with verification: LSH must propose a pair at the threshold with this probability
SKETCH_SIZE = 256  # shingle hashes kept per record for verification (sketch.py): whole sets up to 255 shingles
# Verification by MinHash estimate decides alone this many standard deviations (binomial, at the threshold) under
# and over the threshold; between, the shingle sketches decide (about 5 us a pair).
# Under: 2, so a pair at the threshold is lost 1 time in 44 and one at threshold + 0.05 1 in 15,000 (the
# recall that counts, at 0.85), while half of the template-sharing pairs at 0.73 stay out of the sketches.
# Over: 4, so a pair at 0.78 passes by the estimate about 1 time in 200,000 (normal approximations).
SKETCH_CHECK_SIGMAS = (2.0, 4.0)

MODE_NONE, MODE_WORD, MODE_CHAR = 0, 1, 2


@lru_cache(maxsize=32)
def lsh_params(num_perm: int, threshold: float, verify: bool = True) -> tuple[int, int]:
    """(bands, rows) for the LSH index.

    With verification, the LSH threshold is lowered: the most rows per band (fewest spurious candidates) such
    that a pair with Jaccard exactly at ``threshold`` becomes a candidate with probability at least
    LSH_MIN_CANDIDATE_PROB (num_perm=128, threshold=0.8: b=21, r=6, 0.998 at J=0.80, 0.99995 at 0.85); the
    candidates are then verified by estimated Jaccard. Without verification every candidate is a duplicate,
    so datasketch's optimal_param is used instead (equal false positive/negative weights: b=9, r=13).
    """
    if not verify:
        return optimal_param(threshold, num_perm)
    for rows in range(num_perm, 0, -1):
        bands = num_perm // rows
        if candidate_probability(threshold, bands, rows) >= LSH_MIN_CANDIDATE_PROB:
            return bands, rows
    return num_perm, 1


def candidate_probability(jaccard: float, bands: int, rows: int) -> float:
    """Probability that LSH with these bands/rows proposes a pair of this Jaccard similarity."""
    return 1.0 - (1.0 - jaccard ** rows) ** bands


def optimal_param(threshold: float, num_perm: int, fp_weight: float = 0.5, fn_weight: float = 0.5) -> tuple[int, int]:
    """datasketch.lsh._optimal_param (minimum weighted false positive + negative area), with numpy
    integration instead of scipy, so worker processes need not import scipy."""
    best, opt = float("inf"), (1, 1)
    lo = np.linspace(0.0, threshold, 513)
    hi = np.linspace(threshold, 1.0, 513)
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            fp = np.trapezoid(1 - (1 - lo ** r) ** b, lo)
            fn = np.trapezoid((1 - hi ** r) ** b, hi)
            err = fp * fp_weight + fn * fn_weight
            if err < best:
                best, opt = err, (b, r)
    return opt


def sketch_window(num_perm: int, threshold: float) -> tuple[float, float]:
    """MinHash estimates from the first up to the second go to the sketches; below, a pair is rejected, from
    the second on, accepted. At num_perm=128, threshold=0.8: 0.729-0.941."""
    sigma = math.sqrt(threshold * (1 - threshold) / num_perm)
    return threshold - SKETCH_CHECK_SIGMAS[0] * sigma, threshold + SKETCH_CHECK_SIGMAS[1] * sigma


def params(cfg: DedupConfig) -> dict:
    """Every parameter the stage uses, for the report and the key files."""
    bands, rows = lsh_params(cfg.num_perm, cfg.threshold, cfg.verify)
    return {
        "key_format": KEY_FORMAT,
        "exact": cfg.exact, "near": cfg.near,
        "case_fold": cfg.case_fold, "punctuation_fold": cfg.punctuation_fold,
        "num_perm": cfg.num_perm, "threshold": cfg.threshold, "verify": cfg.verify,
        "ngram": cfg.ngram, "char_ngram": cfg.char_ngram, "scope": cfg.scope, "keep": cfg.keep,
        "bands": bands, "rows": rows, "sketch_size": SKETCH_SIZE,
        "lsh_threshold": round((1.0 / bands) ** (1.0 / rows), 4),
        "candidate_probability": {
            str(j): round(candidate_probability(j, bands, rows), 5)
            for j in sorted({0.5, 0.7, cfg.threshold, 0.85, 0.9})},
        "sketch_between": [round(t, 4) for t in sketch_window(cfg.num_perm, cfg.threshold)],
        "char_mode": {"below_words": max(CHAR_MODE_MAX_WORDS, 4 * cfg.ngram),
                      "mean_word_len_above": CHAR_MODE_MEAN_WORD_LEN},
        "minhash": {"scheme": "datasketch affine32", "seed": MINHASH_SEED,
                    "shingle_hash": "poly64 + fmix64, high 32 bits"},
        "content_hash": "xxh3_128 of the normalized text",
    }


# Settings that must agree between the key files and the global step.
KEY_SETTINGS = ("key_format", "case_fold", "punctuation_fold", "num_perm", "ngram", "char_ngram", "scope",
                "bands", "rows", "near", "sketch_size")
