"""S3 uploads under injected faults: the real moto server behind a fault-injecting proxy on loopback."""
import hashlib
import json
import logging
import os
import time

import boto3
import pytest
from faultproxy import Fault, FaultProxy

from flows.services import free_port
from pipeline.core.s3 import S3Error, upload_run

pytestmark = pytest.mark.integration

KEY_ID = "AKIAFAULTPROXYTEST77"
SECRET = "fault-proxy-secret/Zq8+never-log-me"


@pytest.fixture
def fast(monkeypatch, s3_endpoint):
    """Short timeouts, few tries and a 5 MB multipart threshold, so faults cost seconds, not minutes."""
    for name, value in {"PREPARE_S3_ATTEMPTS": "4", "PREPARE_S3_CONNECT_TIMEOUT": "1",
                        "PREPARE_S3_READ_TIMEOUT": "2", "PREPARE_S3_MULTIPART_MB": "5"}.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def direct(s3_endpoint):
    """A client that bypasses the proxy, to look at what really is on the server."""
    return boto3.client("s3", endpoint_url=s3_endpoint)


@pytest.fixture
def no_backoff(monkeypatch):
    """No wait between tries (botocore's backoff, the whole-object retry's): these tests count the tries and
    what reached the server, and the waits were seconds of sleep each. The bounded-time test keeps them."""
    from types import SimpleNamespace

    from botocore.retries.standard import ExponentialBackoff

    from pipeline.core import s3

    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0)
    monkeypatch.setattr(s3, "random", SimpleNamespace(uniform=lambda low, high: 0.0))


@pytest.fixture
def proxy(s3_endpoint, bucket, fast, no_backoff, monkeypatch):
    with FaultProxy(s3_endpoint, lifetime=60) as p:
        monkeypatch.setenv("AWS_ENDPOINT_URL", p.url)
        yield p


def make_run(run_dir, sizes=(50_000, 80_000, 12 * 1024**2)):
    """Shards of random bytes and a manifest listing their sha256, as a run directory has."""
    run_dir.mkdir(exist_ok=True)
    shards = []
    for i, size in enumerate(sizes):
        path = f"shard-{i:05d}.parquet"
        data = os.urandom(size)
        (run_dir / path).write_bytes(data)
        shards.append({"path": path, "sha256": hashlib.sha256(data).hexdigest()})
    (run_dir / "manifest.json").write_text(json.dumps({"shards": shards}))
    return [s["path"] for s in shards]


def rewrite_shard(run_dir, rel):
    """Change one shard and the manifest, as a run with different output would."""
    data = os.urandom(60_000)
    (run_dir / rel).write_bytes(data)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for s in manifest["shards"]:
        if s["path"] == rel:
            s["sha256"] = hashlib.sha256(data).hexdigest()
    (run_dir / "manifest.json").write_text(json.dumps(manifest))


def assert_remote_matches(direct, bucket, prefix, run_dir, names):
    keys = {o["Key"] for o in direct.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])}
    assert keys == {f"{prefix}/{n}" for n in names}
    for name in names:
        obj = direct.get_object(Bucket=bucket, Key=f"{prefix}/{name}")
        sha = hashlib.sha256((run_dir / name).read_bytes()).hexdigest()
        assert hashlib.sha256(obj["Body"].read()).hexdigest() == sha == obj["Metadata"]["sha256"], name
    assert not direct.list_multipart_uploads(Bucket=bucket).get("Uploads"), "a multipart upload was left open"


def has_manifest(direct, bucket, prefix):
    return "Contents" in direct.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/manifest.json")


