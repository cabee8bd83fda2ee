"""Resume after SIGKILL, a Dask cluster giving the same output, and the deployment rejecting bad
parameters through the server."""
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest
from conftest import ROOT, fast_config
from slowshards import slow_shards, start_and_kill

from pipeline.runner import code_version, run_prepare

pytestmark = pytest.mark.integration


def make_inputs(d, files=6, rows=300, seed=3):
    rng = random.Random(seed)
    words = ("kargo fatura iade şifre sipariş teslimat адрес заказ возврат доставка invoice refund parcel "
             "courier account upgrade coupon receipt ticket status warehouse payment").split()
    d.mkdir()
    for f in range(files):
        with open(d / f"part{f}.jsonl", "w", encoding="utf-8") as fh:
            for _ in range(rows):
                q = " ".join(rng.choice(words) for _ in range(14))
                a = " ".join(rng.choice(words) for _ in range(30))
                fh.write(json.dumps({"instruction": q, "output": a}, ensure_ascii=False) + "\n")
    return d


def one_file_per_shard(tmp_path) -> str:
    """A config reading each small file as a shard of its own (read.files_per_shard), for tests that need shards."""
    path = tmp_path / "one-file-per-shard.json"
    path.write_text(json.dumps({"read": {"files_per_shard": 1}}))
    return str(path)


def shard_hashes(run_dir):
    return [s["sha256"] for s in json.loads((run_dir / "manifest.json").read_text())["shards"]]


def test_killed_run_resumes_to_identical_output(tmp_path):
    """Six shards of two small files each (read.files_per_shard): a killed run resumes from the finished ones."""
    inputs = make_inputs(tmp_path / "in", files=12, rows=150)
    grouped = {"read": {"files_per_shard": 2}}
    reference = run_prepare(fast_config(tmp_path / "ref", [inputs], **grouped), progress=False)
    out = tmp_path / "run"
    config = tmp_path / "grouped.json"
    config.write_text(json.dumps(grouped))
    env = {**os.environ, **slow_shards(0.6)}
    cmd = [sys.executable, "-m", "pipeline.cli", "run", str(inputs), "--out", str(out), "--workers", "1",
           "--no-pii", "--no-lengths", "--no-estimate", "--config", str(config)]
    code_version.cache_clear()  # hashed now, as the run below does: resume keys hold the code's hash
    code_version()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = out / "work" / "results"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(results.glob("normalize-*.json"))) < 3:
        assert proc.poll() is None, "the run ended before it could be interrupted"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = len(list(results.glob("normalize-*.json")))
    assert 3 <= finished < 6, "the run was not interrupted mid-way"
    assert not (out / "manifest.json").exists()  # a killed run leaves no manifest over partial output
    resumed = run_prepare(fast_config(tmp_path, [inputs], **grouped), progress=False)
    assert resumed.reused_shards >= finished
    assert shard_hashes(out) == shard_hashes(reference.run_dir)
    assert not (out / "work").exists()


def _processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, command line) of every process, from /proc."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[int(entry)] = (int(fields[1]), fields[0], cmdline)
    return found


def _alive(pid: int) -> bool:
    info = _processes().get(pid)
    return info is not None and info[1] != "Z"  # a zombie has exited; only its parent has yet to reap it


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_with_a_killed_parent(tmp_path):
    """SIGKILL of `prepare run` left its spawned pool workers alive (about 380 MB each), blocked on the task
    queue or still writing into work/ while the next run resumed there."""
    import fcntl

    inputs = make_inputs(tmp_path / "in", files=4, rows=50)
    out = tmp_path / "run"
    env = {**os.environ, **slow_shards(60)}
    cmd = [sys.executable, "-m", "pipeline.cli", "run", str(inputs), "--out", str(out), "--workers", "2",
           "--no-pii", "--no-lengths", "--no-estimate", "--config", one_file_per_shard(tmp_path)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while len(list((out / "work" / "normalized").glob("*.parquet"))) < 2:  # both workers inside a shard
            assert proc.poll() is None and time.monotonic() < deadline, "the run did not get going"
            time.sleep(0.05)
        workers = [pid for pid, (ppid, _, cmdline) in _processes().items()
                   if ppid == proc.pid and "--multiprocessing-fork" in cmdline]
        assert len(workers) == 2
        fd = os.open(out / "work" / ".workers-lock", os.O_RDWR)
        try:  # the live workers hold the lock a resumed run waits on
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in workers if _alive(pid)], "workers outlived their killed parent"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_resumed_run_waits_for_workers_of_the_killed_one(tmp_path, monkeypatch):
    """A worker of the killed run that is still alive (where the kernel cannot kill it with its parent)
    holds work/.workers-lock: the resumed run does not start beside it."""
    from pipeline.runner import PrepareError, rundir

    inputs = make_inputs(tmp_path / "in", files=2, rows=20)
    cfg = fast_config(tmp_path, [inputs])
    run_prepare(cfg, progress=False)
    work = tmp_path / "run" / "work"
    rundir.claim(tmp_path / "run", ["work/"])  # as the killed run did before it made work/
    work.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        f"fd = os.open({str(work / '.workers-lock')!r}, os.O_RDWR | os.O_CREAT)\n"
        "fcntl.flock(fd, fcntl.LOCK_SH)\nprint('held', flush=True)\ntime.sleep(300)\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setattr(rundir, "STALE_WORKERS_WAIT_S", 0.5)
        with pytest.raises(PrepareError, match="worker processes of an earlier run are still alive"):
            run_prepare(cfg, progress=False)
        assert (tmp_path / "run" / "manifest.json").exists()  # refused before it touched the run
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    assert run_prepare(cfg, progress=False).report["counts"]["kept"] == 40


