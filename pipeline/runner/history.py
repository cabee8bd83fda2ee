"""A run against earlier datasets (`--against`) and the dedup index every run with dedup releases.

    before the run   resolve_against: each earlier dataset's manifest, its dedup index (downloaded from S3
                     into work/), checked against the manifest's sha256 and this run's dedup settings
    after phase 3    find_against: the run's masked keys (work/history, dedup.history) joined with the
                     indexes, as tasks the executor maps (on the Dask cluster with --dask-address: the
                     exact join, the candidates, the near join per group of bands, the removals); the removals
                     appended to the dedup audit; filter_against_shard drops them
                     from each shard's processed file (counted in the "against" stage)
    phase 4          write_dedup_index: the index of the records written, listed in the manifest
"""
from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.core.config import PrepareConfig
from pipeline.core.errors import PrepareError
from pipeline.core.files import sha256_file
from pipeline.core.s3 import client, parse_uri
from pipeline.core.step import Step, run_steps
from pipeline.data.dedup.against import (
    AUDIT_SCHEMA,
    REASON,
    BandGroup,
    Earlier,
    Lookup,
    check_index,
    exact_join,
    near_candidates,
    near_join,
    removals,
)
from pipeline.data.dedup.clusters import REMOVED_SCHEMA
from pipeline.data.dedup.history import INDEX_FILE, write_index
from pipeline.data.normalize import ORDER_SHIFT
from pipeline.runner.append import earlier_indexes, location, read_manifest
from pipeline.runner.executor import Executor
from pipeline.runner.phases import ShardTask, StatsByFile, merged_stages, runs_by_file, shard_errors
from pipeline.runner.rundir import claim
from pipeline.runner.work import WorkWriter, read_work_tables, work_paths

AGAINST_REMOVED = "against_removed.parquet"  # in work/: the removals phase 3's filter reads
LOOKUP_DIR = "against_lookup"  # in work/: the lookup's steps hand their results on here


def against_refs(cfg: PrepareConfig) -> list[str]:
    """The earlier datasets: --against's, and --append-to's (a new version holds no copy of an old record)."""
    refs = list(cfg.dedup.against)
    if cfg.append_to and location(cfg.append_to) not in {location(r) for r in refs}:
        refs.append(cfg.append_to)
    return refs


def _local_index(ref: str, base: str, entry: dict, local: Path) -> Path:
    """The index `entry` of a manifest (at `base`) as a local file, checked against the manifest's sha256;
    one on S3 downloaded to `local`."""
    if base.startswith("s3://"):
        local.parent.mkdir(parents=True, exist_ok=True)
        bucket, key = parse_uri(base.rstrip("/") + "/" + entry["path"])
        try:
            client().download_file(bucket, key, str(local))
        except Exception as exc:  # noqa: BLE001 - any failure is the same refusal: the index is not there
            raise PrepareError(f"--against {ref}: cannot read {base}/{entry['path']} ({type(exc).__name__})") \
                from None
    else:
        local = Path(base) / entry["path"]
    if not local.exists() or sha256_file(local) != entry["sha256"]:
        raise PrepareError(f"--against {ref}: {entry['path']} is missing or not the file its manifest lists")
    return local


def resolve_against(cfg: PrepareConfig, work_dir: Path) -> list[Earlier]:
    """Each earlier dataset's dedup index as a local file, checked: its sha256 is the manifest's and it was
    keyed with this run's dedup settings. An appended version's manifest lists its earlier versions' indexes
    too (`previous`), each compared in its own right. A manifest without an index (written before prepare had
    one) is refused by name."""
    refs = against_refs(cfg)
    if refs and not cfg.dedup.enabled:
        raise PrepareError("--against needs the dedup step (it compares dedup keys)")
    earlier = []
    for n, ref in enumerate(refs):
        manifest = read_manifest(ref, "--against")
        if not manifest.get("dedup_index"):
            raise PrepareError(f"--against {ref}: its manifest lists no dedup index (a dataset written before "
                               "prepare released one); run it again with this version to compare against it")
        for m, entry in enumerate(earlier_indexes(manifest, location(ref))):
            local = _local_index(ref, entry["base"], entry, Path(work_dir) / "against" / f"{n:03d}-{m:03d}.parquet")
            try:
                check_index(str(local), cfg.dedup)
            except ValueError as exc:
                raise PrepareError(f"--against {ref}: {exc}") from None
            earlier.append(Earlier(entry["run_id"], str(local)))
    return earlier


def against_key(earlier: list[Earlier]) -> list[str]:
    """What phase 3's resume key holds of the earlier datasets: their indexes' sha256."""
    return [sha256_file(e.index_path) for e in earlier]


class LookupTask(NamedTuple):
    """One task of the lookup, as the executor maps it (on a cluster its label names the task)."""
    step: str  # exact, candidates, near (per group of bands), removals
    group: BandGroup | None = None

    @property
    def label(self) -> str:
        return self.step if self.group is None else f"{self.step} bands {self.group.bands[0]}-{self.group.bands[-1]}"