def test_transient_faults_are_retried_until_the_upload_completes(tmp_path, bucket, proxy, direct):
    files = make_run(tmp_path / "run")
    proxy.add(
        Fault("reset", "HEAD", "/shard-00000"),
        Fault("500", "PUT", "/shard-00000"),
        Fault("503", "PUT", "/shard-00001"),
        Fault("slowdown", "PUT", "/shard-00001"),
        Fault("delay", "PUT", "/shard-00001", seconds=3),               # past the 2 s read timeout: retried
        Fault("slowdown", "POST", "/shard-00002.parquet?uploads"),      # CreateMultipartUpload
        Fault("reset", "PUT", "partNumber=2"),                          # UploadPart
        Fault("500", "PUT", "partNumber=3"),
        Fault("503", "POST", "/shard-00002.parquet?uploadId="),         # CompleteMultipartUpload
        Fault("pass", "HEAD", "/shard-00002"),                          # the check before the upload, then
        Fault("reset", "HEAD", "/shard-00002"),                         # the one after it
        Fault("delay", "PUT", "/manifest.json", seconds=0.5),           # slow, within the timeout
    )
    start = time.monotonic()
    result = upload_run(tmp_path / "run", f"s3://{bucket}/ds", files)
    assert proxy.pending() == []
    assert result.uploaded == [*files, "manifest.json"] and result.skipped == []
    assert result.manifest_uri == f"s3://{bucket}/ds/manifest.json"
    assert len(proxy.requests("PUT", "partNumber=")) >= 3, "the big shard went up in parts"
    assert_remote_matches(direct, bucket, "ds", tmp_path / "run", [*files, "manifest.json"])
    assert time.monotonic() - start < 20


def test_an_object_is_retried_whole_when_request_retries_run_out(tmp_path, bucket, proxy, direct):
    files = make_run(tmp_path / "run")
    proxy.add(Fault("500", "PUT", "partNumber=2", times=4))   # all 4 tries of one part: the upload is aborted
    upload_run(tmp_path / "run", f"s3://{bucket}/ds", files)
    assert proxy.pending() == []
    assert len(proxy.requests("POST", "/shard-00002.parquet?uploads")) == 2, "one whole retry of the multipart upload"
    assert_remote_matches(direct, bucket, "ds", tmp_path / "run", [*files, "manifest.json"])


def test_an_upload_that_landed_unanswered_is_not_repeated(tmp_path, bucket, proxy, direct):
    files = make_run(tmp_path / "run")
    # every try of CompleteMultipartUpload is carried out, but its answer is lost
    proxy.add(Fault("reset_after", "POST", "/shard-00002.parquet?uploadId=", times=4))
    upload_run(tmp_path / "run", f"s3://{bucket}/ds", files)
    assert proxy.pending() == []
    assert len(proxy.requests("POST", "/shard-00002.parquet?uploads")) == 1, "the retry found the object in place"
    assert_remote_matches(direct, bucket, "ds", tmp_path / "run", [*files, "manifest.json"])


def test_rerun_deletes_the_old_manifest_first_and_uploads_the_new_one_last(tmp_path, bucket, proxy, direct):
    run = tmp_path / "run"
    files = make_run(run, sizes=(1000, 2000, 3000))
    upload_run(run, f"s3://{bucket}/ds", files)

    proxy.log.clear()
    again = upload_run(run, f"s3://{bucket}/ds", files)
    assert again.uploaded == [] and again.skipped == [*files, "manifest.json"]
    assert {m for m, _, _ in proxy.log} == {"HEAD"}, "an unchanged re-run only looks"

    rewrite_shard(run, files[1])
    proxy.log.clear()
    changed = upload_run(run, f"s3://{bucket}/ds", files)
    assert changed.uploaded == [files[1], "manifest.json"] and changed.skipped == [files[0], files[2]]
    writes = [(m, p.split("/")[-1]) for m, p, _ in proxy.log if m in ("PUT", "DELETE", "POST")]
    assert writes == [("DELETE", "manifest.json"), ("PUT", files[1]), ("PUT", "manifest.json")]
    assert_remote_matches(direct, bucket, "ds", run, [*files, "manifest.json"])