def frozen_code(tmp_path) -> dict:
    """An environment running a copy of the code: resume keys hold a hash of the code, and a file edited
    between the killed run and its resume (by anyone working in this checkout) would make them differ."""
    code = tmp_path / "code"
    for part in ("pipeline", "schemas"):
        shutil.copytree(ROOT / part, code / part, ignore=shutil.ignore_patterns("__pycache__"))
    return {**os.environ, "PYTHONPATH": str(code)}


def test_a_resumed_run_reuses_pii_work_without_a_salt_set(tmp_path, monkeypatch):
    """The pseudonym salt was random per process and part of the cache key: a resumed run redid PII and
    lengths for every shard unless PREPARE_PII_SALT was set. The run's salt is kept in work/ (0600)."""
    inputs = make_inputs(tmp_path / "in", files=4, rows=20)
    for f in sorted(inputs.iterdir()):
        with open(f, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"instruction": f"Mail ayse.yilmaz@example.com about {f.stem}",
                                 "output": "I wrote to ayse.yilmaz@example.com about the order."}) + "\n")
    # dedup off: the four e-mail records are near duplicates of each other
    (tmp_path / "cfg.json").write_text(json.dumps({"pii": {"operator": "pseudonym"}, "dedup": {"enabled": False},
                                                   "read": {"files_per_shard": 1}}))
    out = tmp_path / "run"
    monkeypatch.delenv("PREPARE_PII_SALT", raising=False)
    env = frozen_code(tmp_path)
    cmd = [sys.executable, "-m", "pipeline.cli", "run", str(inputs), "--out", str(out), "--workers", "1",
           "--config", str(tmp_path / "cfg.json"), "--no-lengths", "--no-estimate"]
    results = out / "work" / "results"
    start_and_kill(cmd, env, results, seconds=1)
    finished = len(list(results.glob("*.json")))
    assert len(list(results.glob("process-*.json"))) < 4, "the run was not interrupted mid-way"
    salt_file = out / "work" / "pii-salt"
    assert stat.S_IMODE(salt_file.stat().st_mode) == 0o600
    salt = salt_file.read_bytes()
    resumed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    # every finished shard, the PII ones too (before: only the 4 normalize results)
    assert f"reused {finished} shard result(s)" in resumed.stderr, (finished, resumed.stderr[-2000:])
    assert not (out / "work").exists()
    rows = [r for s in json.loads((out / "manifest.json").read_text())["shards"]
            for r in pq.read_table(out / s["path"]).to_pylist()]
    text = json.dumps(rows, ensure_ascii=False, default=str)
    assert text.count("Mail <EMAIL_") == 4 and "ayse.yilmaz" not in text
    assert len(set(re.findall(r"<EMAIL_[0-9a-f]+>", text))) == 1  # one pseudonym in shards of both runs
    for path in out.rglob("*"):
        assert not path.is_file() or salt not in path.read_bytes(), path


def test_dask_cluster_gives_the_same_shards(prefect_api, tmp_path):
    from distributed import LocalCluster

    from flows.prepare import run_flow

    inputs = make_inputs(tmp_path / "in", files=3, rows=200)
    local = run_prepare(fast_config(tmp_path / "local", [inputs]), progress=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        dask = run_flow(fast_config(tmp_path / "dask", [inputs]), dask_address=cluster.scheduler_address)
    assert shard_hashes(dask.run_dir) == shard_hashes(local.run_dir)
    assert dask.report["counts"] == local.report["counts"]


def test_deployment_rejects_bad_parameters_through_the_server(prefect_api):
    import asyncio

    from prefect.deployments import run_deployment

    from flows.prepare import prepare

    async def deploy_and_run():
        deployment = await prepare.ato_deployment(name="dataset")
        await deployment.apply()
        return await run_deployment("prepare/dataset", parameters={"params": {"workers": 0, "inputs": ["x"]}},
                                    timeout=0)

    with pytest.raises(Exception) as exc:
        asyncio.run(deploy_and_run())
    message = str(exc.value)
    assert "params.workers" in message and "minimum of 1" in message, message


def test_a_failing_shard_names_the_file_and_phase_but_no_content(tmp_path, monkeypatch):
    from pipeline.data.dedup import keys as dedup  # where the dedup keys step calls it
    from pipeline.runner import PrepareError

    inputs = make_inputs(tmp_path / "in", files=2, rows=20)

    def broken_keys(records, cfg):
        raise ValueError(f"cannot hash {records[0]['messages'][0]['content']}")  # would leak content

    monkeypatch.setattr(dedup, "compute_keys", broken_keys)
    monkeypatch.delenv("PREPARE_DEBUG", raising=False)
    with pytest.raises(PrepareError) as exc:
        run_prepare(fast_config(tmp_path, [inputs]), progress=False)
    message = str(exc.value)
    # the keys of both files are computed in one batch: the error names their shard (its first file and more)
    assert message == "in/part0.jsonl (+1 file): normalize failed (ValueError)"
    assert not (tmp_path / "run" / "manifest.json").exists()
