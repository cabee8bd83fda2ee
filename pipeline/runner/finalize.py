"""Phase 4, once: from the processed work files to the run directory, in named parts:
lengths_summary (histogram, max length) -> lengths.png -> the zero-trainable check -> untrained drop, overflow
policy and text chunking -> write_shards -> plan -> report -> manifest (last, atomic)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from pipeline.core.config import PrepareConfig
from pipeline.core.errors import PrepareError
from pipeline.core.progress import ProgressFile
from pipeline.core.stats import StageStats, merge_all
from pipeline.data.lengths.draw import plot_lengths_png
from pipeline.data.lengths.packing import packing_as_trained
from pipeline.data.lengths.step import LengthStep, apply_overflow, changes_records
from pipeline.data.lengths.summary import summarize_lengths
from pipeline.data.lengths.untrained import UntrainedCheck, count_untrained, drop_untrained, untrained_message
from pipeline.data.readers import shown_config
from pipeline.data.shards import WriteStep, build_manifest, write_manifest
from pipeline.plan.from_lengths import max_positions, plan_for_lengths
from pipeline.report.build import build_report, write_reports
from pipeline.runner.append import add_version_section, salt_check, version_manifest, write_version_basis
from pipeline.runner.history import write_dedup_index
from pipeline.runner.phases import StatsByFile, merged_stages, runs_by_file
from pipeline.runner.rundir import RunDir, claim, read_ledger
from pipeline.runner.work import progress_dir, read_work, read_work_tables, work_paths

Groups = dict[str, tuple[np.ndarray, np.ndarray]]


def length_groups(processed: list[Path], inputs: list[tuple[int, str]]) -> tuple[Groups, dict[str, np.ndarray]]:
    """(tokens, trainable) of all records, of each split, of each language (meta.lang) and of each input file
    (`inputs`: (first _order, name) of each file, in _order order); and, per group, the mask of its plain-text
    records."""
    columns = {"_tokens": [], "_trainable": [], "_split": [], "_order": [], "_lang": [], "kind": []}
    for path in processed:
        table = pq.read_table(path, columns=list(columns))
        for name in columns:
            columns[name].append(table.column(name).to_numpy(zero_copy_only=False))
    if not processed:
        return {}, {}
    tokens = np.concatenate(columns["_tokens"]).astype(np.int64)
    trainable = np.concatenate(columns["_trainable"]).astype(np.int64)
    is_text = np.concatenate(columns["kind"]) == "text"
    splits = np.concatenate(columns["_split"])
    files = np.searchsorted([first for first, _ in inputs], np.concatenate(columns["_order"]), side="right") - 1
    masks = {"all": np.ones(tokens.size, bool)}
    for split in ("train", "validation"):
        masks[f"split:{split}"] = splits == split
    langs = np.concatenate(columns["_lang"])
    for lang in sorted({x for x in langs if x is not None}):
        masks[f"lang:{lang}"] = langs == lang
    for name in sorted({n for _, n in inputs}):
        masks[f"file:{name}"] = np.isin(files, [i for i, (_, n) in enumerate(inputs) if n == name])
    masks = {name: mask for name, mask in masks.items() if name == "all" or mask.any()}
    return ({name: (tokens[mask], trainable[mask]) for name, mask in masks.items()},
            {name: is_text[mask] for name, mask in masks.items()})


def lengths_summary(cfg: PrepareConfig, work_dir: str, shard_results: list[dict],
                    tokenizer_name: str | None) -> dict | None:
    """The token-length summary with the chosen max length; None without the lengths step or records."""
    if not any("lengths" in r["stages"] for r in shard_results):  # phase 3's list had no lengths step
        return None

    processed = [work_paths(work_dir, r["index"])["processed"] for r in shard_results if r["has_records"]]
    groups, text = length_groups(processed, sorted((p["first_order"], p["file"])
                                                   for r in shard_results for p in r["files"]))
    if not groups:
        return None
    summary = summarize_lengths(groups, cfg.lengths, max_positions(cfg), text=text)
    summary["tokenizer"] = tokenizer_name
    return summary


def draw_lengths_png(summary: dict, run: Path) -> None:
    plot_lengths_png(summary, run / "lengths.png")


def overflow_policy(cfg: PrepareConfig, summary: dict | None, token_cache: str | None):
    """records, stats -> records: the untrained records dropped (lengths.untrained: drop), then
    lengths.overflow and text chunking applied at the chosen max length; None when neither changes a record."""
    max_len = summary.get("max_seq_len") if summary else None
    if not max_len:
        return None

    drops = cfg.lengths.untrained == "drop" and summary["untrained"]["records"] > 0
    overflows = changes_records(cfg.lengths, summary)
    if not (drops or overflows):
        return None
    step = LengthStep(cfg.lengths, token_cache, model=cfg.estimate.model)
    check = UntrainedCheck(cfg, max_len, token_cache)

    def apply(records, stats):
        if drops:
            records = drop_untrained(records, check, stats)
        return apply_overflow(records, max_len, step, stats) if overflows else records
    return apply


def write_shards(cfg: PrepareConfig, run: Path, work_dir: str, shard_results: list[dict], overflow,
                 max_len: int | None = None) -> tuple[list[dict], dict]:
    """Every shard's processed records, in input order, through the write step; each shard result gets its
    `stages.write`. Returns the shard entries of the manifest and its per-kind counts (KindCounts.summary)."""
    for split in ("train", "validation"):
        RunDir(run).remove_shards(split)
    write = WriteStep(run, cfg.write, overflow, claim=lambda names: claim(run, names))
    write.progress = ProgressFile(progress_dir(work_dir), "write", 0)
    for result in shard_results:
        per_file = StatsByFile([write], len(result["files"]))
        if result["has_records"]:
            # without an overflow policy the processed rows go to the shards as Arrow, never as dicts
            read = read_work if overflow is not None else read_work_tables
            batches = read(work_paths(work_dir, result["index"])["processed"], cfg.read)
            while True:
                with write.stats.timer():  # reading the work file back is part of writing
                    records = next(batches, None)
                if records is None:
                    break
                for position, rows in runs_by_file(result["files"], records):
                    per_file.at(position)
                    write(rows)
        for part, stages in zip(result["files"], per_file.take()):
            part["stages"]["write"] = stages["write"]
        result["stages"]["write"] = merged_stages([part["stages"] for part in result["files"]])["write"]
    shards = write.close()
    write.finish()
    return shards, write.kinds.summary(max_len)


def stage_totals(shard_results: list[dict], dedup_report: dict | None) -> dict[str, StageStats]:
    stage_stats = merge_all(
        [StageStats.from_dict(name, d) for name, d in r["stages"].items()] for r in shard_results
    )
    if dedup_report and "dedup" in stage_stats:  # the global clustering step belongs to the dedup stage too
        stage_stats["dedup"].seconds += dedup_report.get("seconds", {}).get("total", 0.0)
        stage_stats["dedup"].cpu_seconds += dedup_report.get("cpu_seconds", 0.0)
    return stage_stats


def write_report(cfg: PrepareConfig, run: Path, shard_results: list[dict], shards: list[dict],
                 dedup_report: dict | None, summary: dict | None, plan: dict | None,
                 unreadable: list[dict], canned: dict | None = None, split: dict | None = None,
                 previous: dict | None = None) -> tuple[dict, list[dict]]:
    """report.json, report.md, report.html and version_basis.json; returns the report and the manifest entries
    of the two last (uploaded with the shards). With
    `previous` (--append-to), the report's version section: the difference from the earlier version."""
    rep = build_report(cfg, shard_results, stage_totals(shard_results, dedup_report), shards, dedup_report,
                              summary, plan, unreadable, canned, split)
    if previous is not None:
        add_version_section(cfg, rep, previous, summary, summary.get("max_seq_len") if summary else None)
    write_reports(run, rep)
    from pipeline.report.html import write_run_html  # report.html beside report.md, listed in the manifest, uploaded

    return rep, [write_run_html(run, rep), write_version_basis(run, rep)]


