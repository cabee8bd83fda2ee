"""Resume: a finished shard's result is saved in work/results/ with a key of everything it depends on (the
code, the input's identity, the config sections its steps declare, step.config_key), and reused by a later
run with the same key."""
from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

from pipeline.core.files import atomic_write_text
from pipeline.core.s3 import head
from pipeline.data.readers import InputFile

PACKAGE = Path(__file__).resolve().parents[1]  # pipeline/


@lru_cache(maxsize=1)
def code_version() -> str:
    """Hash of the pipeline's code and data files: cached shard work is reused only by the same code."""
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(p for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def input_fingerprint(f: InputFile) -> dict:
    if f.is_s3:
        return {"uri": f.uri, **head(f.uri)}
    st = os.stat(f.uri)
    return {"uri": os.path.abspath(f.uri), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "start": f.start,
            "end": f.end}


EVAL_SOURCES = "sources.json"  # in the eval index's folder: the fingerprints of the files it was built from


def save_eval_fingerprints(index_dir: str | Path, files: list[InputFile]) -> None:
    """Taken by the main process when it builds the eval index: a worker expanding the eval sets again would
    list S3 and load the PII engine to check their names."""
    atomic_write_text(Path(index_dir) / EVAL_SOURCES, json.dumps([input_fingerprint(f) for f in files]))


def eval_fingerprints(index_dir: str | Path) -> list[dict]:
    return json.loads((Path(index_dir) / EVAL_SOURCES).read_text())


def key(*parts) -> str:
    return hashlib.blake2b(json.dumps(parts, sort_keys=True, default=str).encode(), digest_size=16).hexdigest()


def cached(work_dir: str, name: str, key: str) -> dict | None:
    path = Path(work_dir) / "results" / f"{name}.json"
    if path.exists():
        saved = json.loads(path.read_text())
        if saved.get("key") == key:
            return {**saved["result"], "reused": True}
    return None


def save(work_dir: str, name: str, key: str, result: dict) -> dict:
    atomic_write_text(Path(work_dir) / "results" / f"{name}.json", json.dumps({"key": key, "result": result}))
    return result
