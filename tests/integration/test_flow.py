"""The Prefect flow against a real Prefect test server (one per session, its own PREFECT_HOME) and the
local S3 server: tasks mapped over shards, artifacts published, the same output as `prepare run`."""
import json
import re

import pytest
from conftest import FLOW_ARTIFACT_KEYS, SAMPLE_DATA, read_flow_artifacts

pytestmark = pytest.mark.integration


def test_flow_runs_end_to_end_and_publishes_artifacts(prefect_api, bucket, tmp_path, sample_run):
    import boto3

    from flows.prepare import prepare
    from pipeline.core.config import PrepareConfig

    cfg = PrepareConfig(inputs=[str(SAMPLE_DATA)], out=str(tmp_path / "flow"), s3=f"s3://{bucket}/ds")
    state = prepare(cfg, return_state=True)
    out = state.result()
    assert out["manifest_uri"] == f"s3://{bucket}/ds/manifest.json"
    counts = out["counts"]
    assert counts["input"] == counts["kept"] + counts["quarantined"] + sum(counts["dropped"].values())
    remote = json.loads(boto3.client("s3").get_object(Bucket=bucket, Key="ds/manifest.json")["Body"].read())
    local = json.loads((tmp_path / "flow" / "manifest.json").read_text())
    assert remote == local

    # the flow and the plain runner produce the same shards (the session's run of the same data and settings,
    # but for `out` and `s3`)
    plain_cfg, plain = sample_run
    assert plain_cfg.model_copy(update={"out": cfg.out, "s3": cfg.s3}) == cfg
    plain_manifest = json.loads((plain.run_dir / "manifest.json").read_text())
    assert [s["sha256"] for s in plain_manifest["shards"]] == [s["sha256"] for s in local["shards"]]

    artifacts = read_flow_artifacts()
    assert {a.key for a in artifacts} == set(FLOW_ARTIFACT_KEYS)
    # uploaded, report.html is linked on S3 from its own artifact and from the report's
    for key in ("prepare-report-html", "prepare-report"):
        assert any(f"s3://{bucket}/ds/report.html" in str(a.data) for a in artifacts if a.key == key), key

    # each stage's progress, with counts and rates, is in the flow run's log
    messages = [log.message for log in read_flow_run_logs(state.state_details.flow_run_id)]
    finals = {m.split(":")[0]: m for m in messages if re.fullmatch(r"\w+: [\d,]+( of [\d,]+)? (records|files) "
                                                                  r"\([\d,]+/s, \d+ s\)", m)}
    assert {"read", "dedup", "pii", "lengths", "write", "upload"} <= set(finals), messages
    assert finals["read"].startswith(f"read: {counts['input']:,} records (")
    assert finals["write"].startswith(f"write: {counts['kept']:,} of {counts['kept']:,} records (")


def read_flow_run_logs(flow_run_id) -> list:
    import time

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.logging.handlers import APILogWorker

    APILogWorker.drain_all(timeout=10, at_exit=False)
    with get_client(sync_client=True) as client:
        for _ in range(60):  # the server writes logs asynchronously
            logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
            if any("write: " in log.message for log in logs):
                return logs
            time.sleep(0.5)
    return logs


def test_a_failed_run_says_why_in_one_line_where_watch_shows_it(prefect_api, tmp_path):
    """`prefect deployment run --watch` prints a flow run's events (its logs only where the server streams them
    out, which is off by default) and showed `Failed` without the reason. The reason is now an event of the
    flow run (the line the watch prints is `prepare.run.failed * <reason>`) and an ERROR line of its log."""
    import time

    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventAnyResourceFilter, EventFilter, EventNameFilter

    from flows.prepare import prepare
    from pipeline.core.config import PrepareConfig

    missing = tmp_path / "missing.jsonl"
    state = prepare(PrepareConfig(inputs=[str(missing)], out=str(tmp_path / "run")), return_state=True)
    assert state.is_failed()
    flow_run_id = state.state_details.flow_run_id
    flt = EventFilter(event=EventNameFilter(name=["prepare.run.failed"]),
                      any_resource=EventAnyResourceFilter(id=[f"prefect.flow-run.{flow_run_id}"]))
    events = []
    with get_client(sync_client=True) as client:
        for _ in range(60):  # events are stored asynchronously
            events = client.read_events(filter=flt, limit=10).events
            if events:
                break
            time.sleep(0.5)
    assert len(events) == 1
    line = events[0].resource.get("prefect.resource.name")
    # the CLI's line for this error (the input's name may be shown as a label: readers.redact_names)
    assert re.fullmatch(r"prepare: error: \S+\.jsonl: no such file or folder", line), line
    assert line in [log.message for log in read_flow_run_logs(flow_run_id) if log.level >= 40]


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


