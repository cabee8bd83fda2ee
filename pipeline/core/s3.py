"""S3 (any S3-compatible endpoint) through boto3: list and read inputs, upload a run directory.

Endpoint, region and credentials come from the standard AWS environment variables and profiles
(AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_PROFILE, ...). Nothing here prints credentials, and
a logging filter redacts them from botocore/urllib3 debug logs (which show the Authorization header).

Tuning (environment): PREPARE_S3_ATTEMPTS (tries per request, default 8), PREPARE_S3_CONNECT_TIMEOUT and
PREPARE_S3_READ_TIMEOUT (seconds, default 10 and 60), PREPARE_S3_MULTIPART_MB (multipart threshold and
part size, default 64; S3 requires at least 5).
"""
from __future__ import annotations

import fnmatch
import json
import logging
import os
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from pipeline.core.errors import PrepareError
from pipeline.core.files import sha256_file
from pipeline.core.schemas import load_schema

SHA_META = "sha256"
OBJECT_ATTEMPTS = 3   # whole-object tries, on top of botocore's per-request retries
log = logging.getLogger(__name__)


class S3Error(PrepareError):
    """An S3 operation that could not finish; the message names the object, never credentials."""


def _env_num(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name) or default)
    except ValueError:
        raise S3Error(f"{name} must be a number, got {os.environ[name]!r}") from None


class S3UriError(S3Error, ValueError):
    """A malformed s3:// URI, found before any request is made."""


# S3's bucket rules (3-63 characters, letters, digits, dots, hyphens, starting and ending with a letter or digit),
# with the underscores and capitals of legacy us-east-1 buckets; botocore's own check rejected e.g. "my bucket"
# in a multi-line message whose first line alone reached the user ("Parameter validation failed:").
_BUCKET = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{1,61}[A-Za-z0-9]")
MAX_KEY_BYTES = 1024
MAX_MANIFEST_BYTES = 64 << 20


def parse_uri(uri: str) -> tuple[str, str]:
    """(bucket, key) of s3://bucket/key; S3UriError (one line) if it is not a usable S3 URI."""
    if not isinstance(uri, str) or not uri.startswith("s3://"):
        raise S3UriError(f"not an s3:// URI: {uri!r} (expected s3://bucket/prefix)")
    bucket, _, key = uri[5:].partition("/")
    if not bucket:
        raise S3UriError(f"no bucket in {uri!r} (expected s3://bucket/prefix)")
    if not _BUCKET.fullmatch(bucket) or ".." in bucket:
        raise S3UriError(f"invalid bucket name {bucket!r} in {uri!r}: 3-63 letters, digits, '.', '-' or '_', "
                         f"starting and ending with a letter or digit")
    if any(ord(c) < 32 or ord(c) == 127 for c in key):
        raise S3UriError(f"control character in the key of {uri!r}")
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise S3UriError(f"key longer than {MAX_KEY_BYTES} bytes in {uri[:80]!r}...")
    return bucket, key


