"""MinHash signatures (datasketch's "affine32" scheme, vectorized) and LSH band hashes."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from pipeline.data.dedup.params import MINHASH_SEED
from pipeline.data.dedup.text import fmix32, fmix64

_U64 = np.uint64
_M64 = (1 << 64) - 1
SHINGLE_CHUNK = 8192  # shingles per MinHash chunk at num_perm=128 (4 MiB of scratch: stays in cache)


@lru_cache(maxsize=8)
def minhash_permutations(num_perm: int, seed: int = MINHASH_SEED) -> tuple[np.ndarray, np.ndarray]:
    """The (a, b) of datasketch's affine32 scheme (datasketch >= 2.0: ``MinHash(num_perm, seed).permutations``),
    generated the same way here so worker processes need not import datasketch (and scipy) to hash.
    tests/data/test_dedup.py checks them against datasketch."""
    gen = np.random.RandomState(seed)
    a = gen.randint(0, 1 << 31, num_perm, dtype=np.uint32) * np.uint32(2) + np.uint32(1)
    b = gen.randint(0, 1 << 32, num_perm, dtype=np.uint32)
    return a, b


def minhash_signatures(hashes: np.ndarray, counts: np.ndarray, num_perm: int) -> np.ndarray:
    """MinHash signature (uint32, num_perm) per segment of ``hashes``; empty segments stay all 0xFFFFFFFF.

    Equal to ``datasketch.MinHash(num_perm, seed=1, hashfunc=int).update_batch(segment)`` ("affine32").
    Computed as a (num_perm, shingles) matrix in cache-sized chunks of whole records, min-reduced per record;
    a record longer than a chunk is hashed chunk by chunk, its signature the minimum of the chunks' (the
    minimum is associative): scratch memory stays num_perm x chunk whatever a record's length (one 7 MB
    record without spaces took a 128 x 7M matrix, 4.4 GB).
    """
    a, b = minhash_permutations(num_perm)
    a, b = a[:, None], b[:, None]
    n = len(counts)
    sig = np.full((n, num_perm), 0xFFFFFFFF, dtype=np.uint32)
    if n == 0 or len(hashes) == 0:
        return sig
    hv = fmix32(hashes.astype(np.uint32, copy=False))
    nonempty = np.flatnonzero(counts > 0)
    ends = np.cumsum(counts[nonempty])
    starts = ends - counts[nonempty]
    chunk = max(1024, SHINGLE_CHUNK * 128 // num_perm)
    buf = np.empty((num_perm, chunk), dtype=np.uint32)
    i = 0
    while i < len(nonempty):
        lo = starts[i]
        j = max(int(np.searchsorted(ends, lo + chunk, side="right")), i + 1)
        hi = ends[j - 1]
        if hi - lo > chunk:  # one record longer than a chunk (several records always fit: j stops before)
            sig[nonempty[i]] = _long_signature(hv[lo:hi], a, b, buf)
        else:
            work = buf[:, :hi - lo]
            np.multiply(a, hv[None, lo:hi], out=work)
            work += b
            sig[nonempty[i:j]] = np.minimum.reduceat(work, starts[i:j] - lo, axis=1).T
        i = j
    return sig


def _long_signature(hv: np.ndarray, a: np.ndarray, b: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """The signature of one record's mixed shingle hashes ``hv``, a chunk of ``buf``'s width at a time."""
    sig = np.full(a.shape[0], 0xFFFFFFFF, dtype=np.uint32)
    for lo in range(0, len(hv), buf.shape[1]):
        part = hv[None, lo:lo + buf.shape[1]]
        work = buf[:, :part.shape[1]]
        np.multiply(a, part, out=work)
        work += b
        np.minimum(sig, work.min(axis=1), out=sig)
    return sig


def band_hashes(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """64-bit hash of each LSH band of each signature: (n, bands) uint64."""
    n = sig.shape[0]
    out = np.empty((n, bands), dtype=np.uint64)
    s64 = sig.astype(np.uint64)
    for k in range(bands):
        h = np.full(n, (0x243F6A8885A308D3 * (k + 1)) & _M64, dtype=np.uint64)
        for j in range(k * rows, (k + 1) * rows):
            h = (h ^ s64[:, j]) * _U64(0x100000001B3)
            h ^= h >> _U64(29)
        out[:, k] = fmix64(h)
    return out
