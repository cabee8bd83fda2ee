"""The pre-check behind `prepare precheck` (its command line: pipeline.cli.precheck): on a CPU, without torch, in
seconds: read and normalize the data, measure token lengths with the model's tokenizer and chat template (on a
uniform sample for large inputs), pick the max length, estimate memory and recommend the GPU with time and cost."""
from __future__ import annotations

import sys

import numpy as np

from pipeline.core.config import PrepareConfig
from pipeline.core.progress import Progress
from pipeline.core.stats import StageStats
from pipeline.data.dedup import exact_hashes, exact_text
from pipeline.data.lengths.histogram import percentile_uncertainty
from pipeline.data.lengths.step import LengthStep, sample_for_precheck
from pipeline.data.lengths.summary import summarize_lengths
from pipeline.data.lengths.untrained import UntrainedCheck, untrained_summary
from pipeline.data.normalize import Normalizer, front_steps
from pipeline.data.readers import FileReader, UnreadableInput, expand_inputs, guessed_encoding_note
from pipeline.plan.from_lengths import max_positions, plan_for_lengths
from pipeline.report.build import mark_approximate


def sample_records(cfg: PrepareConfig, sample_size: int, seed: int = 0,
                   progress: bool = False) -> tuple[list[dict], int, dict]:
    """A uniform random sample (reservoir) of the normalized records; all of them when there are fewer
    than `sample_size`. Returns (sample, total records, counts); a file whose encoding was guessed is said on
    stderr as it is read."""
    bar = Progress("precheck: read", "records", enabled=progress)
    counts = {"input": 0, "records": 0, "quarantined": 0, "dropped": 0, "exact_duplicates": 0, "unreadable": []}
    exact = cfg.dedup.enabled and cfg.dedup.exact
    hashes: set[int] = set()  # the high 64 bits of the run's 128-bit exact key: 8 bytes of entropy a record

    files = readable_inputs(cfg, counts["unreadable"])

    def records():
        for index, f in enumerate(files):
            normalizer = Normalizer(f, cfg, index)
            for batch in normalizer.batches():
                bar.update(len(batch))
                yield from _drop_exact_duplicates(batch, cfg, hashes, counts) if exact else batch
            if normalizer.reader.encoding_guessed:
                print(guessed_encoding_note(f.shown, normalizer.reader.encoding), file=sys.stderr)
            stages = normalizer.stats  # read, normalize, clean, quality: what `run` removes before dedup
            counts["input"] += stages[0].records_in
            counts["quarantined"] += sum(sum(s.quarantined.values()) for s in stages)
            counts["dropped"] += sum(sum(s.dropped.values()) for s in stages)

    sample = sample_for_precheck(records(), sample_size, seed)
    bar.close()
    counts["records"] = sample.total
    counts["steps"] = ([planned.cls.name for planned in front_steps(cfg)[1:]]  # what ran after reading
                       + (["exact dedup"] if exact else []))
    counts["differs_from_run"] = difference_from_run(cfg, sample.total)
    return sample.records, sample.total, counts


def difference_from_run(cfg: PrepareConfig, records: int) -> str:
    """How the precheck's count differs from the train split a run writes: precheck removes exact duplicates
    only (near duplicates need the run's global clustering) and holds nothing out, so its plan packs the
    validation records too (issue 32: 244 packed sequences planned where a run trains 228)."""
    removed = []
    if cfg.dedup.enabled and cfg.dedup.near:
        removed.append("removes near duplicates")
    if cfg.validation_inputs:
        removed.append("removes duplicates of validation_inputs from train")
    elif cfg.split.validation_fraction > 0:
        removed.append(f"holds out {cfg.split.validation_fraction:.0%} as validation")
    if not removed:
        return f"counts every record read: {records:,}, as a run's train split would"
    return (f"counts every record read: {records:,}; a run also {' and '.join(removed)}, so its train count (and "
            f"the plan's sequences, steps and hours) will be lower: `--emit --shards RUN` plans from the run's own "
            f"counts")


