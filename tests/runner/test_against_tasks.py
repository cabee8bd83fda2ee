"""runner/history.py: the --against lookup as tasks the executor maps (a cluster's workers run them), with the
result of the lookup run in one process, and a removals task that can run twice."""
import pyarrow.parquet as pq
from test_history import docs, index_of

from pipeline.core.config import DedupConfig, PrepareConfig
from pipeline.data.dedup.against import Earlier, find_earlier
from pipeline.data.dedup.history import history_keys
from pipeline.runner.executor import LocalExecutor
from pipeline.runner.history import LOOKUP_DIR, Lookup, LookupTask, find_against, run_lookup_task
from pipeline.runner.work import work_paths


class Recording(LocalExecutor):
    """The local executor, noting what it maps and calls."""

    def __init__(self):
        super().__init__(1, False, None)
        self.mapped, self.called = [], []

    def map(self, fn, items, label, **kwargs):
        self.mapped.append([item.label for item in items])
        return super().map(fn, items, label, **kwargs)

    def call(self, fn, label, **kwargs):
        self.called.append(label)
        return super().call(fn, label, **kwargs)


def sides(tmp_path):
    """An earlier index of 60 records and this run's keys of 20 new ones, 4 exact and 4 near copies."""
    cfg = DedupConfig()
    old, new = docs(60, seed=1), docs(20, seed=2, first=100)
    for i in range(4):
        new[i]["text"] = old[i]["text"]
        words = old[10 + i]["text"].split()
        words[3] = "changed"
        new[4 + i]["text"] = " ".join(words)
    work = tmp_path / "work"
    keys = work_paths(work, 0)["history"]
    keys.parent.mkdir(parents=True)
    pq.write_table(history_keys(new, cfg), keys)
    return cfg, work, keys, [Earlier("m-old", str(index_of(old, cfg, tmp_path)))]


def test_every_step_of_the_lookup_is_a_mapped_task_with_the_one_process_result(tmp_path):
    cfg, work, keys, earlier = sides(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    executor = Recording()
    report = find_against(executor, PrepareConfig(inputs=["x"], out=str(run_dir)), str(run_dir), str(work),
                          [{"index": 0}], earlier)
    assert executor.called == []  # nothing runs in the flow's process (before: one call there)
    assert executor.mapped == [["exact"], ["candidates"], ["near bands 0-6", "near bands 7-13", "near bands 14-20"],
                               ["removals"]]
    alone, alone_report = find_earlier([str(keys)], earlier, cfg, str(tmp_path / "alone"))
    assert report == alone_report and report["removed"] == 8 and report["proposed_pairs"] > 0
    audit = pq.read_table(run_dir / "dedup_removed.parquet")
    assert audit.equals(alone)
    assert sorted(audit["id"].to_pylist()) == sorted(f"r{100 + i}" for i in range(8))


def test_the_removals_task_run_twice_lists_each_removal_once(tmp_path):
    """A retried task (Prefect retries, a lost worker) appends to the dedup audit only once."""
    cfg, work, keys, earlier = sides(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    lookup = Lookup((str(keys),), tuple(earlier), cfg, str(work / LOOKUP_DIR))
    for step in ("exact", "candidates"):
        run_lookup_task(LookupTask(step), lookup, str(run_dir), str(work))
    for group in lookup.band_groups():
        run_lookup_task(LookupTask("near", group), lookup, str(run_dir), str(work))
    for _ in range(2):
        run_lookup_task(LookupTask("removals"), lookup, str(run_dir), str(work))
    assert pq.read_table(run_dir / "dedup_removed.parquet").num_rows == 8