def test_an_upload_that_cannot_finish_raises_and_leaves_no_manifest(tmp_path, bucket, proxy, direct):
    run = tmp_path / "run"
    files = make_run(run, sizes=(1000, 2000, 3000))
    upload_run(run, f"s3://{bucket}/ds", files)
    rewrite_shard(run, files[0])
    rewrite_shard(run, files[1])
    proxy.add(Fault("500", "PUT", f"/{files[1]}", times=-1))   # this shard can never be written
    proxy.log.clear()

    start = time.monotonic()
    with pytest.raises(S3Error) as err:
        upload_run(run, f"s3://{bucket}/ds", files)
    elapsed = time.monotonic() - start
    message = str(err.value)
    assert message.startswith(f"upload of s3://{bucket}/ds/{files[1]} failed after 3 attempt(s)"), message
    assert "\n" not in message and ("InternalError" in message or "500" in message)
    assert not has_manifest(direct, bucket, "ds"), "no manifest may point at a shard that is not there"
    assert len(proxy.requests("PUT", f"/{files[1]}")) == 3 * 4, "3 whole tries of 4 requests each"
    assert elapsed < 15


@pytest.mark.parametrize("endpoint", ["down", "hangs"])
def test_an_unreachable_endpoint_fails_in_bounded_time(tmp_path, bucket, fast, monkeypatch, s3_endpoint, endpoint):
    files = make_run(tmp_path / "run", sizes=(1000,))
    monkeypatch.setenv("PREPARE_S3_READ_TIMEOUT", "0.5")
    monkeypatch.setenv("PREPARE_S3_ATTEMPTS", "2")
    with FaultProxy(s3_endpoint, [Fault("delay", seconds=5, times=-1)], lifetime=30) as hanging:
        # "down": nobody listens on the port; "hangs": every answer takes longer than the read timeout
        url = hanging.url if endpoint == "hangs" else f"http://127.0.0.1:{free_port()}"
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        start = time.monotonic()
        with pytest.raises(S3Error, match=rf"^check of s3://{bucket}/ds/{files[0]} failed after 3 attempt\(s\): "):
            upload_run(tmp_path / "run", f"s3://{bucket}/ds", files)
        assert time.monotonic() - start < 12


def test_credentials_never_reach_logs_errors_or_output(tmp_path, bucket, proxy, direct, monkeypatch, caplog, capfd):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    caplog.set_level(logging.DEBUG)   # botocore and urllib3 at their most talkative
    files = make_run(tmp_path / "run", sizes=(1000, 6 * 1024**2))
    proxy.add(Fault("reset", "PUT", "/shard-00000"), Fault("slowdown", "PUT", "partNumber=1"),
              Fault("500", "PUT", "/manifest.json", times=-1))
    with pytest.raises(S3Error) as err:
        upload_run(tmp_path / "run", f"s3://{bucket}/ds", files)
    out, errout = capfd.readouterr()
    text = "\n".join([caplog.text, str(err.value), out, errout])
    for secret in (KEY_ID, SECRET, SECRET.replace("/", "%2F")):
        assert secret not in text
    assert "Sending http request" in caplog.text and "Credential=***" in caplog.text, "botocore did log the headers"
    assert not has_manifest(direct, bucket, "ds")


def test_redacting_filter_covers_botocore_loggers(caplog, monkeypatch):
    from pipeline.core.s3 import guard_logs

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    logging.getLogger("botocore.brand_new_module")   # a logger that exists before guard_logs runs
    guard_logs()
    logging.getLogger("botocore.brand_new_module").debug("headers %s", {"Authorization": f"Credential={KEY_ID}/x",
                                                                        "secret": SECRET})
    assert "Credential=***/x" in caplog.text and SECRET not in caplog.text and KEY_ID not in caplog.text