def write_run_manifest(cfg: PrepareConfig, run: Path, rep: dict, shards: list[dict], max_len: int | None,
                       tokenizer_name: str | None, report_entries: list[dict], kinds: dict,
                       dedup_index: dict | None = None, previous: dict | None = None) -> str:
    """The manifest, last and atomically; returns the run id (config and the shard hashes of the version:
    with `previous`, the earlier manifest of --append-to, its shards too)."""
    run_dir_id = read_ledger(run).id
    pii_salt = salt_check(cfg, run_dir_id)
    manifest = build_manifest("", shown_config(cfg.model_dump(mode="json"), cfg.out), rep["counts"], shards,
                              {"max_seq_len": max_len, "tokenizer": tokenizer_name, "reports": report_entries,
                               "run_dir_id": run_dir_id, "kinds": kinds,
                               **({"dedup_index": dedup_index} if dedup_index else {}),
                               **({"pii_salt": pii_salt} if pii_salt else {})})
    if previous is not None:
        manifest = version_manifest(manifest, previous)
    manifest["run_id"] = hashlib.blake2b(
        json.dumps([cfg.model_dump(mode="json"), [s["sha256"] for s in manifest["shards"]]], sort_keys=True).encode(),
        digest_size=8).hexdigest()
    write_manifest(run, manifest)
    return manifest["run_id"]


