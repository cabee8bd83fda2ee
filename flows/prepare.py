"""The Prefect front end: the flow `prepare` and its deployment `dataset`.

(No `from __future__ import annotations` here: Prefect builds the parameter model from the real
annotation of the flow function.)

Thin by design: the pipeline's own orchestration (pipeline.runner.run_prepare) runs inside the flow
with an executor whose map() submits Prefect tasks, so every phase is a task mapped over input
shards, with retries, on the flow's task runner (worker processes by default, a Dask cluster with
--dask-address). The flow then publishes the report as artifacts.
"""

import os
from pathlib import Path
from typing import Any, Callable

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.futures import wait
from prefect.task_runners import ProcessPoolTaskRunner
from prefect.tasks import exponential_backoff
from prefect.utilities.annotations import unmapped
from pydantic import BaseModel

from pipeline.core.config import PrepareConfig, merge_config
from pipeline.core.numfmt import number
from pipeline.core.progress import CountFiles, StageCounts
from pipeline.report.build import render_notes_text
from pipeline.runner import RunResult, run_prepare
from pipeline.runner.preflight import PreflightError, absolute_paths, preflight

DEMO_DEFAULTS = PrepareConfig(inputs=["sample_data"], out="runs/demo")
RETRIES = dict(retries=2, retry_delay_seconds=exponential_backoff(backoff_factor=2), retry_jitter_factor=0.5)


class PrefectExecutor:
    """Runs each phase of the pipeline as Prefect tasks: map() over shards, call() for global steps."""

    def map(self, fn: Callable, items: list, label: str, **kwargs) -> list:
        mapped = task(fn, name=label, task_run_name=f"{label}-{{task.label}}", cache_policy=NO_CACHE, **RETRIES)
        futures = mapped.map(items, **{k: unmapped(v) for k, v in kwargs.items()})
        wait(futures)
        try:
            return [f.result() for f in futures]
        except Exception as exc:
            runner = dask_runner()
            if runner is not None:
                from flows.cluster import scheduler_lost

                lost = scheduler_lost(exc, runner.address)
                if lost is not None:
                    raise lost from None
            raise

    def call(self, fn: Callable, label: str, **kwargs) -> Any:
        return task(fn, name=label, cache_policy=NO_CACHE, **RETRIES)(**kwargs)

    def counts(self, folder: Path) -> StageCounts:
        """Where the workers' progress counts are read: through the scheduler when the flow's tasks run on a
        Dask cluster (flows.cluster: its workers may share no disk with this machine), else files in `folder`."""
        runner = dask_runner()
        if runner is None:
            return CountFiles(folder)
        from flows.cluster import ClusterCounts

        return ClusterCounts(runner.client, folder)

    def close(self) -> None:
        pass


def dask_runner():
    """The flow run's DaskTaskRunner, or None under another task runner."""
    runner = FlowRunContext.get().task_runner
    return runner if type(runner).__name__ == "DaskTaskRunner" else None  # prefect_dask imports distributed


@flow(name="prepare", task_runner=ProcessPoolTaskRunner(max_workers=2), log_prints=False,
      description="Normalize, clean, dedup, strip personal data, measure tokens, shard, upload; plan the GPU.")
def prepare(params: PrepareConfig = DEMO_DEFAULTS) -> dict:
    logger = get_run_logger()
    try:
        params = with_real_names(with_deployment_defaults(params))
        preflight(params, log=logger.warning)  # model, tokenizer, S3 destination: before a record is read
        # each stage's count and rate go to the flow run's log (pipeline.core.progress), every
        # PREPARE_PROGRESS_INTERVAL seconds and at the end of the stage
        result = run_prepare(params, executor=PrefectExecutor(), progress=True, log=logger.info)
    except Exception as exc:
        log_failure(logger, exc)
        raise
    publish(result)
    counts = result.report["counts"]
    logger.info("kept %s of %s records (%s quarantined, %s dropped); manifest: %s", number(counts["kept"]),
                number(counts["input"]), number(counts["quarantined"]), number(sum(counts["dropped"].values())),
                result.manifest_uri or str(result.run_dir / "manifest.json"))
    notes = render_notes_text(result.report)  # the same lines as `prepare run` prints
    if notes:
        logger.warning("\n".join(notes))
    return {"counts": counts, "manifest_uri": result.manifest_uri, "run_dir": str(result.run_dir),
            "upload": result.upload}


def failure_message(exc: BaseException) -> str:
    """The one line `prepare run` prints for this error (no traceback; a bug shows only its type: its text may
    quote the data)."""
    from pipeline.cli.errors import describe_error, internal_error

    message, _ = describe_error(exc)
    return message or internal_error(exc)


