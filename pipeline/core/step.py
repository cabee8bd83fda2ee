"""The step contract: every stage a record passes through is a `Step`, and a shard's work is a list of them.

A step declares, as class attributes:
- `name`: its stage in the report (`stages.<name>` of report.json), its progress counter and its resume entry;
- `config_sections`: the PrepareConfig sections it reads. A shard's resume key (config_key below, over the
  phase's list of runner/steps.py) is made of these sections of the config and of the step names, so a step
  that starts reading another section names it here and resume can never reuse work done under other
  settings; there is no other list.

and implements `process(batch) -> batch`: records in, the records that go on out. A record it removes is
counted with `self.drop(reason)` (valid, removed by a rule) or `self.quarantine(reason, line)` (unusable
input, listed by reference in the run's quarantine file); anything else with `self.stats.add(key)`.

The base does the accounting, so no caller counts by hand: `step(batch)` (or `step.run(batches)`) times the
call and adds records in and out to `self.stats` (a StageStats; the report is the sum of the shards' stats,
so `records_in == records_out + dropped + quarantined` holds by construction), and sets the step's progress
counter (`self.progress`, a progress.ProgressFile, when the phase attached one).

A step that is also used outside a run to annotate records counted elsewhere (LengthStep.annotate) offers
that as a method of its own; process(batch) is the one contract, and `run_steps` the one way to chain steps.

Whether a step runs is decided by its phase's list alone (runner/steps.py: one function per phase builds it
from the config): a step that is off is not in the list, and no step looks at an `enabled` of its own. The list
holds `Planned` steps, a class and how to build it, so that the resume key and the "is it on" decision read the
same list before anything is built. A new step is one class here or in its package, and one line in the list
of its phase.

A stage decided once over the whole run from the shards' key files (dedup clustering, the canned-answer cap,
the validation choice) is a `GlobalStep`: a name and config_sections like a Step, and run() -> its report
section, writing the decision file its phase-3 step reads (datatrove's MinHash stages are the model).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Iterator

from pipeline.core.stats import StageStats

QuarantineSink = Callable[[int, str], None]  # (line, reason) of a quarantined row: references, never content


class Step:
    name: ClassVar[str] = ""
    config_sections: ClassVar[tuple[str, ...]] = ()
    # False for a step whose records are counted by another step of the same stage name (the dedup keys of
    # phase 1 are timed into "dedup"; its records are counted where duplicates are dropped, in phase 3)
    counts_records: ClassVar[bool] = True

    # Subclasses need not call a base __init__: the accounting state is made on first use.
    @property
    def stats(self) -> StageStats:
        st = self.__dict__.get("_stats")
        if st is None:
            st = self.__dict__["_stats"] = StageStats(self.name)
        return st

    @stats.setter
    def stats(self, value: StageStats) -> None:
        self.__dict__["_stats"] = value

    @property
    def progress(self):
        return self.__dict__.get("_progress")

    @progress.setter
    def progress(self, counter) -> None:
        self.__dict__["_progress"] = counter

    @property
    def quarantine_sink(self) -> QuarantineSink | None:
        return self.__dict__.get("_quarantine_sink")

    @quarantine_sink.setter
    def quarantine_sink(self, sink: QuarantineSink | None) -> None:
        self.__dict__["_quarantine_sink"] = sink

    def process(self, batch: list) -> list:
        raise NotImplementedError

    # -- what subclasses call
    def drop(self, reason: str, n: int = 1) -> None:
        self.stats.drop(reason, n)

    def quarantine(self, reason: str, line: int | None = None) -> None:
        self.stats.quarantine(reason)
        if self.quarantine_sink is not None and line is not None:
            self.quarantine_sink(line, reason)

    # -- what callers use
    def __call__(self, batch: list) -> list:
        st = self.stats
        with st.timer():
            if self.counts_records:
                st.records_in += len(batch)
            if batch:
                batch = self.process(batch)
            if self.counts_records:
                st.records_out += len(batch)
        if self.progress is not None:
            self.progress.set(self.total_in + st.records_in)
        return batch

    @property
    def total_in(self) -> int:
        """Records in before the last take_stats(): a progress count that goes on across shards."""
        return self.__dict__.get("_total_in", 0)

    def run(self, batches: Iterable[list]) -> Iterator[list]:
        """The step over a stream of batches; empty results are not passed on."""
        for batch in batches:
            out = self(batch)
            if out:
                yield out

    def take_stats(self) -> StageStats:
        """This step's stats so far, and a fresh StageStats from here on (one per shard of a global step)."""
        st, self.stats = self.stats, StageStats(self.name)
        self.__dict__["_total_in"] = self.total_in + st.records_in
        return st

    def finish(self) -> None:
        """The progress counter's final value."""
        if self.progress is not None:
            self.progress.set(self.total_in + self.stats.records_in, final=True)


def run_steps(steps: list[Step], batches: Iterable[list]) -> Iterator[list]:
    """Each batch through every step in order; a batch that becomes empty goes no further."""
    for batch in batches:
        for step in steps:
            batch = step(batch)
            if not batch:
                break
        if batch:
            yield batch


@dataclass(frozen=True)
class Planned:
    """A step of a phase's list before it is built: its class (all the resume key and the contract need) and
    how to build it from what the phase has only when it runs (`at`: the input file, the shard's decisions)."""
    cls: type[Step]
    build: Callable[[Any], Step]


def build_steps(plan: Iterable[Planned], at: Any) -> list[Step]:
    return [planned.build(at) for planned in plan]


class GlobalStep:
    """A stage decided once over the whole run (phase 2). Its constructor takes its config section and its
    files (the shards' key files in, its decision file out); run() writes the decision and returns the stage's
    report section."""

    name: ClassVar[str] = ""
    config_sections: ClassVar[tuple[str, ...]] = ()

    def run(self) -> dict:
        raise NotImplementedError


def config_key(cfg: Any, steps: Iterable[type[Step] | Step | Planned]) -> dict:
    """The part of the config the steps read, from their `config_sections`, with the steps' names: the
    config half of a resume key."""
    classes = [s.cls if isinstance(s, Planned) else s if isinstance(s, type) else type(s) for s in steps]
    sections = sorted({section for cls in classes for section in cls.config_sections})
    return {"steps": [cls.name for cls in classes], "config": cfg.model_dump(include=set(sections), mode="json")}
