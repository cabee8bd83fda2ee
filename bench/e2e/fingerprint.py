"""Output fingerprint of a whole run, for refactors that must not change a byte of what is written.

Runs `prepare run` over sample_data and over bench/e2e's synthetic corpus (100k records by default) with
a fixed pseudonym salt and prints, per run, the sha256 of every shard and quarantine file and of
report.json with its timing fields removed. `--save FILE` keeps the fingerprint, `--compare FILE` fails
(exit 1) naming each file that differs.

    python bench/e2e/fingerprint.py --save /tmp/before.json      # on the old code
    python bench/e2e/fingerprint.py --compare /tmp/before.json   # on the new code
    python bench/e2e/fingerprint.py --set quality.enabled=false ...   # a config override (repeatable)

The run folders are kept (their paths are printed) so that report.json can be compared key by key.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import write_corpus  # noqa: E402
from overrides import parse_sets  # noqa: E402

from pipeline.core.config import PrepareConfig, merge_config  # noqa: E402
from pipeline.runner import run_prepare  # noqa: E402

# Fields that measure the machine, not the data.
VOLATILE = {"seconds", "cpu_seconds", "wall_seconds", "started", "finished", "created", "elapsed", "records_per_second",
            "duration_s", "generated_at", "run_id", "peak_rss_mb"}


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fingerprint(out: Path) -> dict[str, str]:
    prints = {}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        if not path.is_file() or rel.startswith("work/"):
            continue
        if path.suffix in (".parquet", ".jsonl") or rel.startswith("quarantine/"):
            prints[rel] = _sha(path)
    report = json.loads((out / "report.json").read_text())
    prints["report.json (timings removed)"] = hashlib.sha256(
        json.dumps(_strip(report), sort_keys=True).encode()).hexdigest()
    return prints


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--save")
    parser.add_argument("--compare")
    parser.add_argument("--set", action="append", metavar="SECTION.KEY=VALUE",
                        help="config override, repeatable (e.g. quality.enabled=false)")
    args = parser.parse_args()
    overrides = parse_sets(args.set)
    os.environ["PREPARE_PII_SALT"] = "fingerprint-salt"
    root = Path(tempfile.mkdtemp(prefix="fingerprint-"))
    runs = {"sample_data": [str(ROOT / "sample_data")]}
    if args.size:
        write_corpus(root / "corpus", args.size)
        runs[f"e2e-{args.size}"] = [str(root / "corpus")]
    result = {}
    for name, inputs in runs.items():
        out = root / f"run-{name}"
        cfg = merge_config(PrepareConfig(inputs=inputs, out=str(out), workers=2), overrides)
        run_prepare(cfg, progress=False, log=lambda _: None)
        result[name] = fingerprint(out)
        print(f"{name}: {len(result[name])} files fingerprinted ({out})")
    if args.save:
        Path(args.save).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    if args.compare:
        before = json.loads(Path(args.compare).read_text())
        differ = [f"{run}/{f}" for run in before for f in sorted(set(before[run]) | set(result.get(run, {})))
                  if before[run].get(f) != result.get(run, {}).get(f)]
        for d in differ:
            print(f"DIFFERS: {d}")
        print("identical" if not differ else f"{len(differ)} file(s) differ")
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
