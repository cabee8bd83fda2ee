"""Exact and near-duplicate removal, and train/validation leakage, in two steps.

1. ``compute_keys(records, cfg)`` runs per shard (in a worker process) and returns a small Arrow table per
   record: ``_order``, ``id``, ``_eval``, a 128-bit hash of the normalized content, length, number of turns,
   source file/line, and for near dedup the LSH band hashes, the MinHash signature and the shingle sketch (its
   SKETCH_SIZE smallest distinct shingle hashes: the whole set of a shorter record). No text leaves the
   worker. The runner appends these tables to one Parquet file per shard (``write_keys`` does it for one).
2. ``find_duplicates(key_paths, cfg, work_dir)`` runs once over those files (see ``clusters``): exact groups,
   LSH candidates, verification (the MinHash estimate where it is far from the threshold, else the Jaccard
   of the shingle sketches: the true Jaccard for records of fewer than SKETCH_SIZE shingles), connected
   components, a deterministic keep policy. It
   returns a ``DedupResult``: ``removed`` (_order, id, reason, duplicate_of, ...) and a JSON ``report``.

Exact dedup hashes the text the trainer sees (every message with its role marker, tool calls, or the plain
text, and the record's tool definitions), case folded (cfg.case_fold), punctuation removed (cfg.punctuation_fold), whitespace collapsed.
Near dedup: MinHash over word n-grams (cfg.ngram) of Unicode word tokens (letters, marks, digits, ``_``;
punctuation and whitespace separate words), or character n-grams (cfg.char_ngram) of the words joined by
single spaces for short texts (fewer than max(20, 4 * ngram) words) and scripts without spaces (mean word
length above 12); over all turns or the assistant turns only (cfg.scope). Signatures are bit-for-bit those
of ``datasketch.MinHash(num_perm, seed=1, hashfunc=<32-bit shingle hash>)`` (datasketch >= 2.0, "affine32"),
computed with numpy for whole batches.
Tool definitions are part of a record's identity: in the exact key, and near dedup compares only records
with the same tools (their LSH band hashes are keyed by the tools).

Results depend only on record content, ``_order`` and ``_eval``: identical across runs, shard counts and the
order in which shards or records are presented. Validation records (``_eval``) are never removed; train
records in a cluster with one are removed as ``validation_leak``.
"""
from pipeline.data.dedup.clusters import (
                       REMOVED_SCHEMA,
                       DedupClusters,
                       DedupFilter,
                       DedupResult,
                       apply_removals,
                       find_duplicates,
                       removed_reasons,
                       signature_array,
                       write_audit,
)
from pipeline.data.dedup.keys import KeysStep, compute_keys, key_schema, write_keys
from pipeline.data.dedup.minhash import band_hashes, minhash_permutations, minhash_signatures
from pipeline.data.dedup.params import (
                       MODE_CHAR,
                       MODE_NONE,
                       MODE_WORD,
                       REASONS,
                       SKETCH_SIZE,
                       candidate_probability,
                       lsh_params,
                       optimal_param,
                       params,
)
from pipeline.data.dedup.sketch import bottom_k, distinct_sorted, pair_jaccard
from pipeline.data.dedup.text import (
                       char_classes,
                       exact_hashes,
                       exact_text,
                       normalize_exact,
                       shingle_hashes,
                       trainer_text,
)

__all__ = [
    "DedupClusters", "DedupFilter", "DedupResult", "KeysStep", "REMOVED_SCHEMA", "REASONS", "apply_removals",
    "band_hashes", "bottom_k", "candidate_probability", "distinct_sorted", "pair_jaccard", "SKETCH_SIZE",
    "char_classes", "compute_keys", "exact_hashes", "exact_text", "find_duplicates", "key_schema", "lsh_params",
    "minhash_permutations", "minhash_signatures", "normalize_exact", "optimal_param", "params",
    "removed_reasons", "shingle_hashes", "signature_array", "trainer_text", "write_audit", "write_keys",
    "MODE_CHAR", "MODE_NONE", "MODE_WORD",
]
