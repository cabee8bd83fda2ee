"""Long work is never silent: a live bar on a terminal, periodic lines elsewhere, counts and rates only."""
import io

import pytest

from pipeline.core.progress import Progress


def test_periodic_lines_when_not_a_terminal():
    out = io.StringIO()
    bar = Progress("dedup", "records", total=300, stream=out, tty=False, interval=0.0)
    for _ in range(3):
        bar.update(100)
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and lines[-1].startswith("dedup: 300 of 300 records (")
    assert lines[0].startswith("dedup: 100 of 300 records (") and "/s, " in lines[0]


def test_interval_limits_the_lines_and_a_log_callback_takes_them():
    seen = []
    bar = Progress("read", "records", stream=io.StringIO(), tty=False, interval=3600, log=seen.append)
    for _ in range(1000):
        bar.update()
    bar.close()
    assert seen == [seen[-1]] and seen[0].startswith("read: 1,000 records (")


def test_disabled_prints_nothing():
    out = io.StringIO()
    with Progress("x", stream=out, tty=False, interval=0.0, enabled=False) as bar:
        bar.update(5)
    assert out.getvalue() == ""


def _docs(path, n):
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"text": f"document {i} has words of its own, number {i * 7919}"}) + "\n"
                            for i in range(n)))
    return path


@pytest.mark.integration  # a whole run in worker processes
def test_a_run_not_on_a_terminal_logs_each_stage_with_counts_and_rates(tmp_path, monkeypatch):
    """`prepare run` showed a per-shard bar only, and nothing when stderr was not a terminal. Each stage now
    logs its count and rate: periodically (PREPARE_PROGRESS_INTERVAL) and when it ends."""
    import re

    from conftest import fast_config

    from pipeline.runner import run_prepare

    monkeypatch.setenv("PREPARE_PROGRESS_INTERVAL", "0")
    from slowshards import slow_shards

    for name, value in slow_shards(1).items():  # each shard lasts past a few polls of the counts (0.5 s)
        monkeypatch.setenv(name, value)
    for i in range(3):
        _docs(tmp_path / "in" / f"f{i}.jsonl", 40)
    cfg = fast_config(tmp_path, [tmp_path / "in"], read={"files_per_shard": 1})  # a shard a file
    cfg.workers = 2  # the counts come from worker processes
    seen: list[str] = []
    kept = run_prepare(cfg, log=seen.append).report["counts"]["kept"]
    final = {}
    for line in seen:
        m = re.fullmatch(r"(\w+): ([\d,]+)(?: of ([\d,]+))? (records|files) \(([\d,]+)/s, \d+ s\)", line)
        if m:
            final[m[1]] = (int(m[2].replace(",", "")), m[3] and int(m[3].replace(",", "")))
    assert final["read"] == (120, None)
    assert final["dedup"] == (120, 120)
    assert final["write"] == (kept, kept) and kept > 0
    periodic = [line for line in seen if line.startswith("read: ")]
    assert len(periodic) >= 2, seen  # lines while the stage ran, not only its last
    print("\n".join(seen))


@pytest.mark.integration  # the CLI in a subprocess
def test_the_cli_prints_stage_progress_to_a_pipe(tmp_path):
    import os
    import subprocess
    import sys

    from conftest import ROOT

    _docs(tmp_path / "in" / "a.jsonl", 30)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREPARE_PROGRESS_INTERVAL": "0"}
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", "in", "--out", "run", "--workers", "1",
                           "--no-pii", "--no-lengths", "--no-estimate"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert any(line.startswith("read: 30 records (") for line in lines), proc.stderr
    assert any(line.startswith("write: 30 of 30 records (") for line in lines), proc.stderr