def log_failure(logger, exc: BaseException) -> None:
    """The reason of a failed run, in one line, where `prefect deployment run --watch` shows it: that command
    prints the flow run's events (and logs only where the server streams them out, off by default), and its
    Failed event carries no reason. So the reason is an event of the flow run, `prepare.run.failed`, whose
    resource name is the line (the watch prints `<event> * <resource name>`), and an ERROR line of the run's
    log (the UI). Both are sent before the run turns Failed."""
    from prefect.context import FlowRunContext
    from prefect.events import emit_event
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    line = f"prepare: error: {failure_message(exc)}"
    logger.error("%s", line, extra={"prepare_failure": True})  # the CLI prints it itself (flows.cluster)
    APILogWorker.drain_all(timeout=5, at_exit=False)  # what APILogHandler.flush does outside an event loop
    flow_run = getattr(FlowRunContext.get(), "flow_run", None)
    if flow_run is not None:
        emit_event("prepare.run.failed",
                   resource={"prefect.resource.id": f"prepare.run.{flow_run.id}", "prefect.resource.name": line},
                   related=[{"prefect.resource.id": f"prefect.flow-run.{flow_run.id}",
                             "prefect.resource.role": "flow-run", "prefect.resource.name": flow_run.name}])
        EventsWorker.drain_all(timeout=10, at_exit=False)


def explicit_fields(model: BaseModel) -> dict:
    """The fields a run's parameters named, section by section (pydantic's fields_set), as a partial config."""
    out = {}
    for name in model.model_fields_set:
        value = getattr(model, name)
        out[name] = explicit_fields(value) if isinstance(value, BaseModel) else value
    return out


def with_deployment_defaults(params: PrepareConfig) -> PrepareConfig:
    """A deployment run's `params` merged field by field over the deployment's own `params`.

    Prefect merges run parameters over a deployment's only at the top level, and this flow has one parameter:
    `--param params='{"inputs": ["data/"]}'` replaced the served defaults whole, and pydantic filled the rest
    from PrepareConfig's defaults (s3 became null: nothing uploaded, the run Completed). The fields the run
    names (fields_set, per section) are taken over the deployment's parameters; a field named with null
    (`"s3": null`) is a value too. Outside a deployment run the parameters are used as they are."""
    from prefect.client.orchestration import get_client
    from prefect.context import FlowRunContext

    context = FlowRunContext.get()
    deployment_id = getattr(getattr(context, "flow_run", None), "deployment_id", None)
    if deployment_id is None:
        return params
    with get_client(sync_client=True) as client:
        served = (client.read_deployment(deployment_id).parameters or {}).get("params")
    if not isinstance(served, dict):
        return params
    return merge_config(served, explicit_fields(params))


def labelled_parameters(cfg: PrepareConfig) -> dict:
    """The parameters as Prefect stores them: every input whose name holds personal data is its label (the PII
    engine's verdict, as for the run's outputs). The server keeps a deployment's and a flow run's parameters as
    given; the map from labels back to names stays in the local file beside the run directory (names_file)."""
    from pipeline.data.readers import NameMap, redact_items

    params = cfg.model_dump(mode="json")
    if not cfg.pii.enabled:
        return params
    redact_items([*cfg.inputs, *cfg.validation_inputs], cfg)
    names = NameMap.of(cfg.out)
    names.save()  # before the server holds a label: a flow run maps it back from this file
    for key in ("inputs", "validation_inputs"):
        params[key] = [names.shown(item) for item in params[key]]
    return params


def with_real_names(params: PrepareConfig) -> PrepareConfig:
    """The labels in a run's inputs mapped back to the names they stand for (the local map of params.out)."""
    from pipeline.data.readers import NameMap

    names = NameMap.of(params.out).names
    real = {key: [names.get(item, item) for item in getattr(params, key)] for key in ("inputs", "validation_inputs")}
    return params.model_copy(update=real) if real != {k: getattr(params, k) for k in real} else params


