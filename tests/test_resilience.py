"""Resume after SIGKILL, a Dask cluster giving the same output, and the deployment rejecting bad
parameters through the server."""
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from pipeline.runner import run_prepare

from conftest import ROOT, fast_config


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


def shard_hashes(run_dir):
    return [s["sha256"] for s in json.loads((run_dir / "manifest.json").read_text())["shards"]]


def test_killed_run_resumes_to_identical_output(tmp_path):
    inputs = make_inputs(tmp_path / "in")
    reference = run_prepare(fast_config(tmp_path / "ref", [inputs]), progress=False)
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PREPARE_SLOW_SHARDS": "0.6"}
    cmd = [sys.executable, "-m", "pipeline.cli", "run", str(inputs), "--out", str(out), "--workers", "1",
           "--no-pii", "--no-lengths", "--no-estimate"]
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
    resumed = run_prepare(fast_config(tmp_path, [inputs]), progress=False)
    assert resumed.reused_shards >= finished
    assert shard_hashes(out) == shard_hashes(reference.run_dir)
    assert not (out / "work").exists()


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
    from pipeline import dedup
    from pipeline.runner import PrepareError

    inputs = make_inputs(tmp_path / "in", files=2, rows=20)

    def broken_keys(records, cfg):
        raise ValueError(f"cannot hash {records[0]['messages'][0]['content']}")  # would leak content

    monkeypatch.setattr(dedup, "compute_keys", broken_keys)
    monkeypatch.delenv("PREPARE_DEBUG", raising=False)
    with pytest.raises(PrepareError) as exc:
        run_prepare(fast_config(tmp_path, [inputs]), progress=False)
    message = str(exc.value)
    assert message == "in/part0.jsonl: normalize failed (ValueError)"
    assert not (tmp_path / "run" / "manifest.json").exists()
