"""How the local executor hands out shards, and what phase 1 leaves for phase 3 besides the records."""
import json
from concurrent.futures import Future

import pyarrow.parquet as pq

from pipeline.core.config import PrepareConfig
from pipeline.data.readers import describe, split_ranges
from pipeline.runner.executor import LocalExecutor
from pipeline.runner.phases import ShardTask, normalize_shard
from pipeline.runner.work import work_paths


class _Item:
    def __init__(self, name: str, weight: int):
        self.name, self.weight = name, weight


class _RecordingPool:
    def __init__(self):
        self.submitted = []

    def submit(self, fn, item, **kwargs):
        self.submitted.append(item.name)
        future = Future()
        future.set_result(fn(item, **kwargs))
        return future


def _name(item, suffix=""):
    return item.name + suffix


def test_the_largest_shards_are_submitted_first_and_results_keep_the_items_order():
    executor = LocalExecutor(2, progress=False)
    executor._pool = pool = _RecordingPool()
    items = [_Item("a", 10), _Item("b", 30), _Item("c", 5), _Item("d", 30), _Item("e", 0)]
    assert executor.map(_name, items, "test", suffix="!") == ["a!", "b!", "c!", "d!", "e!"]
    assert pool.submitted == ["b", "d", "a", "c", "e"]  # equal weights in their order


def test_a_shards_weight_is_its_bytes_on_disk(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"text": f"line {i} " + "x" * 50}) + "\n" for i in range(100)))
    ranges = split_ranges(describe(str(path)), 2000)
    tasks = [ShardTask(i, (f,), False) for i, f in enumerate(ranges)]
    assert len(tasks) > 2
    assert sum(t.weight for t in tasks) == path.stat().st_size
    assert tasks[-1].weight < tasks[0].weight  # the last range holds what is left
    small = [tmp_path / f"s{i}.jsonl" for i in range(2)]
    for p in small:
        p.write_text(json.dumps({"text": "hello there"}) + "\n")
    assert ShardTask(0, tuple(describe(str(p)) for p in small), False).weight == sum(p.stat().st_size for p in small)
    assert ShardTask(0, (describe(str(tmp_path / "gone.jsonl")),), False).weight == 0


def test_phase_one_writes_each_records_language_beside_it_for_phase_three(tmp_path):
    rows = [{"instruction": "Siparişim nerede kaldı, kargo ne zaman gelir?",
             "output": "Kargonuz yarın teslim edilecek."},
            {"instruction": "Where is my order, when will it arrive?", "output": "Your parcel arrives tomorrow."},
            {"instruction": "12345", "output": "678"}]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    cfg = PrepareConfig(inputs=[str(path)], out=str(tmp_path / "run"), workers=1,
                        clean={"enabled": False}, quality={"enabled": False}, dedup={"enabled": False})
    work = tmp_path / "run" / "work"
    normalize_shard(ShardTask(0, (describe(str(path)),), False), cfg=cfg, run_dir=str(tmp_path / "run"),
                    work_dir=str(work))
    table = pq.read_table(work_paths(work, 0)["normalized"])
    langs = table.column("_lang").to_pylist()
    assert langs == [json.loads(m)["lang"] for m in table.column("meta").to_pylist()]
    assert langs == ["tr", "en", "und"]
