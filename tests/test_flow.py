"""The Prefect flow against a real Prefect test server (one per session, its own PREFECT_HOME) and the
local S3 server: tasks mapped over shards, artifacts published, the same output as `prepare run`."""
import json


from conftest import FLOW_ARTIFACT_KEYS, SAMPLE_DATA, read_flow_artifacts


def test_flow_runs_end_to_end_and_publishes_artifacts(prefect_api, bucket, tmp_path):
    import boto3

    from flows.prepare import prepare
    from pipeline.config import PrepareConfig
    from pipeline.runner import run_prepare

    cfg = PrepareConfig(inputs=[str(SAMPLE_DATA)], out=str(tmp_path / "flow"), s3=f"s3://{bucket}/ds")
    out = prepare(cfg)
    assert out["manifest_uri"] == f"s3://{bucket}/ds/manifest.json"
    counts = out["counts"]
    assert counts["input"] == counts["kept"] + counts["quarantined"] + sum(counts["dropped"].values())
    remote = json.loads(boto3.client("s3").get_object(Bucket=bucket, Key="ds/manifest.json")["Body"].read())
    local = json.loads((tmp_path / "flow" / "manifest.json").read_text())
    assert remote == local

    # the flow and the plain runner produce the same shards
    plain = run_prepare(cfg.model_copy(update={"out": str(tmp_path / "plain"), "s3": None}), progress=False)
    plain_manifest = json.loads((plain.run_dir / "manifest.json").read_text())
    assert [s["sha256"] for s in plain_manifest["shards"]] == [s["sha256"] for s in local["shards"]]

    assert {a.key for a in read_flow_artifacts()} == set(FLOW_ARTIFACT_KEYS)


def test_a_task_that_fails_once_is_retried(prefect_api):
    """A phase's task that hits a transient fault is retried by Prefect (RETRIES) and the phase completes
    with every shard's result, in order."""
    import threading
    from types import SimpleNamespace

    from prefect import flow
    from prefect.task_runners import ThreadPoolTaskRunner

    from flows.prepare import RETRIES, PrefectExecutor

    calls: list[int] = []
    lock = threading.Lock()

    def flaky(task, factor: int) -> int:  # phases take a shard task (with a label) first
        with lock:
            calls.append(task.n)
            first_try = calls.count(task.n) == 1
        if task.n == 1 and first_try:
            raise ConnectionResetError("a transient fault on the first try")
        return task.n * factor

    shards = [SimpleNamespace(n=n, label=f"shard-{n}") for n in range(3)]

    @flow(task_runner=ThreadPoolTaskRunner(max_workers=2))
    def phase():
        return PrefectExecutor().map(flaky, shards, "flaky", factor=10)

    assert RETRIES["retries"] >= 1
    assert phase() == [0, 10, 20]
    assert sorted(calls) == [0, 1, 1, 2], "shard 1 ran twice, the others once"