def test_a_deployment_run_merges_partial_params_over_the_served_defaults(prefect_api, bucket, tmp_path):
    """`prefect deployment run prepare/dataset --param params='{"out": ...}'` named only some fields; Prefect
    replaces a deployment's parameter whole, so the served s3, the steps turned off and a nested setting were
    dropped for PrepareConfig's defaults (s3 null: nothing uploaded, the run Completed)."""
    import boto3
    from prefect.deployments import run_deployment
    from prefect.flow_engine import run_flow

    from flows.prepare import prepare
    from pipeline.core.config import PrepareConfig

    served = PrepareConfig(inputs=[str(SAMPLE_DATA)], out=str(tmp_path / "served"), s3=f"s3://{bucket}/served",
                           workers=1)
    served.pii.enabled = served.lengths.enabled = served.estimate.enabled = False
    served.dedup.threshold = 0.9
    prepare.to_deployment(name="merge-test", parameters={"params": served.model_dump(mode="json")}).apply()

    # the shape of --params '{"params": {...}}' and of --param params='{...}': a partial config
    override = {"out": str(tmp_path / "override"), "dedup": {"near": False}}
    flow_run = run_deployment("prepare/merge-test", parameters={"params": override}, timeout=0)
    state = run_flow(prepare, flow_run=flow_run, return_type="state")
    assert state.is_completed(), state
    out = state.result()
    assert out["manifest_uri"] == f"s3://{bucket}/served/manifest.json"  # the served s3 was kept
    manifest = json.loads((tmp_path / "override" / "manifest.json").read_text())
    config = manifest["config"]
    assert config["out"] == str(tmp_path / "override")
    assert config["dedup"]["near"] is False and config["dedup"]["threshold"] == 0.9  # section merged key by key
    assert not config["pii"]["enabled"] and not config["lengths"]["enabled"]
    remote = boto3.client("s3").get_object(Bucket=bucket, Key="served/manifest.json")["Body"].read()
    assert json.loads(remote) == manifest

    # a field named with null is a value: no upload
    flow_run = run_deployment("prepare/merge-test", parameters={"params": {"out": str(tmp_path / "local"),
                                                                           "s3": None}}, timeout=0)
    state = run_flow(prepare, flow_run=flow_run, return_type="state")
    assert state.is_completed(), state
    assert state.result()["manifest_uri"] is None
    # not uploaded, report.html is linked as the local file from its own artifact and from the report's (this
    # flow run is the one test_report_html.py ran for it)
    html = (tmp_path / "local" / "report.html").resolve().as_uri()
    artifacts = read_flow_artifacts()
    for key in ("prepare-report-html", "prepare-report"):
        assert any(html in str(a.data) for a in artifacts if a.key == key), (key, [a.data for a in artifacts])


def test_explicit_fields_and_merge_are_field_by_field():
    from flows.prepare import explicit_fields
    from pipeline.core.config import PrepareConfig, merge_config

    partial = PrepareConfig.model_validate({"workers": 3, "pii": {"operator": "mask"}, "formats": {"mapping": {"text": "body"}}})
    assert explicit_fields(partial) == {"workers": 3, "pii": {"operator": "mask"}, "formats": {"mapping": {"text": "body"}}}
    served = {"s3": "s3://b/p", "pii": {"enabled": False}, "formats": {"mapping": {"prompt": "q", "response": "a"}}}
    merged = merge_config(served, explicit_fields(partial))
    assert (merged.s3, merged.workers, merged.pii.enabled, merged.pii.operator) == ("s3://b/p", 3, False, "mask")
    assert merged.formats.mapping == {"text": "body"}  # a mapping value is replaced whole, not merged


def test_the_readme_examples_are_the_parameter_s_real_shape():
    """docs/prefect.md's `--param params='...'` and `--params '...'` examples are partial PrepareConfigs that merge."""
    import re

    from conftest import ROOT

    from flows.prepare import DEMO_DEFAULTS
    from pipeline.core.config import merge_config

    readme = (ROOT / "docs" / "prefect.md").read_text()
    single = [json.loads(m) for m in re.findall(r"--param params='(\{.*?\})'", readme)]
    whole = [json.loads(m)["params"] for m in re.findall(r"--params '(\{.*?\})'", readme)]
    assert single and whole
    for partial in single + whole:
        merged = merge_config(DEMO_DEFAULTS, partial)
        for key, value in partial.items():
            got = getattr(merged, key)
            if isinstance(value, dict):
                assert {k: getattr(got, k) for k in value} == value
            else:
                assert got == value


def test_the_prefect_server_holds_only_labels_for_file_names_with_personal_data(prefect_api, tmp_path):
    """The server stores a deployment's and a flow run's parameters as given: an input named after a person
    stayed in its database. The served parameters hold its label; the flow maps it back from the local map."""
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment
    from prefect.flow_engine import run_flow

    from flows.prepare import labelled_parameters, prepare
    from pipeline.core.config import PrepareConfig

    raw = "John_Smith_12345678901.jsonl"
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / raw).write_text("".join(json.dumps({"instruction": f"Question number {i} about parcels?",
                                                            "output": f"Answer {i}: it ships on Monday."}) + "\n"
                                               for i in range(3)))
    served = PrepareConfig(inputs=[str(tmp_path / "in" / raw)], out=str(tmp_path / "run"), workers=1)
    served.lengths.enabled = served.estimate.enabled = served.dedup.enabled = False
    params = labelled_parameters(served)
    assert raw not in json.dumps(params)
    deployment_id = prepare.to_deployment(name="labels-test", parameters={"params": params}).apply()
    flow_run = run_deployment("prepare/labels-test", parameters={"params": {"workers": 1}}, timeout=0)
    state = run_flow(prepare, flow_run=flow_run, return_type="state")
    assert state.is_completed(), state
    assert state.result()["counts"]["input"] == 3  # the label was mapped back to the file
    with get_client(sync_client=True) as client:
        stored = [client.read_deployment(deployment_id).parameters, client.read_flow_run(flow_run.id).parameters]
    assert "John_Smith" not in json.dumps(stored) and "12345678901" not in json.dumps(stored)