def readable_inputs(cfg: PrepareConfig, unreadable: list[dict]) -> list:
    """The input files, all expanded and opened before any is read, as `run` does (symlinks, name labels,
    archive headers): an unreadable one stops the precheck, or under read.skip_unreadable is listed in
    `unreadable` and skipped."""
    def skip(exc: UnreadableInput) -> None:
        if not cfg.read.skip_unreadable:
            raise exc
        unreadable.append({"file": exc.uri, "reason": exc.reason})

    readable = []
    for item in cfg.inputs:
        try:
            files = expand_inputs([item], cfg)
        except UnreadableInput as exc:
            skip(exc)
            continue
        for f in files:
            try:
                FileReader(f, cfg.read)
            except UnreadableInput as exc:
                skip(exc)
                continue
            readable.append(f)
    return readable


def _drop_exact_duplicates(batch: list[dict], cfg: PrepareConfig, hashes: set[int], counts: dict) -> list[dict]:
    """The run's exact dedup (same key, first kept), so precheck measures the records `run` trains on;
    near duplicates need the global clustering and are not removed here."""
    texts = [exact_text(r) for r in batch]  # the run's exact key, tools included
    if cfg.dedup.case_fold:
        texts = [t.casefold() for t in texts]
    kept = []
    for rec, key in zip(batch, exact_hashes(texts, cfg.dedup.punctuation_fold)[:, 0].tolist()):
        if key in hashes:
            counts["exact_duplicates"] += 1
        else:
            hashes.add(key)
            kept.append(rec)
    return kept


def run_precheck(cfg: PrepareConfig, sample_size: int = 200_000, seed: int = 0, progress: bool = False) -> dict:
    sample, total, counts = sample_records(cfg, sample_size, seed, progress)
    if not sample:
        raise ValueError("no usable records in the input")
    step = LengthStep(cfg.lengths, None, model=cfg.estimate.model)
    stats = StageStats("lengths")
    tokens, trainable, is_text = [], [], []
    with Progress("precheck: tokens", "records", total=len(sample), enabled=progress) as bar:
        for start in range(0, len(sample), cfg.read.batch_size):
            batch = step.annotate(sample[start:start + cfg.read.batch_size], stats)
            tokens += [r["_tokens"] for r in batch]
            trainable += [r["_trainable"] for r in batch]
            is_text += [r.get("kind") == "text" for r in batch]
            bar.update(len(batch))
    tokens_arr, trainable_arr = np.array(tokens, dtype=np.int64), np.array(trainable, dtype=np.int64)

    # measured on a sample: the summary scales counts to the population and gives percentile intervals
    summary = summarize_lengths({"all": (tokens_arr, trainable_arr)}, cfg.lengths, max_positions(cfg),
                                population={"all": total}, text={"all": np.array(is_text, dtype=bool)})
    plan = plan_for_lengths(cfg, summary)
    summary["tokenizer"] = step.tokenizer_info  # with `exact` and the fallback reason, as in report.json

    plan = mark_approximate(plan, step.tokenizer_info)
    summary["uncertainty"] = percentile_uncertainty(tokens_arr, total)
    untrained = untrained_in_sample(cfg, sample, summary["max_seq_len"], total)
    summary["untrained"] = untrained
    return {
        "records": total, "sampled": len(sample), "exact": len(sample) == total, "counts": counts,
        "tokenizer": step.tokenizer_name, "max_seq_len": summary["max_seq_len"], "tokens": summary,
        "memory": plan["memory"], "recommendation": plan["recommendation"],
        "fastest": plan.get("fastest"), "candidates": plan["candidates"], "hints": plan.get("hints", []),
        "plan": plan, "untrained": untrained,
    }


def untrained_in_sample(cfg: PrepareConfig, sample: list[dict], max_len: int | None, total: int) -> dict:
    """The run's untrained check (pipeline.data.lengths.untrained) on the measured sample, scaled to the population
    when the sample is not all of it; `sampled` then holds the count in the sample."""
    check = UntrainedCheck(cfg, max_len, None)
    hits = [rec["id"] for rec in sample if check(rec)]
    if len(sample) == total:
        return untrained_summary(len(hits), hits, max_len, cfg.lengths.untrained)
    estimate = round(len(hits) * total / len(sample))
    return untrained_summary(estimate, hits, max_len, cfg.lengths.untrained, sampled=len(hits))