def check_untrained(cfg: PrepareConfig, work_dir: str, shard_results: list[dict], summary: dict,
                    token_cache: str | None) -> None:
    """Count the chat and instruction records that will train on nothing at the chosen max length (into
    summary["untrained"]); under lengths.untrained: fail, fail the run before a shard is written when there
    are any (drop drops them while writing)."""
    processed = [work_paths(work_dir, r["index"])["processed"] for r in shard_results if r["has_records"]]
    found = count_untrained(processed, cfg, summary.get("max_seq_len"), token_cache)
    summary["untrained"] = found
    if found["records"] and cfg.lengths.untrained == "fail":
        raise PrepareError(untrained_message(found))


def finalize(cfg: PrepareConfig, run_dir: str, work_dir: str, shard_results: list[dict],
             dedup_report: dict | None, tokenizer_name: str | None, token_cache: str | None,
             unreadable: list[dict], canned: dict | None = None, split: dict | None = None,
             previous: dict | None = None) -> dict:
    """Choose the max length, check that every chat record trains on something, apply the overflow policy,
    write the Parquet shards, the report and, last, the manifest. Returns the report."""
    run = Path(run_dir)
    summary = lengths_summary(cfg, work_dir, shard_results, tokenizer_name)
    max_len = summary.get("max_seq_len") if summary else None
    if summary:
        check_untrained(cfg, work_dir, shard_results, summary, token_cache)
    shards, kinds = write_shards(cfg, run, work_dir, shard_results, overflow_policy(cfg, summary, token_cache), max_len)
    if summary and summary.get("chunking"):  # what the run did, in place of the estimate
        done = [r["stages"]["write"].get("counters", {}).get("chunking", {}) for r in shard_results]
        summary["chunking"].update(records=sum(c.get("records", 0) for c in done),
                                   chunks=sum(c.get("chunks", 0) for c in done), estimated=False)
    if summary:  # the report plans what the trainer packs from these shards
        summary["packing"] = packing_as_trained(summary["packing"], kinds, summary["batch_size"])
        draw_lengths_png(summary, run)
    plan = None
    if cfg.estimate.enabled and summary and max_len:
        plan = plan_for_lengths(cfg, summary)
    rep, report_entries = write_report(cfg, run, shard_results, shards, dedup_report, summary, plan, unreadable,
                                   canned, split, previous)
    dedup_index = write_dedup_index(cfg, run, work_dir, shard_results, shards)
    rep["run_id"] = write_run_manifest(cfg, run, rep, shards, max_len, tokenizer_name, report_entries, kinds,
                                       dedup_index, previous)
    return rep
