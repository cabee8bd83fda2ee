"""The eval n-gram index: every word n-gram of the eval records as a 64-bit hash, with the record it came from,
and the eval records' MinHash bands for near duplicates (near.py). No text is kept: hashes, and for each eval
record its file label, line and id, which is what a removal's audit names.

An eval record shorter than the window but at least SHORT_MIN_WORDS words (a short question), and such a turn of
a chat eval record, is indexed whole, as one n-gram of its own length; a training text is checked for windows of
each such length too, so a training record that quotes a short eval item is found although the item has no
n-gram of the window's length.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from pipeline.core.config import DedupConfig, PrepareConfig
from pipeline.data.decontam.near import NearIndex, signatures
from pipeline.data.decontam.tokens import batch_windows, batch_words, fold, window_hashes
from pipeline.data.normalize import NormalizeStep, ReadStep
from pipeline.data.readers import InputFile, expand_inputs

SHORT_MIN_WORDS = 8  # shorter eval records are common phrases ("thank you, that solved my problem")
BUILD_BATCH = 4096  # eval records tokenized at a time
INDEX_META = "index.json"  # in the folder of a saved index, with its arrays


def content_text(record: dict) -> str:
    """What decontamination compares: the content of every turn, or the plain text (no role markers, no tool
    definitions: an eval item copied into another format keeps only its words)."""
    messages = record.get("messages")
    if messages is not None:
        return "\n".join(m.get("content") or "" for m in messages)
    return record.get("text") or ""


@dataclass
class EvalRef:
    """Where an eval record is: its file (the label a run shows for it), line and record id."""

    file: str
    line: int
    id: str


def read_eval_records(files: list[InputFile], cfg: PrepareConfig) -> Iterator[dict]:
    """The canonical records of the eval files, through the run's readers and normalizer (no cleaning: a short
    eval item is still an eval item). The files are only read."""
    for i, f in enumerate(files):
        read, normalize = ReadStep(f, cfg), NormalizeStep(f, cfg, index=i, is_eval=True)
        for rows in read.batches():
            yield from normalize(rows)


@dataclass
class EvalIndex:
    ngram: int
    hashes: np.ndarray  # sorted unique uint64 n-gram hashes
    owners: np.ndarray  # int32: the first eval record (position in refs) holding each n-gram
    short_lengths: tuple[int, ...]  # lengths of the eval records indexed whole (shorter than ngram)
    near: NearIndex
    refs: list[EvalRef] = field(default_factory=list)

    @classmethod
    def from_files(cls, paths: list[str], ngram: int = 13, near_threshold: float = 0.8,
                   cfg: PrepareConfig | None = None) -> EvalIndex:
        """The index of the eval sets `paths` (files, folders, globs, s3:// URIs in any input format), read
        with the run's read and formats settings `cfg`."""
        cfg = cfg or PrepareConfig()
        return cls.from_records(read_eval_records(expand_inputs(paths, cfg), cfg), ngram, near_threshold)

    @classmethod
    def from_records(cls, records: Iterable[dict], ngram: int = 13, near_threshold: float = 0.8) -> EvalIndex:
        """The index of eval records, BUILD_BATCH at a time: memory holds the arrays, not the eval texts."""
        refs: list[EvalRef] = []
        hashes, owners, lengths, sigs, usable = [], [], set(), [], []
        near_cfg = DedupConfig(threshold=near_threshold)
        for batch in _batches(records, BUILD_BATCH):
            texts, turns, turn_owner = [], [], []
            for rec in batch:
                text = fold(content_text(rec))
                if not text.strip():
                    continue
                source = rec.get("source") or {}
                refs.append(EvalRef(source.get("file", ""), int(source.get("line") or 0), rec.get("id", "")))
                texts.append(text)
                # each turn too, for the short ones: a short question quoted alone, without its answer, is found
                contents = [m.get("content") or "" for m in rec.get("messages") or ()]
                if len(contents) > 1:
                    turns += map(fold, contents)
                    turn_owner += [len(refs) - 1] * len(contents)
            first = len(refs) - len(texts)
            turn_parts = _ngrams(turns, ngram, np.array(turn_owner, np.int64), windows=False)
            for h, o, short in (_ngrams(texts, ngram, first), turn_parts):
                hashes.append(h)
                owners.append(o)
                lengths |= short
            s, u = signatures(texts, near_cfg)
            sigs.append(s)
            usable.append(u)
        h, o = _first_owner(np.concatenate([np.zeros(0, np.uint64), *hashes]),
                            np.concatenate([np.zeros(0, np.int64), *owners]))
        near = NearIndex.build(np.concatenate([np.zeros((0, near_cfg.num_perm), np.uint32), *sigs]),
                               np.concatenate([np.zeros(0, bool), *usable]), near_cfg)
        return cls(ngram, h, o, tuple(sorted(lengths)), near, refs)

    @property
    def nbytes(self) -> int:
        """Memory held by the index's arrays (the refs aside: a file label, a line and an id per eval record)."""
        return self.hashes.nbytes + self.owners.nbytes + self.near.nbytes

    def ngram_match(self, texts: list[str]) -> np.ndarray:
        """For each folded text: the eval record it shares a window with (-1: none; the one holding its first
        shared window, the windows of the index's ngram looked at before the short lengths)."""
        found = np.full(len(texts), -1, dtype=np.int64)
        if not texts or not len(self.hashes):
            return found
        words, counts = batch_words(texts)
        for n in (self.ngram, *self.short_lengths):
            windows, text = batch_windows(words, counts, n)
            pos = np.minimum(np.searchsorted(self.hashes, windows), len(self.hashes) - 1)
            hit = self.hashes[pos] == windows
            first = np.unique(text[hit], return_index=True)
            new = found[first[0]] < 0
            found[first[0][new]] = self.owners[pos[hit][first[1][new]]]
        return found

    # --- on disk, for worker processes: arrays memory-mapped, refs as JSON
    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("hashes", "owners"):
            np.save(folder / f"{name}.npy", getattr(self, name))
        for name in ("band_keys", "band_owner", "sigs"):
            np.save(folder / f"near_{name}.npy", getattr(self.near, name))
        meta = {"ngram": self.ngram, "short_lengths": list(self.short_lengths), "threshold": self.near.threshold,
                "bands": self.near.bands, "rows": self.near.rows, "refs": [vars(r) for r in self.refs]}
        (folder / INDEX_META).write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path) -> EvalIndex:
        folder = Path(folder)
        meta = json.loads((folder / INDEX_META).read_text(encoding="utf-8"))
        arr = {p.stem: np.load(p, mmap_mode="r") for p in folder.glob("*.npy")}
        near = NearIndex(meta["threshold"], meta["bands"], meta["rows"], arr["near_band_keys"],
                         arr["near_band_owner"], arr["near_sigs"])
        return cls(meta["ngram"], arr["hashes"], arr["owners"], tuple(meta["short_lengths"]), near,
                   [EvalRef(**r) for r in meta["refs"]])


