"""The write step gives the same shards from a processed work file's Arrow rows as from its record dicts."""
import pyarrow.parquet as pq
import pytest

from pipeline.core.config import ReadConfig, WriteConfig
from pipeline.core.files import sha256_file
from pipeline.core.records import to_table
from pipeline.data.shards import WriteStep
from pipeline.runner.work import PROCESSED_COLUMNS, WorkWriter, read_work, read_work_tables


def _records(n: int) -> list[dict]:
    """Chat, tool-call and plain-text records, Turkish, Russian and English, in both splits."""
    recs = []
    for i in range(n):
        base = {"id": f"r{i}", "source": {"file": "in.jsonl", "line": i + 1}, "meta": '{"lang":"tr"}',
                "_order": i, "_eval": i % 7 == 0, "_split": "validation" if i % 7 == 0 else "train",
                "_tokens": 10 + i % 50, "_trainable": 5}
        if i % 3 == 0:
            recs.append({**base, "kind": "text", "text": f"Sipariş {i} kargoya verildi. " * (1 + i % 9)})
        else:
            msgs = [{"role": "user", "content": f"Где мой заказ {i}?"},
                    {"role": "assistant", "content": f"Order {i} ships tomorrow. " * (1 + i % 5)}]
            tools = None
            if i % 5 == 0:
                msgs[1] = {"role": "assistant", "content": "",
                           "tool_calls": [{"type": "function", "id": f"c{i}",
                                           "function": {"name": "track", "arguments": {"order": i, "ü": [1.5, None]}}}]}
                tools = [{"type": "function", "function": {"name": "track", "parameters": {"type": "object"}}}]
            recs.append({**base, "kind": "chat", "messages": msgs, "tools": tools})
    return recs


def _processed_file(tmp_path, records, batch):
    path = tmp_path / "processed.parquet"
    writer = WorkWriter(path)
    for start in range(0, len(records), batch):
        writer.append(to_table(records[start:start + batch], PROCESSED_COLUMNS))
    writer.close()
    return path


@pytest.mark.parametrize("split_by_kind", [False, True])
def test_arrow_rows_and_record_dicts_write_the_same_shards(tmp_path, split_by_kind):
    path = _processed_file(tmp_path, _records(2500), batch=300)
    read = ReadConfig()
    cfg = WriteConfig(shard_rows=700, shard_bytes=64 * 1024, split_by_kind=split_by_kind)  # both limits cut
    shards = {}
    for name, batches in (("dicts", read_work(path, read)), ("arrow", read_work_tables(path, read))):
        step = WriteStep(tmp_path / name, cfg)
        for batch in batches:
            step(batch)
        shards[name] = (step.close(), step.take_stats())
    (dict_shards, dict_stats), (arrow_shards, arrow_stats) = shards["dicts"], shards["arrow"]
    assert len(dict_shards) > 4  # the limits cut several shards per set
    assert [(s["path"], s["rows"], s["bytes"], s["sha256"]) for s in arrow_shards] == \
        [(s["path"], s["rows"], s["bytes"], s["sha256"]) for s in dict_shards]
    assert all(sha256_file(tmp_path / "arrow" / s["path"]) == s["sha256"] for s in arrow_shards)
    assert (arrow_stats.records_in, arrow_stats.records_out) == (dict_stats.records_in, dict_stats.records_out) \
        == (2500, 2500)
    written = pq.read_table(tmp_path / "arrow" / arrow_shards[0]["path"])
    assert not any(name.startswith("_") for name in written.column_names)  # internal columns stay in work/


def test_an_overflow_policy_needs_record_dicts(tmp_path):
    path = _processed_file(tmp_path, _records(10), batch=10)
    step = WriteStep(tmp_path / "run", WriteConfig(), overflow=lambda records, stats: records)
    with pytest.raises(ValueError, match="record dicts"):
        step(next(read_work_tables(path, ReadConfig())))
