"""report/version.py: the figures of an appended version made of the earlier and this run's, without records."""
import numpy as np

from pipeline.core.schemas import validate
from pipeline.data.lengths.histogram import log_bin_edges, log_histogram
from pipeline.data.lengths.packing import packing_summary
from pipeline.report.version import (
    combined_packing,
    histogram_percentiles,
    merged_histogram,
    version_basis,
    version_section,
)


def test_two_histograms_of_one_grid_sum_to_the_histogram_of_both():
    rng = np.random.default_rng(0)
    a, b = rng.integers(1, 300, 500), rng.integers(200, 5000, 300)
    merged = merged_histogram(log_histogram(a), log_histogram(b))
    assert merged == log_histogram(np.concatenate([a, b]), log_bin_edges(5000))
    exact = np.percentile(np.concatenate([a, b]), [50, 99])
    found = histogram_percentiles(merged)
    for value, key in zip(exact, ("p50", "p99")):  # the upper edge of the bin that holds it: at most ~19% above
        assert value <= found[key] + 1 and found[key] <= value * 1.2 + 1


def test_histograms_far_apart_keep_the_empty_bins_between_them():
    a, b = np.array([3, 4, 5]), np.array([900, 1000])
    assert merged_histogram(log_histogram(a), log_histogram(b)) == \
        log_histogram(np.concatenate([a, b]), log_bin_edges(1000))


def test_two_packings_at_one_length_add_up():
    rng = np.random.default_rng(1)
    a, b = rng.integers(10, 512, 700), rng.integers(10, 512, 400)
    pa, pb = packing_summary(a, 512, 8), packing_summary(b, 512, 8)
    both = combined_packing(pa, pb)
    assert both["tokens"] == packing_summary(np.concatenate([a, b]), 512, 8)["tokens"]
    assert both["packed_sequences"] == pa["packed_sequences"] + pb["packed_sequences"]
    assert both["padding_ratio"] == round(1 - both["tokens"] / both["tokens_per_epoch"], 6)


def a_report(kept: dict[str, int], lengths: np.ndarray, version: dict | None = None) -> dict:
    """The parts of a run's report.json the version section reads, with the timings and the rest beside them."""
    histogram = log_histogram(lengths)
    tokens = {"total": int(lengths.sum()), "mean": float(lengths.mean()), "min": int(lengths.min()),
              "max": int(lengths.max()), "p50": int(np.percentile(lengths, 50)), "p99": int(np.percentile(lengths, 99))}
    card = {"gpu": "L4", "count": 1, "micro_batch": 4, "hours": 1.5, "cost_usd": 2.1, "cost_text": "$2.10",
            "memory_gb": 20.5}
    report = {
        "counts": {"kept": sum(kept.values()), "dropped": {}},
        "files": {name: {"kept": n, "dropped": {}, "seconds": 0.31} for name, n in kept.items()},
        "stages": {"lengths": {"seconds": 1.2, "cpu_seconds": 0.9}},
        "lengths": {"max_seq_len": 512, "packing": packing_summary(lengths, 512, 8),
                    "groups": {"all": {"records": len(lengths), "tokens": tokens, "histogram": histogram},
                               "lang:en": {"records": len(lengths) - 3, "tokens": tokens, "histogram": histogram},
                               "lang:tr": {"records": 3, "tokens": tokens, "histogram": histogram},
                               "kind:chat": {"records": len(lengths), "tokens": tokens, "histogram": histogram}}},
        "plan": {"max_seq_len": 512, "tokens": {"per_epoch": 9000, "sequences_per_epoch": 20, "total": 8000},
                 "recommendation": card, "fastest": {**card, "gpu": "H100"}, "candidates": [card]},
    }
    return {**report, "version": version} if version else report


def test_a_later_version_reads_the_same_figures_from_the_basis_as_from_the_report():
    """version_basis.json holds what the version section reads of the earlier report and no timing: the
    section made from it is the one made from the whole report.json (before: an S3 earlier version had
    neither, its figures before were missing)."""
    rng = np.random.default_rng(2)
    earlier = a_report({"a.jsonl": 30, "b.jsonl": 10}, rng.integers(5, 400, 40))
    now = a_report({"c.jsonl": 12}, rng.integers(5, 400, 12))
    previous = {"run_id": "r1", "location": "s3://bucket/v1", "counts": {"kept": 40}, "max_seq_len": 512}
    basis = version_basis(earlier)
    validate(basis, "version_basis")
    assert "seconds" not in str(basis) and "candidates" not in basis["plan"]
    args = (now, 512, None, "note")
    from_basis, from_report = version_section(previous, basis, *args), version_section(previous, earlier, *args)
    from_report["previous"]["report"] = "version_basis.json"  # the one field that names the file read
    assert from_basis == from_report
    assert from_basis["by_file"]["a.jsonl"]["before"] == 30 and from_basis["by_lang"]["tr"]["before"] == 3
    assert from_basis["plan"]["before"]["recommendation"]["gpu"] == "L4"
    # a version's own basis carries its figures after, which the next version starts from
    version = a_report({"c.jsonl": 12}, rng.integers(5, 400, 12), version=from_basis)
    again = version_basis(version)
    validate(again, "version_basis")
    later = version_section(previous, again, *args)
    assert later["by_file"]["a.jsonl"]["before"] == 30 and later["by_file"]["c.jsonl"]["before"] == 12