def check_destination_uri(uri: str) -> tuple[str, str]:
    """An --s3 destination: a bucket and a plain prefix (no glob), room left under it for the shard names."""
    bucket, prefix = parse_uri(uri)
    if any(c in prefix for c in "*?["):
        raise S3UriError(f"the destination {uri!r} is a pattern; give s3://bucket/prefix")
    if prefix.rstrip("/") and any(seg in ("", ".", "..") for seg in prefix.rstrip("/").split("/")):
        raise S3UriError(f"the destination {uri!r} has an empty, '.' or '..' path segment; give s3://bucket/prefix")
    try:
        prefix.encode("utf-8")
    except UnicodeEncodeError:
        raise S3UriError(f"the destination {uri.encode('utf-8', 'backslashreplace').decode()!r} is not UTF-8 "
                         "text") from None
    if len(prefix.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES - 64:
        raise S3UriError(f"the prefix of {uri[:80]!r}... leaves no room for the shard names (S3 keys are at most "
                         f"{MAX_KEY_BYTES} bytes)")
    return bucket, prefix


def check_bucket(uri: str, purpose: str = "destination") -> None:
    """One cheap request (HeadBucket) before any work: the endpoint answers, the credentials are accepted and the
    bucket exists. S3Error, one line, otherwise. Few attempts: an endpoint that is down must not hold the start
    of a run for the minute the upload's retries would take."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    bucket, _ = parse_uri(uri)
    s3 = client(attempts=min(3, int(_env_num("PREPARE_S3_ATTEMPTS", 8))))
    where = f"s3://{bucket} ({purpose})"
    try:
        s3.head_bucket(Bucket=bucket)
    except NoCredentialsError:
        raise S3Error(f"{where}: no AWS credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
                      f"AWS_PROFILE)") from None
    except ClientError as exc:
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if status == 404 or code in ("404", "NoSuchBucket", "NotFound"):
            raise S3Error(f"{where}: no such bucket") from None
        if status in (401, 403) or code in ("403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            raise S3Error(f"{where}: access denied ({code or status}): check the credentials; a policy that allows "
                          f"writes but not s3:ListBucket needs --no-s3-check") from None
        raise S3Error(f"{where}: {_describe(exc)}") from None
    except (BotoCoreError, OSError) as exc:
        endpoint = redact(s3.meta.endpoint_url)
        raise S3Error(f"{where}: cannot reach the S3 endpoint {endpoint}: {_describe(exc)}") from None


def check_prefix_owner(uri: str, run_dir_id: str | None, s3=None) -> None:
    """Refuse (S3Error) an upload into a prefix whose manifest another run directory wrote (its run_dir_id
    differs from ours; "" for a run directory not made yet): the two runs would replace each other's
    manifest and shards."""
    from botocore.exceptions import ClientError

    bucket, prefix = parse_uri(uri.rstrip("/") + "/")
    target = f"s3://{bucket}/{prefix}manifest.json"
    s3 = s3 or client()
    try:
        body = s3.get_object(Bucket=bucket, Key=prefix + "manifest.json")["Body"].read(MAX_MANIFEST_BYTES)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return
        raise S3Error(f"reading {target} failed: {_describe(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - endpoint down, timeouts: one line
        raise S3Error(f"reading {target} failed: {_describe(exc)}") from None
    try:
        owner = json.loads(body).get("run_dir_id")
    except (ValueError, AttributeError):
        owner = None
    if owner != run_dir_id:
        raise S3Error(f"{target} belongs to another run directory (a different --out): uploading would replace "
                      "its manifest and shards; choose another --s3 prefix, or --s3-overwrite to replace it")


def client(attempts: int | None = None):
    import boto3
    from botocore.config import Config

    # "standard" retries: exponential backoff with jitter on resets, timeouts, 5xx and throttling (SlowDown),
    # bounded by a retry quota. ("adaptive" adds an experimental client-side rate limiter that can stall
    # every later request for seconds after a single throttle.)
    attempts = attempts or int(_env_num("PREPARE_S3_ATTEMPTS", 8))
    config = Config(retries={"total_max_attempts": attempts, "mode": "standard"},
                    connect_timeout=_env_num("PREPARE_S3_CONNECT_TIMEOUT", 10),
                    read_timeout=_env_num("PREPARE_S3_READ_TIMEOUT", 60),
                    s3={"addressing_style": os.environ.get("PREPARE_S3_ADDRESSING", "path")})
    session = boto3.session.Session()
    creds = session.get_credentials()
    if creds is not None:
        frozen = creds.get_frozen_credentials()
        _remember(frozen.access_key, frozen.secret_key, frozen.token)
    s3 = session.client("s3", config=config)
    guard_logs()
    return s3


def list_objects(uri: str) -> Iterator[str]:
    """Every object under a prefix (or matching a glob in the key), as s3:// URIs, sorted."""
    bucket, key = parse_uri(uri)
    pattern = key if any(c in key for c in "*?[") else None
    prefix = key.split("*")[0].split("?")[0].split("[")[0] if pattern else key
    paginator = client().get_paginator("list_objects_v2")
    keys = []
    try:
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            for obj in page.get("Contents", []):
                if pattern is None or fnmatch.fnmatch(obj["Key"], pattern):
                    keys.append(obj["Key"])
    except Exception as exc:  # noqa: BLE001 - no such bucket, access denied, endpoint down: one line
        raise S3Error(f"listing {uri} failed: {_describe(exc)}") from None
    if not keys:
        raise S3Error(f"no objects under {uri}" + (" match the pattern" if pattern else ""))
    yield from (f"s3://{bucket}/{k}" for k in sorted(keys))


def open_object(uri: str):
    bucket, key = parse_uri(uri)
    try:
        return client().get_object(Bucket=bucket, Key=key)["Body"]
    except Exception as exc:
        raise OSError(f"cannot read {uri}: {type(exc).__name__}") from None


def head(uri: str) -> dict:
    """Size and ETag of an object: enough to tell a changed input."""
    bucket, key = parse_uri(uri)
    meta = client().head_object(Bucket=bucket, Key=key)
    return {"size": meta["ContentLength"], "etag": meta.get("ETag")}


@dataclass
class UploadResult:
    uploaded: list[str]
    skipped: list[str]
    manifest_uri: str
    removed: list[str] = field(default_factory=list)  # shards of an earlier run the new manifest drops


def _shard_name():
    """The shard paths this project writes, as schemas/manifest.schema.json defines them: only these are
    ever deleted."""
    return re.compile(load_schema("manifest")["properties"]["shards"]["items"]["properties"]["path"]["pattern"])


class _Mismatch(Exception):
    """The stored object is not the local file (size or sha256): retried like a transient fault."""


def _remote(s3, bucket: str, key: str) -> tuple[str | None, int] | None:
    """(stored sha256, size) of an object, or None if there is none."""
    from botocore.exceptions import ClientError

    try:
        head = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return None
        raise
    return head.get("Metadata", {}).get(SHA_META), head.get("ContentLength")


def upload_run(run_dir: str | Path, uri: str, files: list[str], manifest: str = "manifest.json",
               progress: Callable[[str], None] | None = None, overwrite: bool = False) -> UploadResult:
    """Upload `files` (paths relative to run_dir) and the manifest, so that the remote manifest, whenever
    there is one, describes shards that are all present and complete: if any shard must be (re)uploaded, the
    old remote manifest is deleted first, the shards go next and the new manifest last. Objects whose stored
    sha256 and size match are skipped. The server verifies the SHA-256 checksum boto3 sends with every
    (part) upload; size and sha256 are checked again after each upload.

    Faults are retried twice over: botocore retries each request (backoff with jitter), and a failed object
    is retried whole (s3transfer aborts a failed multipart upload), after checking whether the failed try
    did land. An upload that cannot finish raises S3Error naming the object and leaves no manifest.
    A remote manifest of another run directory is replaced only with `overwrite` (check_prefix_owner)."""
    from boto3.s3.transfer import TransferConfig

    run_dir = Path(run_dir)
    bucket, prefix = parse_uri(uri.rstrip("/") + "/")
    s3 = client()
    part = max(5 * 1024**2, int(_env_num("PREPARE_S3_MULTIPART_MB", 64) * 1024**2))
    transfer = TransferConfig(multipart_threshold=part, multipart_chunksize=part)
    guard_logs()   # s3transfer's loggers exist from here on
    names = [*dict.fromkeys(files), manifest]
    local = {rel: (sha256_file(run_dir / rel), (run_dir / rel).stat().st_size) for rel in names}
    target = {rel: f"s3://{bucket}/{prefix}{rel}" for rel in names}
    remote = {rel: with_retries("check", target[rel], lambda _, rel=rel: _remote(s3, bucket, prefix + rel))
              for rel in names}
    if not overwrite and remote[manifest] is not None and remote[manifest] != local[manifest]:
        own_id = json.loads((run_dir / manifest).read_text(encoding="utf-8")).get("run_dir_id")
        check_prefix_owner(uri, own_id, s3)
    todo = [rel for rel in names[:-1] if remote[rel] != local[rel]]
    if todo and remote[manifest] is not None:
        # the old manifest would otherwise describe shards that are about to change (or are gone)
        with_retries("delete", target[manifest], lambda _: s3.delete_object(Bucket=bucket, Key=prefix + manifest))
        remote[manifest] = None
    if remote[manifest] != local[manifest]:
        todo.append(manifest)

    def put(rel: str, retry: bool) -> None:
        key = prefix + rel
        if retry and _remote(s3, bucket, key) == local[rel]:
            return   # the failed try landed after all (e.g. only the answer to CompleteMultipartUpload was lost)
        s3.upload_file(str(run_dir / rel), bucket, key, Config=transfer,
                       ExtraArgs={"Metadata": {SHA_META: local[rel][0]}, "ChecksumAlgorithm": "SHA256"})
        if _remote(s3, bucket, key) != local[rel]:
            raise _Mismatch("the stored object does not match the local file")

    # multipart uploads of these keys left open by a killed run: S3 keeps (and bills) their parts forever
    _abort_open_uploads(s3, bucket, prefix, {prefix + rel for rel in todo})
    for rel in todo:
        try:
            with_retries("upload", target[rel], lambda retry, rel=rel: put(rel, retry))
        except S3Error:
            # s3transfer aborts a failed multipart upload with one request; when that request failed too
            # (the same fault), the upload stayed open with its parts
            _abort_open_uploads(s3, bucket, prefix, {prefix + rel})
            raise
        if progress:
            progress(rel)
    # a new manifest went up: shards of an earlier run that it does not list go (an unchanged run only looks)
    removed = _remove_stale_shards(s3, bucket, prefix, set(names)) if todo else []
    return UploadResult(todo, [rel for rel in names if rel not in todo], target[manifest], removed)


def _abort_open_uploads(s3, bucket: str, prefix: str, keys: set[str]) -> list[str]:
    """Abort the open multipart uploads of `keys` (only those: other uploads under the prefix are not this
    run's). Best effort: a policy without s3:ListBucketMultipartUploads, or an endpoint that is failing,
    must not fail the run for it."""
    aborted: list[str] = []
    if not keys:
        return aborted
    try:
        for page in s3.get_paginator("list_multipart_uploads").paginate(Bucket=bucket, Prefix=prefix):
            for upload in page.get("Uploads", []):
                if upload["Key"] in keys:
                    s3.abort_multipart_upload(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
                    aborted.append(upload["Key"])
    except Exception as exc:  # noqa: BLE001 - best effort, see above
        log.warning("could not abort open multipart uploads under s3://%s/%s (%s)", bucket, prefix, _describe(exc))
    return aborted


def _remove_stale_shards(s3, bucket: str, prefix: str, keep: set[str]) -> list[str]:
    """Delete the shards under the prefix that the new manifest does not list (an earlier run wrote more of
    them): a loader that reads the prefix (`load_dataset("parquet", data_dir=...)`) would otherwise mix them
    in. Runs after the new manifest is in place; only this project's shard names are touched."""
    shard_name = _shard_name()

    def stale(_retry_flag) -> list[str]:
        found = []
        for split in ("train/", "validation/"):
            for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + split):
                for obj in page.get("Contents", []):
                    rel = obj["Key"][len(prefix):]
                    if shard_name.fullmatch(rel) and rel not in keep:
                        found.append(rel)
        return sorted(found)

    removed = with_retries("listing", f"s3://{bucket}/{prefix}", stale)
    for rel in removed:
        with_retries("delete", f"s3://{bucket}/{prefix}{rel}",
               lambda _, rel=rel: s3.delete_object(Bucket=bucket, Key=prefix + rel))
    return removed


def with_retries(action: str, uri: str, fn: Callable[[bool], object]):
    """fn(retry) up to OBJECT_ATTEMPTS times while it fails transiently; then S3Error, one line."""
    for attempt in range(1, OBJECT_ATTEMPTS + 1):
        try:
            return fn(attempt > 1)
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised as S3Error
            if attempt == OBJECT_ATTEMPTS or not _transient(exc):
                raise S3Error(f"{action} of {uri} failed after {attempt} attempt(s): {_describe(exc)}") from None
            log.warning("%s of %s failed (%s); retrying", action, uri, _describe(exc))
            time.sleep(random.uniform(0.5, 1.0) * 2 ** (attempt - 1))


def _cause(exc: BaseException) -> BaseException:
    from boto3.exceptions import S3UploadFailedError

    # boto3 wraps the ClientError of a failed upload_file (implicitly chained)
    if isinstance(exc, S3UploadFailedError) and (exc.__cause__ or exc.__context__):
        return exc.__cause__ or exc.__context__
    return exc


def _transient(exc: BaseException) -> bool:
    """Worth another whole try: connection faults, 5xx, throttling, a lost multipart upload, a mismatch.
    Not: access denied, no such bucket, bad credentials, unreadable local file."""
    from botocore.exceptions import ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as BotoConnectionError

    exc = _cause(exc)
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        code = exc.response.get("Error", {}).get("Code", "")
        return status >= 500 or status == 429 or code in (
            "SlowDown", "Throttling", "RequestTimeout", "NoSuchUpload", "InternalError", "ServiceUnavailable")
    return isinstance(exc, (BotoConnectionError, HTTPClientError, _Mismatch))   # what botocore retries too


def _describe(exc: BaseException) -> str:
    exc = _cause(exc)
    text = redact(str(exc)).strip()
    # whole, on one line: botocore's validation errors put the cause on the second line
    text = " ".join(text.split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


# --- credentials out of logs and messages --------------------------------------------------------------

_secrets: frozenset[str] = frozenset()   # credential values seen by client(), besides the environment's


def _remember(*values: str | None) -> None:
    global _secrets
    _secrets = _secrets | {v for v in values if v}   # replaced, never mutated: filters in other threads read it


_PATTERNS = [  # credential-bearing fields in botocore's request/header reprs, whatever the value
    (re.compile(r"(Credential=)[^/%&,\s'\"]+"), r"\1***"),
    (re.compile(r"(Signature=)[0-9a-fA-F]+"), r"\1***"),
    (re.compile(r"((?:X-Amz-)?Security-Token['\"]?\s*[:=]\s*b?['\"]?)[^'\"&,\s]+", re.I), r"\1***"),
    (re.compile(r"\b([a-z][a-z0-9+.-]*://)[^/\s@'\"]*@", re.I), r"\1***@"),  # user:password@ of any URL
]
_LOGGERS = ("botocore", "boto3", "s3transfer", "urllib3")


def redact(text: str) -> str:
    """`text` with every known credential value and credential-bearing field replaced by ***."""
    values = _secrets | {os.environ.get(n, "") for n in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                                          "AWS_SESSION_TOKEN")}
    for value in sorted((v for v in values if len(v) >= 4), key=len, reverse=True):
        text = text.replace(value, "***")
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


class RedactingFilter(logging.Filter):
    """Rewrites a record's message with credentials redacted (botocore's DEBUG log of each request shows
    its headers, Authorization with the access key id included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is the logging module's business
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_FILTER = RedactingFilter()


def guard_logs() -> None:
    """Attach the filter to every botocore/boto3/s3transfer/urllib3 logger. A logger's filters only see
    records created on that very logger, not those propagating from its children, hence each one (they
    exist once the modules are imported, which client() and upload_run() have done)."""
    for name in [*_LOGGERS, *list(logging.root.manager.loggerDict)]:
        if name.split(".")[0] in _LOGGERS:
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)


def read_json(uri: str) -> dict:
    return json.loads(open_object(uri).read())
