"""S3 (any S3-compatible endpoint) through boto3: list and read inputs, upload a run directory.

Endpoint, region and credentials come from the standard AWS environment variables and profiles
(AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, AWS_PROFILE, ...). Nothing here prints credentials.
"""
from __future__ import annotations

import fnmatch
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from .shards import sha256_file

MULTIPART_THRESHOLD = 64 * 1024**2
SHA_META = "sha256"


class S3Error(Exception):
    """An S3 operation that could not finish; the message names the object, never credentials."""


def parse_uri(uri: str) -> tuple[str, str]:
    if not uri.startswith("s3://"):
        raise ValueError(f"not an s3:// URI: {uri}")
    bucket, _, key = uri[5:].partition("/")
    if not bucket:
        raise ValueError(f"no bucket in {uri}")
    return bucket, key


def client():
    import boto3
    from botocore.config import Config

    config = Config(retries={"max_attempts": 8, "mode": "adaptive"}, connect_timeout=10, read_timeout=60,
                    s3={"addressing_style": os.environ.get("PREPARE_S3_ADDRESSING", "path")})
    return boto3.session.Session().client("s3", config=config)


def list_objects(uri: str) -> Iterator[str]:
    """Every object under a prefix (or matching a glob in the key), as s3:// URIs, sorted."""
    bucket, key = parse_uri(uri)
    pattern = key if any(c in key for c in "*?[") else None
    prefix = key.split("*")[0].split("?")[0].split("[")[0] if pattern else key
    paginator = client().get_paginator("list_objects_v2")
    keys = []
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            if pattern is None or fnmatch.fnmatch(obj["Key"], pattern):
                keys.append(obj["Key"])
    yield from (f"s3://{bucket}/{k}" for k in sorted(keys))


def open_object(uri: str):
    bucket, key = parse_uri(uri)
    try:
        return client().get_object(Bucket=bucket, Key=key)["Body"]
    except Exception as exc:
        raise OSError(f"cannot read {uri}: {type(exc).__name__}") from None


@dataclass
class UploadResult:
    uploaded: list[str]
    skipped: list[str]
    manifest_uri: str


def _remote_sha(s3, bucket: str, key: str) -> str | None:
    from botocore.exceptions import ClientError

    try:
        head = s3.head_object(Bucket=bucket, Key=key)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return None
        raise
    return head.get("Metadata", {}).get(SHA_META)


def upload_run(run_dir: str | Path, uri: str, files: list[str], manifest: str = "manifest.json",
               progress: Callable[[str], None] | None = None) -> UploadResult:
    """Upload `files` (paths relative to run_dir), then the manifest last, so a half-finished upload is
    never taken for a dataset. Objects whose stored sha256 matches are skipped; the server verifies the
    SHA-256 checksum boto3 sends with every (part) upload."""
    from boto3.s3.transfer import TransferConfig

    run_dir = Path(run_dir)
    bucket, prefix = parse_uri(uri.rstrip("/") + "/")
    s3 = client()
    transfer = TransferConfig(multipart_threshold=MULTIPART_THRESHOLD, multipart_chunksize=MULTIPART_THRESHOLD)
    uploaded, skipped = [], []
    for rel in [*files, manifest]:
        key = prefix + rel
        sha = sha256_file(run_dir / rel)
        try:
            if _remote_sha(s3, bucket, key) == sha:
                skipped.append(rel)
                continue
            s3.upload_file(str(run_dir / rel), bucket, key, Config=transfer,
                           ExtraArgs={"Metadata": {SHA_META: sha}, "ChecksumAlgorithm": "SHA256"})
            if _remote_sha(s3, bucket, key) != sha:
                raise S3Error(f"checksum mismatch after upload of s3://{bucket}/{key}")
        except S3Error:
            raise
        except Exception as exc:
            raise S3Error(f"upload of s3://{bucket}/{key} failed: {type(exc).__name__}: {_safe(exc)}") from None
        uploaded.append(rel)
        if progress:
            progress(rel)
    return UploadResult(uploaded, skipped, f"s3://{bucket}/{prefix}{manifest}")


def _safe(exc: Exception) -> str:
    """An error message with anything that looks like a credential removed."""
    text = str(exc)
    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ACCESS_KEY_ID"):
        value = os.environ.get(name)
        if value:
            text = text.replace(value, "***")
    return text.splitlines()[0][:300] if text else ""


def read_json(uri: str) -> dict:
    return json.loads(open_object(uri).read())