def test_a_rerun_with_fewer_shards_removes_the_stale_ones(tmp_path, bucket, proxy, direct):
    """An earlier run wrote more shards under the prefix: once the new manifest is up, the shards it does
    not list are deleted (a loader reading the prefix would mix them in); other objects are not touched."""
    def run_with(names):
        run = tmp_path / f"run{len(names)}"
        shards = []
        for rel in names:
            (run / rel).parent.mkdir(parents=True, exist_ok=True)
            data = os.urandom(1000)
            (run / rel).write_bytes(data)
            shards.append({"path": rel, "sha256": hashlib.sha256(data).hexdigest()})
        (run / "manifest.json").write_text(json.dumps({"shards": shards}))
        return run

    first = ["train/part-00000.parquet", "train/part-00001.parquet", "train/part-00002.parquet",
             "validation/part-00000.parquet"]
    upload_run(run_with(first), f"s3://{bucket}/ds", first)
    direct.put_object(Bucket=bucket, Key="ds/train/README.txt", Body=b"the user's own file")
    direct.put_object(Bucket=bucket, Key="other/train/part-00009.parquet", Body=b"another prefix")

    second = ["train/part-00000.parquet", "train/part-00001.parquet"]
    run = run_with(second)
    result = upload_run(run, f"s3://{bucket}/ds", second)
    assert result.removed == ["train/part-00002.parquet", "validation/part-00000.parquet"]
    keys = {o["Key"] for o in direct.list_objects_v2(Bucket=bucket).get("Contents", [])}
    assert keys == {"ds/manifest.json", "ds/train/part-00000.parquet", "ds/train/part-00001.parquet",
                    "ds/train/README.txt", "other/train/part-00009.parquet"}
    assert json.loads(direct.get_object(Bucket=bucket, Key="ds/manifest.json")["Body"].read()) == \
        json.loads((run / "manifest.json").read_text())

    proxy.log.clear()
    assert upload_run(run, f"s3://{bucket}/ds", second).removed == []
    assert {m for m, _, _ in proxy.log} == {"HEAD"}, "an unchanged re-run only looks"


def open_uploads(direct, bucket):
    return [u["Key"] for u in direct.list_multipart_uploads(Bucket=bucket).get("Uploads", [])]


def test_a_failed_multipart_upload_is_aborted_even_when_the_abort_failed(tmp_path, bucket, proxy, direct):
    """s3transfer aborts a failed multipart upload with one request; when that failed too (the same outage),
    the upload stayed open with its parts, kept and billed by S3 forever."""
    files = make_run(tmp_path / "run")
    proxy.add(Fault("500", "PUT", "partNumber=2", times=-1),
              Fault("500", "DELETE", "uploadId=", times=3 * 4))  # every abort s3transfer tries (4 requests each)
    with pytest.raises(S3Error, match="shard-00002.parquet failed after 3 attempt"):
        upload_run(tmp_path / "run", f"s3://{bucket}/ds", files)
    assert len(proxy.requests("POST", "/shard-00002.parquet?uploads")) == 3
    assert open_uploads(direct, bucket) == []
    assert not has_manifest(direct, bucket, "ds")


def test_multipart_uploads_a_killed_run_left_open_are_aborted(tmp_path, bucket, proxy, direct):
    """A run killed during a multipart upload leaves it open; the next upload of the same keys aborts it, and
    leaves other uploads under the prefix alone."""
    files = make_run(tmp_path / "run")
    direct.create_multipart_upload(Bucket=bucket, Key="ds/shard-00002.parquet")
    direct.create_multipart_upload(Bucket=bucket, Key="ds/not-ours.bin")
    upload_run(tmp_path / "run", f"s3://{bucket}/ds", files)
    assert open_uploads(direct, bucket) == ["ds/not-ours.bin"]
    direct.abort_multipart_upload(Bucket=bucket, Key="ds/not-ours.bin",
                                  UploadId=direct.list_multipart_uploads(Bucket=bucket)["Uploads"][0]["UploadId"])
    assert_remote_matches(direct, bucket, "ds", tmp_path / "run", [*files, "manifest.json"])
