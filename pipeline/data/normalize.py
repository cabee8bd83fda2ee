"""The first steps of a shard: read (raw rows of one input) and normalize (rows to canonical records); the front
of phase 1 (`front_steps`: read, normalize, clean, quality) and `Normalizer`, a file's steps chained after its
reader, every row accounted for in the stages' stats (quarantine reasons, drop reasons)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from pipeline.core.config import PrepareConfig
from pipeline.core.errors import PrepareError
from pipeline.core.stats import StageStats
from pipeline.core.step import Planned, QuarantineSink, Step, build_steps, run_steps
from pipeline.core.textnorm import content_chars
from pipeline.data.clean import CleanStep
from pipeline.data.formats import (
    WITHHELD,
    Dropped,
    Invalid,
    check_file,
    count_columns,
    detect_format,
    format_of_row,
    to_record,
)
from pipeline.data.quality import QualityStep
from pipeline.data.readers import FileReader, InputFile, name_holds_pii

# _order = shard index << 32 | (the file's offset in its shard + row number): global input order, unique per row
ORDER_SHIFT = 32
DETECT_ROWS = 50


class ReadStep(Step):
    """Rows of one input (decompression, decoding, parsing); unreadable rows are quarantined, runs of empty
    lines dropped. Its time includes the reading itself, which happens in the reader's generator."""

    name = "read"
    config_sections = ("read",)

    def __init__(self, file: InputFile, cfg: PrepareConfig):
        self.reader = FileReader(file, cfg.read)
        self.last_line = 0  # the highest row number read: the next file of the shard is numbered after it

    def process(self, batch: list) -> list:
        rows = []
        for row in batch:
            self.last_line = max(self.last_line, row.line + row.count - 1)
            if row.error == "empty_line":  # row.count: a run of empty lines is one RawRow
                self.drop("empty_line", row.count)
                self.stats.records_in += row.count - 1
            elif row.error:
                self.quarantine(row.error, row.line)
            else:
                rows.append(row)
        return rows

    def batches(self) -> Iterator[list]:
        raw = self.reader.batches()
        while True:
            with self.stats.timer():
                batch = next(raw, None)
            if batch is None:
                return
            yield self(batch)


class NormalizeStep(Step):
    """Raw rows to canonical records in the format detected on the first rows (or configured); rows that do
    not convert are quarantined with their reason, by reference only."""

    name = "normalize"
    # read.max_record_bytes, read.max_turns; pii: whether an unknown column's name is shown (shown_column)
    config_sections = ("formats", "read", "pii")

    def __init__(self, file: InputFile, cfg: PrepareConfig, index: int = 0, is_eval: bool = False, offset: int = 0):
        self.file, self.cfg, self.is_eval = file, cfg, is_eval
        self.index, self.offset = index, offset
        self.format: str | None = None
        self.columns_shown: dict[str, str] = {}

    def process(self, rows: list) -> list[dict]:
        fmt_cfg = self.cfg.formats
        if self.format is None:
            sample = [r.value for r in rows[:DETECT_ROWS]]
            check_file(sample, self.file.shown, fmt_cfg.preference, fmt_cfg.mapping)  # DPO/KTO: refused
            self.format = detect_format(sample, fmt_cfg.format, fmt_cfg.mapping)
        records = []
        for row in rows:
            fmt = format_of_row(row.value, self.format, fmt_cfg.format, fmt_cfg.mapping)
            if fmt is None:
                self.quarantine("unknown_format", row.line)
                count_columns(row.value, self.stats.counters.setdefault("unknown_columns", {}), self.shown_column)
                continue
            self.stats.add(f"formats.{fmt}")  # rows per converter: a file may mix formats
            try:
                rec = to_record(row.value, fmt, fmt_cfg.mapping, {"file": self.file.name, "line": row.line},
                                fmt_cfg.preference, fmt_cfg.leading_assistant)
            except Dropped as exc:  # valid, removed by a configured choice (a KTO undesirable answer)
                self.drop(exc.reason)
                continue
            except Invalid as exc:
                self.quarantine(exc.reason, row.line)
                continue
            if "_preference" in rec:  # what was done with preference rows, for the report
                self.stats.add(f"preference.{rec.pop('_preference')}")
            if "_leading_assistant" in rec:
                self.stats.add(f"leading_assistant.{fmt_cfg.leading_assistant}.records")
                self.stats.add(f"leading_assistant.{fmt_cfg.leading_assistant}.turns", rec.pop("_leading_assistant"))
            if len(rec["meta"]) + content_chars(rec) > self.cfg.read.max_record_bytes:
                self.quarantine("too_large", row.line)  # by reference only
                continue
            if len(rec.get("messages") or ()) > self.cfg.read.max_turns:  # every later step costs per turn
                self.quarantine("too_many_turns", row.line)
                continue
            rec["_order"] = self._order(row.line)
            rec["_eval"] = self.is_eval
            records.append(rec)
        return records

    def shown_column(self, name: str) -> str:
        """A column name as the report may show it: withheld where the PII engine finds personal data in it."""
        if name not in self.columns_shown:
            held = self.cfg.pii.enabled and name_holds_pii(name, self.cfg)
            self.columns_shown[name] = WITHHELD if held else name
        return self.columns_shown[name]

    def _order(self, line: int) -> int:
        position = self.offset + line
        if position >= 1 << ORDER_SHIFT:  # it would take the order of the next shard's rows
            raise PrepareError(f"{self.file.shown}: more than {1 << ORDER_SHIFT} rows in one shard; "
                             "lower read.files_per_shard")
        return (self.index << ORDER_SHIFT) + position


