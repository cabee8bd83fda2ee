"""Per-stage accounting. A step returns records plus its StageStats; the report is the sum of them,
so `input == kept + quarantined + sum(dropped)` is built in rather than recomputed."""
from __future__ import annotations

import functools
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pipeline.core.reasons import check


def merge_counters(into: dict, other: dict) -> dict:
    """Add `other` into `into`: numbers are summed, dicts merged recursively, lists concatenated."""
    for key, value in other.items():
        if isinstance(value, dict):
            merge_counters(into.setdefault(key, {}), value)
        elif isinstance(value, list):
            into.setdefault(key, []).extend(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            into[key] = into.get(key, 0) + value
        else:
            into[key] = value
    return into


@functools.lru_cache(maxsize=4096)
def _key_path(key: str) -> tuple[tuple[str, ...], str]:
    """A dotted counter key as (parents, leaf), split once: steps count per record and per hit."""
    *path, leaf = key.split(".")
    return tuple(path), leaf


@dataclass
class StageStats:
    """What one step did to the records that passed through it (on one shard, or summed)."""

    name: str
    records_in: int = 0
    records_out: int = 0
    seconds: float = 0.0      # wall clock inside the step
    cpu_seconds: float = 0.0  # CPU time of the process inside the step: what the stage costs on a loaded machine
    dropped: Counter = field(default_factory=Counter)
    quarantined: Counter = field(default_factory=Counter)
    counters: dict[str, Any] = field(default_factory=dict)

    def drop(self, reason: str, n: int = 1) -> None:
        self.dropped[check(reason, "drop")] += n

    def quarantine(self, reason: str, n: int = 1) -> None:
        self.quarantined[check(reason, "quarantine")] += n

    def add(self, key: str, n: int | float = 1) -> None:
        """Count something stage-specific; dotted keys nest ("entities.PHONE")."""
        node = self.counters
        path, leaf = _key_path(key)
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = node.get(leaf, 0) + n

    def timer(self) -> "_Timer":
        return _Timer(self)

    def merge(self, other: "StageStats") -> "StageStats":
        self.records_in += other.records_in
        self.records_out += other.records_out
        self.seconds += other.seconds
        self.cpu_seconds += other.cpu_seconds
        self.dropped.update(other.dropped)
        self.quarantined.update(other.quarantined)
        merge_counters(self.counters, other.counters)
        return self

    def to_dict(self) -> dict:
        return {
            "seconds": round(self.seconds, 4),
            "cpu_seconds": round(self.cpu_seconds, 4),
            "records_in": self.records_in,
            "records_out": self.records_out,
            "dropped": dict(sorted(self.dropped.items())),
            "quarantined": dict(sorted(self.quarantined.items())),
            **({"counters": self.counters} if self.counters else {}),
        }

    @classmethod
    def from_dict(cls, name: str, data: dict) -> "StageStats":
        return cls(
            name=name,
            records_in=data.get("records_in", 0),
            records_out=data.get("records_out", 0),
            seconds=data.get("seconds", 0.0),
            cpu_seconds=data.get("cpu_seconds", 0.0),
            dropped=Counter(data.get("dropped", {})),
            quarantined=Counter(data.get("quarantined", {})),
            counters=data.get("counters", {}),
        )


class _Timer:
    def __init__(self, stats: StageStats):
        self.stats = stats

    def __enter__(self):
        self.start, self.cpu_start = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.stats.seconds += time.perf_counter() - self.start
        self.stats.cpu_seconds += time.process_time() - self.cpu_start
        return False


def merge_all(stats_lists) -> dict[str, StageStats]:
    """Sum stage stats from many shards, keeping stage order as first seen."""
    total: dict[str, StageStats] = {}
    for stats in stats_lists:
        for st in stats:
            total.setdefault(st.name, StageStats(st.name)).merge(st)
    return total
