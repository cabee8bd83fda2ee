"""Decontamination: training records removed when they contain an eval set's text.

1. ``EvalIndex.from_files(eval_sets, ngram, near_threshold, cfg)`` reads the eval sets with the run's readers and
   normalizer (any input format) and indexes, per eval record, the 64-bit hash of every word n-gram of its
   content (every turn, or the text; tokens.py: Unicode words, case folded with the Turkish i's and Russian ё
   folded, punctuation dropped, numbers kept) and its MinHash LSH bands (the dedup stage's code). It keeps no
   text: hashes, and each eval record's file label, line and id. ``save``/``load`` put it on disk for worker
   processes (arrays memory-mapped).
2. ``DecontamStep(index)`` drops a training record that shares an n-gram with an eval record (eval_ngram) or
   whose estimated Jaccard with one reaches the threshold (eval_near_dup), and lists it in ``removed`` /
   ``audit_table()`` with the eval record's id, file and line. The eval files are only read.
"""
from pipeline.data.decontam.index import SHORT_MIN_WORDS, EvalIndex, EvalRef, content_text, read_eval_records
from pipeline.data.decontam.near import NearIndex
from pipeline.data.decontam.step import DecontamStep
from pipeline.data.decontam.tokens import fold, words

__all__ = ["DecontamStep", "EvalIndex", "EvalRef", "NearIndex", "SHORT_MIN_WORDS", "content_text", "fold",
           "read_eval_records", "words"]
