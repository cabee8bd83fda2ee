"""Near duplicates of eval records: the dedup stage's MinHash signatures and LSH bands (pipeline.data.dedup),
with the eval records as the only side of the index. A training text is proposed with the eval records that
share one of its LSH bands, and is a near duplicate of the most similar one whose estimated Jaccard (the share
of equal signature values, as dedup verifies) reaches the threshold."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pipeline.core.config import DedupConfig
from pipeline.data.dedup import band_hashes, lsh_params, minhash_signatures, shingle_hashes

# An LSH bucket holds eval records that share a band: templated eval items share many. A training text is
# verified against at most this many of a bucket's members, so one template cannot make a lookup quadratic.
BUCKET_CAP = 64


def signatures(texts: list[str], cfg: DedupConfig) -> tuple[np.ndarray, np.ndarray]:
    """(MinHash signatures, has shingles) of folded texts, with dedup's shingling (word or character n-grams)."""
    hashes, counts, _ = shingle_hashes(texts, cfg.ngram, cfg.char_ngram)
    return minhash_signatures(hashes, counts, cfg.num_perm), counts > 0


@dataclass
class NearIndex:
    threshold: float
    bands: int
    rows: int
    band_keys: np.ndarray  # (bands, m) uint64, each row sorted
    band_owner: np.ndarray  # (bands, m) int32: the eval record of each band key
    sigs: np.ndarray  # (eval records, num_perm) uint32; rows of records without shingles never match

    @classmethod
    def build(cls, sigs: np.ndarray, usable: np.ndarray, cfg: DedupConfig) -> NearIndex:
        """The index of the eval records' `signatures` (sigs, usable)."""
        bands, rows = lsh_params(cfg.num_perm, cfg.threshold, cfg.verify)
        owners = np.flatnonzero(usable).astype(np.int32)
        keys = band_hashes(sigs[owners], bands, rows).T  # (bands, m)
        order = np.argsort(keys, axis=1, kind="stable")
        return cls(cfg.threshold, bands, rows, np.take_along_axis(keys, order, axis=1), owners[order], sigs)

    @property
    def nbytes(self) -> int:
        return self.band_keys.nbytes + self.band_owner.nbytes + self.sigs.nbytes

    def match(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """For each folded text: the eval record it is a near duplicate of (-1: none) and the estimated
        Jaccard."""
        best = np.full(len(texts), -1, dtype=np.int64)
        best_sim = np.zeros(len(texts), dtype=np.float32)
        if not texts or not self.band_keys.size:
            return best, best_sim
        sigs, usable = signatures(texts, DedupConfig(threshold=self.threshold))
        keys = band_hashes(sigs, self.bands, self.rows)
        pairs = [self._candidates(keys[:, k], self.band_keys[k], self.band_owner[k], usable)
                 for k in range(self.bands)]
        text, ev = (np.concatenate(p) for p in zip(*pairs))
        pair = np.unique(text * len(self.sigs) + ev)
        text, ev = pair // len(self.sigs), pair % len(self.sigs)
        sim = (sigs[text] == self.sigs[ev]).mean(axis=1, dtype=np.float32)
        ok = sim >= self.threshold
        text, ev, sim = text[ok], ev[ok], sim[ok]
        order = np.lexsort((-sim, text))  # per text, the most similar eval record first
        first = np.unique(text[order], return_index=True)[1]
        best[text[order][first]] = ev[order][first]
        best_sim[text[order][first]] = sim[order][first]
        return best, best_sim

    @staticmethod
    def _candidates(query, keys, owner, usable) -> tuple[np.ndarray, np.ndarray]:
        lo = np.searchsorted(keys, query, side="left")
        n = np.minimum(np.searchsorted(keys, query, side="right") - lo, BUCKET_CAP) * usable
        text = np.repeat(np.arange(len(query), dtype=np.int64), n)
        offset = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        return text, owner[np.repeat(lo, n) + offset].astype(np.int64)