@dataclass(frozen=True)
class FileAt:
    """What the steps of one input file are built with: the file, its shard and its rows' place in it."""
    file: InputFile
    index: int = 0
    is_eval: bool = False
    offset: int = 0  # the highest row number of the shard's files before this one


def front_steps(cfg: PrepareConfig) -> list[Planned]:
    """read -> normalize -> clean -> quality: the front of phase 1 (runner/steps.py goes on from it) and what
    `prepare show` and the precheck read with. A step that is off is not in the list."""
    plan = [Planned(ReadStep, lambda at: ReadStep(at.file, cfg)),
            Planned(NormalizeStep, lambda at: NormalizeStep(at.file, cfg, at.index, at.is_eval, at.offset))]
    if cfg.clean.enabled:
        plan.append(Planned(CleanStep, lambda at: CleanStep(cfg.clean)))
    if cfg.quality.enabled:
        plan.append(Planned(QualityStep, lambda at: QualityStep(cfg.quality, cfg.clean.min_assistant_chars)))
    return plan


class Normalizer:
    """The steps of one input file, read first: `batches()` yields lists of canonical records. `plan` is
    front_steps(cfg) unless given (the run's phase 1 goes on to the language step)."""

    def __init__(self, file: InputFile, cfg: PrepareConfig, index: int = 0, is_eval: bool = False,
                 reject: QuarantineSink | None = None, offset: int = 0, plan: list[Planned] | None = None):
        self.steps = build_steps(front_steps(cfg) if plan is None else plan, FileAt(file, index, is_eval, offset))
        self.read_step, self.normalize_step = self.steps[:2]  # a file's plan starts with front_steps' two
        for step in self.steps:
            step.quarantine_sink = reject

    @property
    def reader(self) -> FileReader:
        return self.read_step.reader

    @property
    def format(self) -> str | None:
        return self.normalize_step.format

    @property
    def read(self) -> StageStats:
        return self.read_step.stats

    @property
    def normalize(self) -> StageStats:
        return self.normalize_step.stats

    @property
    def stats(self) -> list[StageStats]:
        return [s.stats for s in self.steps]

    def batches(self) -> Iterator[list[dict]]:
        return run_steps(self.steps[1:], self.read_step.batches())