def find_against(executor: Executor, cfg: PrepareConfig, run_dir: str, work_dir: str, results: list[dict],
                 earlier: list[Earlier]) -> dict:
    """The lookup (dedup/against.py) as tasks mapped by the executor, like shard tasks (a cluster's workers
    run them, not this process): the exact join, the candidates, the near join per group of bands (in
    parallel), then the removals (work/AGAINST_REMOVED) appended to the run's dedup audit. Returns the
    lookup's report."""
    keys = tuple(str(work_paths(work_dir, r["index"])["history"]) for r in results
                 if work_paths(work_dir, r["index"])["history"].exists())
    lookup = Lookup(keys, tuple(earlier), cfg.dedup, str(Path(work_dir) / LOOKUP_DIR))
    shutil.rmtree(lookup.folder, ignore_errors=True)  # a killed run's partial results
    for tasks in ([LookupTask("exact")], [LookupTask("candidates")],
                  [LookupTask("near", group) for group in lookup.band_groups()], [LookupTask("removals")]):
        reports = executor.map(run_lookup_task, tasks, "against-lookup", lookup=lookup, run_dir=run_dir, work_dir=work_dir)
    return reports[0]


def run_lookup_task(task: LookupTask, lookup: Lookup, run_dir: str, work_dir: str) -> dict | None:
    """One step of the lookup; the last (removals) returns the lookup's report."""
    if task.step == "exact":
        exact_join(lookup)
    elif task.step == "candidates":
        near_candidates(lookup)
    elif task.step == "near":
        near_join(task.group, lookup)
    else:
        return write_removals(lookup, run_dir, work_dir)
    return None


def write_removals(lookup: Lookup, run_dir: str, work_dir: str) -> dict:
    """The lookup's removals, for phase 3's filter (work/AGAINST_REMOVED) and appended to the dedup audit."""
    removed, report = removals(lookup)
    pq.write_table(removed, Path(work_dir) / AGAINST_REMOVED, compression="zstd")
    audit = Path(run_dir) / "dedup_removed.parquet"
    in_run = pq.read_table(audit) if audit.exists() else REMOVED_SCHEMA.empty_table()
    # a retried task (or a resumed run that kept phase 2's audit) finds its own earlier rows there
    in_run = in_run.filter(pc.not_equal(in_run["reason"], REASON))
    widened = pa.table({f.name: in_run[f.name] if f.name in in_run.column_names else pa.nulls(len(in_run), f.type)
                        for f in AUDIT_SCHEMA}, schema=AUDIT_SCHEMA)
    pq.write_table(pa.concat_tables([widened, removed]), audit, compression="zstd")
    return report


class AgainstFilter(Step):
    """Drops the rows of a processed work file (Arrow tables) whose _order the lookup removed."""

    name = "against"
    config_sections = ("dedup",)

    def __init__(self, orders: pa.Array):
        self.orders = orders

    def process(self, batch: pa.Table) -> pa.Table:
        drop = pc.is_in(batch["_order"], value_set=self.orders)
        n = pc.sum(drop).as_py() or 0
        if n:
            self.stats.drop(REASON, n)
            # per language too, for an appended version's report (report/version.py)
            for lang, count in Counter(batch["_lang"].filter(drop).to_pylist()).items():
                self.stats.add(f"removed_by_lang.{lang or 'unknown'}", count)
        return batch.filter(pc.invert(drop))


@shard_errors("against")
def filter_against_shard(task: ShardTask, cfg: PrepareConfig, work_dir: str, normalized: list[dict],
                         processed: list[dict]) -> dict:
    """The shard's processed file without the removed records; its phase 3 result (of `processed`, every
    shard's; `normalized`: phase 1's, for the files of its rows) with the against stage.
    The unfiltered file is kept beside it (process_shard removes it when it writes anew), so a resumed run
    filters again from it."""
    processed = next(r for r in processed if r["index"] == task.index)
    files = next(r for r in normalized if r["index"] == task.index)["files"]
    paths = work_paths(work_dir, task.index)
    if paths["processed"].exists() and not paths["unfiltered"].exists():
        paths["unfiltered"].parent.mkdir(parents=True, exist_ok=True)
        shutil.move(paths["processed"], paths["unfiltered"])
    paths["processed"].unlink(missing_ok=True)
    step = AgainstFilter(_shard_orders(work_dir, task.index))
    per_file = StatsByFile([step], len(files))
    out = WorkWriter(paths["processed"])
    if paths["unfiltered"].exists():
        for table in read_work_tables(paths["unfiltered"], cfg.read):
            for position, rows in runs_by_file(files, table):
                per_file.at(position)
                for kept in run_steps([step], [rows]):
                    out.append(kept)
    out.close()
    stages = per_file.take()
    return {**processed, "has_records": out.written,
            "files_stages": [merged_stages([a, b]) for a, b in zip(processed["files_stages"], stages)],
            "stages": merged_stages([processed["stages"], *stages])}


def _shard_orders(work_dir: str, index: int) -> pa.Array:
    lo, hi = index << ORDER_SHIFT, (index + 1) << ORDER_SHIFT
    table = pq.read_table(Path(work_dir) / AGAINST_REMOVED, columns=["_order"],
                          filters=[("_order", ">=", lo), ("_order", "<", hi)])
    return table["_order"].combine_chunks()


def write_dedup_index(cfg: PrepareConfig, run: Path, work_dir: str, shard_results: list[dict],
                      shards: list[dict]) -> dict | None:
    """dedup_index.parquet (history.write_index) of the records written; its manifest entry. None without
    the dedup step (an earlier run's index is removed then)."""
    path = run / INDEX_FILE
    if not cfg.dedup.enabled:
        path.unlink(missing_ok=True)
        return None
    written = {s["path"]: pq.read_table(run / s["path"], columns=["id"])["id"].combine_chunks() for s in shards}
    keys = [work_paths(work_dir, r["index"])["history"] for r in shard_results]
    claim(run, [INDEX_FILE])
    rows = write_index([k for k in keys if k.exists()], written, cfg.dedup, path)
    return {"path": INDEX_FILE, "rows": rows, "bytes": path.stat().st_size, "sha256": sha256_file(path)}
