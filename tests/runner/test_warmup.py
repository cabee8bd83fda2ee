"""Phase 3's loads made in the workers during phase 2 (runner/warmup.py, LocalExecutor.warm)."""
import os

from pipeline.core.config import PrepareConfig
from pipeline.data.pii import engine
from pipeline.runner.executor import LocalExecutor
from pipeline.runner.warmup import phase3_loads, warm_process


def _config(tmp_path, **sections) -> PrepareConfig:
    return PrepareConfig(inputs=[str(tmp_path)], out=str(tmp_path / "out"), **sections)


def test_warm_process_loads_the_pii_engine_and_the_tokenizer(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(engine, "get_detector", lambda languages: seen.append(("pii", tuple(languages))))
    monkeypatch.setattr("pipeline.data.lengths.step.load_tokenizer",
                        lambda spec, cache_dir=None, chat_template=None: seen.append(("tokenizer", cache_dir)))
    warm_process(_config(tmp_path, pii={"enabled": True}))
    assert seen == [("pii", ("tr", "ru", "en")), ("tokenizer", None)]  # no token cache touched


def test_a_failed_load_is_left_to_the_shard_task(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("no tokenizer here")

    monkeypatch.setattr("pipeline.data.lengths.step.load_tokenizer", broken)
    warm_process(_config(tmp_path, pii={"enabled": False}))  # returns without raising


def test_phase3_loads_only_with_pii_or_lengths_on(tmp_path):
    assert phase3_loads(_config(tmp_path, pii={"enabled": True}, lengths={"enabled": False}))
    assert phase3_loads(_config(tmp_path, pii={"enabled": False}, lengths={"enabled": True}))
    assert not phase3_loads(_config(tmp_path, pii={"enabled": False}, lengths={"enabled": False}))


def _mark(folder):
    (folder / str(os.getpid())).write_text("warm")


def test_warm_runs_in_the_pool_without_waiting_and_not_inline(tmp_path):
    inline = LocalExecutor(1, progress=False)
    inline.warm(_mark, folder=tmp_path)
    assert not list(tmp_path.iterdir())  # one worker: the tasks run inline, nothing idles
    executor = LocalExecutor(2, progress=False)
    try:
        assert executor.map(os.path.basename, ["/a/x", "/b/y"], "test") == ["x", "y"]  # starts the pool
        executor.warm(_mark, folder=tmp_path)
    finally:
        executor.close()  # waits for the calls
    marks = list(tmp_path.iterdir())
    assert marks and all(m.name != str(os.getpid()) for m in marks)  # in the workers, not here
