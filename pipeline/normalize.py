"""read -> normalize -> clean for one input file: raw rows to canonical records, every row accounted
for in the three stages' stats (quarantine reasons, drop reasons)."""
from __future__ import annotations

from typing import Callable, Iterator

from .clean import CleanStep, content_chars
from .config import PrepareConfig
from .formats import Dropped, Invalid, check_file, detect_format, to_record
from .readers import FileReader, InputFile
from .stats import StageStats

ORDER_SHIFT = 32  # _order = file index << 32 | row number: global input order, unique per row
DETECT_ROWS = 50

Reject = Callable[[int, str], None]  # (line, reason) of a quarantined row


class Normalizer:
    def __init__(self, file: InputFile, cfg: PrepareConfig, index: int = 0, is_eval: bool = False,
                 reject: Reject | None = None):
        self.file, self.cfg, self.index, self.is_eval = file, cfg, index, is_eval
        self.reader = FileReader(file, cfg.read)
        self.read, self.normalize, self.clean = StageStats("read"), StageStats("normalize"), StageStats("clean")
        self.format: str | None = None
        self._reject = reject or (lambda line, reason: None)
        self._clean_step = CleanStep(cfg.clean)

    @property
    def stats(self) -> list[StageStats]:
        return [self.read, self.normalize, self.clean]

    def _quarantine(self, stats: StageStats, line: int, reason: str) -> None:
        stats.quarantine(reason)
        self._reject(line, reason)

    def batches(self) -> Iterator[list[dict]]:
        base = self.index << ORDER_SHIFT
        fmt_cfg = self.cfg.formats
        batches = self.reader.batches()
        while True:
            with self.read.timer():  # the reading itself (decompression, parsing) happens in the generator
                batch = next(batches, None)
            if batch is None:
                break
            with self.read.timer():
                self.read.records_in += len(batch)
                rows = []
                for row in batch:
                    if row.error == "empty_line":  # row.count: a run of empty lines is one RawRow
                        self.read.drop("empty_line", row.count)
                        self.read.records_in += row.count - 1
                    elif row.error:
                        self._quarantine(self.read, row.line, row.error)
                    else:
                        rows.append(row)
                self.read.records_out += len(rows)
            with self.normalize.timer():
                self.normalize.records_in += len(rows)
                if self.format is None and rows:
                    sample = [r.value for r in rows[:DETECT_ROWS]]
                    check_file(sample, self.file.shown, fmt_cfg.preference, fmt_cfg.mapping)  # DPO/KTO: refused
                    self.format = detect_format(sample, fmt_cfg.format, fmt_cfg.mapping)
                records = []
                for row in rows:
                    if self.format is None:
                        self._quarantine(self.normalize, row.line, "unknown_format")
                        continue
                    try:
                        rec = to_record(row.value, self.format, fmt_cfg.mapping,
                                        {"file": self.file.name, "line": row.line}, fmt_cfg.preference)
                    except Dropped as exc:  # valid, removed by a configured choice (a KTO undesirable answer)
                        self.normalize.drop(exc.reason)
                        continue
                    except Invalid as exc:
                        self._quarantine(self.normalize, row.line, exc.reason)
                        continue
                    if "_preference" in rec:  # what was done with preference rows, for the report
                        self.normalize.add(f"preference.{rec.pop('_preference')}")
                    if len(rec["meta"]) + content_chars(rec) > self.cfg.read.max_record_bytes:
                        self._quarantine(self.normalize, row.line, "too_large")  # by reference only
                        continue
                    rec["_order"] = base + row.line
                    rec["_eval"] = self.is_eval
                    records.append(rec)
                self.normalize.records_out += len(records)
            with self.clean.timer():
                self.clean.records_in += len(records)
                if self.cfg.clean.enabled:
                    records = self._clean_step.process(records, self.clean)
                self.clean.records_out += len(records)
            if records:
                yield records