def _batches(records: Iterable[dict], size: int) -> Iterator[list[dict]]:
    batch = []
    for rec in records:
        batch.append(rec)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _ngrams(texts: list[str], ngram: int, owner: int | np.ndarray = 0,
            windows: bool = True) -> tuple[np.ndarray, np.ndarray, set[int]]:
    """(hashes, eval record of each, lengths of the short ones) of folded texts: their n-word windows (if
    `windows`), and each text of SHORT_MIN_WORDS to ngram - 1 words as one window of its own length. `owner`:
    the eval record of the first text (the others follow it), or of each text."""
    words, counts = batch_words(texts)
    hashes, text = batch_windows(words, counts, ngram) if windows else (np.zeros(0, np.uint64), np.zeros(0, np.int64))
    starts = np.cumsum(counts) - counts
    short = np.flatnonzero((counts >= SHORT_MIN_WORDS) & (counts < ngram))
    whole = [window_hashes(words[starts[i]:starts[i] + counts[i]], int(counts[i])) for i in short]
    text = np.concatenate([text, short])
    return np.concatenate([hashes, *whole]), (owner + text if np.isscalar(owner) else owner[text]), \
        set(counts[short].tolist())


def _first_owner(hashes: np.ndarray, owners: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each hash once, sorted, with the first eval record that holds it."""
    order = np.lexsort((owners, hashes))
    hashes, owners = hashes[order], owners[order]
    first = np.ones(len(hashes), dtype=bool)
    first[1:] = hashes[1:] != hashes[:-1]
    return hashes[first], owners[first].astype(np.int32)