def publish(result: RunResult) -> None:
    """Artifacts for the Prefect UI: the whole report, the accounting table, the KVKK summary, lengths and the
    GPU plan."""
    from pipeline.core.markdown import text
    from pipeline.report.build import render_markdown
    from pipeline.report.html import html_locations

    report = result.report
    html = html_locations(result.run_dir, result.manifest_uri)
    markdown = render_markdown(report)
    if html:  # the one-page report with the charts: on S3 beside the shards when uploaded, else the local file
        create_link_artifact(key="prepare-report-html", link=html["s3"] or html["local"], link_text="report.html",
                             description="the whole report as one self-contained HTML page")
        markdown = (f"HTML report: [{text(html['s3'] or 'report.html')}]({html['s3'] or html['local']})"
                    + (f" (local copy: {text(html['local'])})" if html["s3"] else "") + "\n\n" + markdown)
    create_markdown_artifact(key="prepare-report", markdown=markdown, description="report.md of this run")
    counts = report["counts"]
    rows = [{"reason": f"dropped: {k}", "records": v} for k, v in counts["dropped"].items()]
    rows += [{"reason": f"quarantined: {k}", "records": v} for k, v in counts["quarantined_by_reason"].items()]
    create_table_artifact(key="prepare-accounting", table=rows or [{"reason": "none", "records": 0}],
                          description=f"{counts['input']} in, {counts['kept']} kept")
    if "pii" in report:
        from pipeline.data.pii import render_kvkk_markdown

        create_markdown_artifact(key="prepare-kvkk", markdown=render_kvkk_markdown(report["pii"]),
                                 description="personal data found, what was done with it, residual risk")
    if "lengths" in report:
        from pipeline.data.lengths.draw import render_lengths_markdown

        create_markdown_artifact(key="prepare-token-lengths", markdown=render_lengths_markdown(report["lengths"]))
    if "plan" in report:
        from pipeline.plan.gpus import render_plan_markdown

        create_markdown_artifact(key="prepare-gpu-plan", markdown=render_plan_markdown(report["plan"]))


def run_flow(cfg: PrepareConfig, dask_address: str | None = None) -> RunResult:
    """Run the flow in this process (needs PREFECT_API_URL or an ephemeral server); on a Dask cluster
    when dask_address is given. Returns what `prepare run` prints."""
    runner = ProcessPoolTaskRunner(max_workers=cfg.workers)
    if dask_address:
        from prefect_dask import DaskTaskRunner

        from flows.cluster import check_api, one_line_failures, one_prefect_api

        one_line_failures()
        cfg = absolute_paths(cfg)  # the flow hands paths to workers started in other folders
        check_workers(cfg, dask_address)
        with one_prefect_api() as api_url:  # the workers' tasks report to the flow's server, start none
            check_api(dask_address, api_url)
            runner = DaskTaskRunner(address=dask_address)
            out = prepare.with_options(task_runner=runner)(cfg, return_state=True).result()
    else:
        out = prepare.with_options(task_runner=runner)(cfg, return_state=True).result()
    import json

    run_dir = Path(out["run_dir"])
    report = json.loads((run_dir / "report.json").read_text())
    return RunResult(report, run_dir, out["manifest_uri"], out["upload"])


SCHEDULER_TIMEOUT = 20  # seconds for the scheduler to answer (a typo in --dask-address fails after this)
WORKERS_TIMEOUT = 60  # seconds for a first worker to join


def check_workers(cfg: PrepareConfig, dask_address: str) -> None:
    """Before the flow starts: every worker of the cluster sees the inputs, shares --out with this machine and,
    with the PII step on, has this machine's salt (pii.salt_env; a digest is compared, the salt never leaves
    a process). One probe per worker (Client.run, outside the task graph), which also sets OFFLINE_ENV there
    (before a fresh worker imports Prefect for its first task). A worker that joins later is not probed."""
    from distributed import Client

    from flows import quiet_environment
    from pipeline.runner.preflight import check_worker_views, remove_probe, worker_view, write_probe

    paths = [p for p in [*cfg.inputs, *cfg.validation_inputs] if not p.startswith("s3://")]
    token, created = write_probe(cfg.out)
    try:
        try:
            client = Client(dask_address, timeout=SCHEDULER_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise PreflightError(f"--dask-address {dask_address}: cannot reach the Dask scheduler "
                                 f"({type(exc).__name__})") from None
        with client:
            try:
                client.wait_for_workers(1, timeout=WORKERS_TIMEOUT)
            except TimeoutError:
                raise PreflightError(f"--dask-address {dask_address}: no Dask worker joined the scheduler within "
                                     f"{WORKERS_TIMEOUT} s") from None
            client.run(quiet_environment)
            views = client.run(worker_view, paths, cfg.out, token, cfg.pii.salt_env, on_error="return")
        check_worker_views(cfg, views, cfg.out, token)
    finally:
        remove_probe(cfg.out, token, created)


def serve(limit: int = 2, defaults: PrepareConfig | None = None) -> None:
    """Serve the deployment `prepare/dataset`; `prefect deployment run prepare/dataset` starts a run."""
    if not os.environ.get("PREFECT_API_URL"):
        raise SystemExit("prepare: error: PREFECT_API_URL is not set (start a server: prefect server start)")
    params = labelled_parameters(defaults or DEMO_DEFAULTS)
    prepare.serve(name="dataset", parameters={"params": params}, limit=limit,
                  description="Prepare a fine-tuning dataset. One parameter, `params` (a PrepareConfig); a run's "
                              "`params` override the served ones field by field, e.g. --param "
                              "params='{\"inputs\": [\"data/\"], \"pii\": {\"operator\": \"mask\"}}'.")
