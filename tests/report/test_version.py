"""report/version.py: the figures of an appended version made of the earlier and this run's, without records."""
import numpy as np

from pipeline.data.lengths.histogram import log_bin_edges, log_histogram
from pipeline.data.lengths.packing import packing_summary
from pipeline.report.version import combined_packing, histogram_percentiles, merged_histogram


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
