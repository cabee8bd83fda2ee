"""`make demo`: start a local Prefect server (SQLite under .prefect/), a local S3 server (moto) and the
serve process for prepare/dataset, run `prefect deployment run prepare/dataset --watch` on the sample
data, print the summary with the S3 URI of the manifest, and stop everything it started."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from flows.services import BIN, moto_server, prefect_server, s3_env

ROOT = Path(__file__).resolve().parent.parent
BUCKET, PREFIX = "demo-datasets", "sample/v1"


def step(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


def main() -> int:
    os.chdir(ROOT)
    logs = ROOT / ".prefect" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    step("starting the local S3 server (moto) and the Prefect server (SQLite in .prefect/)")
    with moto_server(logs / "s3.log") as endpoint, prefect_server(ROOT / ".prefect", logs / "server.log") as penv:
        env = {**os.environ, **penv, **s3_env(endpoint), "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": ""}
        os.environ.update(env)
        import boto3

        boto3.client("s3").create_bucket(Bucket=BUCKET)
        step(f"serving the deployment prepare/dataset (S3 at {endpoint})")
        config = {"inputs": ["sample_data"], "out": "runs/demo", "s3": f"s3://{BUCKET}/{PREFIX}"}
        config_path = ROOT / ".prefect" / "demo-config.json"
        config_path.write_text(json.dumps(config))
        serve = subprocess.Popen([str(BIN / "prepare"), "serve", "--config", str(config_path)], env=env,
                                 stdout=open(logs / "serve.log", "w"), stderr=subprocess.STDOUT)
        try:
            _wait_for_deployment(env, serve)
            step("prefect deployment run prepare/dataset --watch")
            run = subprocess.run([str(BIN / "prefect"), "deployment", "run", "prepare/dataset", "--watch",
                                  "--watch-timeout", "900"], env=env)
            if run.returncode != 0:
                print("prepare: error: the flow run did not complete; see .prefect/logs/serve.log", file=sys.stderr)
                return run.returncode
        finally:
            serve.terminate()
            serve.wait(30)
        report = json.loads((ROOT / "runs/demo/report.json").read_text())
        manifest_uri = f"s3://{BUCKET}/{PREFIX}/manifest.json"
        head = boto3.client("s3").head_object(Bucket=BUCKET, Key=f"{PREFIX}/manifest.json")
        from pipeline.cli import summary_text

        print()
        print(summary_text(report, manifest_uri, "runs/demo"))
        print(f"(manifest on the local S3 server: {head['ContentLength']} bytes; the server stops with the demo)")
    return 0


def _wait_for_deployment(env: dict, serve: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if serve.poll() is not None:
            raise SystemExit("prepare: error: `prepare serve` exited; see .prefect/logs/serve.log")
        probe = subprocess.run([str(BIN / "prefect"), "deployment", "inspect", "prepare/dataset"], env=env,
                               capture_output=True)
        if probe.returncode == 0:
            return
        time.sleep(1)
    raise SystemExit("prepare: error: the deployment prepare/dataset did not appear")


if __name__ == "__main__":
    sys.exit(main())
