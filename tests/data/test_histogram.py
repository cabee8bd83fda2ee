"""Histogram, percentiles, the max-length choice, the trade-off, packing and rendering (pure numpy: fast)."""
import json
import math

import numpy as np
import pytest

from pipeline.core.config import LengthsConfig
from pipeline.data.lengths.choose import choose_max_seq_len, coverage_at
from pipeline.data.lengths.draw import plot_lengths_png, render_lengths_markdown, render_lengths_text
from pipeline.data.lengths.histogram import PCT_KEYS, log_bin_edges, log_histogram, percentile_uncertainty, percentiles
from pipeline.data.lengths.packing import dynamic_padding_waste, pack_bfd, packing_summary
from pipeline.data.lengths.summary import summarize_lengths


def _lengths(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    return np.maximum(1, rng.lognormal(5.5, 1.0, n).astype(np.int64))


def test_percentiles_match_numpy_on_known_lengths():
    x = np.arange(1, 101)
    assert percentiles(x) == {"p50": 50, "p90": 90, "p95": 95, "p99": 99, "p99.9": 100}
    for seed in range(5):
        x = _lengths(1000 + seed * 337, seed)
        expected = np.percentile(x, [50, 90, 95, 99, 99.9], method="inverted_cdf")
        assert list(percentiles(x).values()) == [int(v) for v in expected]
        # the definition: the smallest observed length covering at least q% of the records
        for key, q in zip(PCT_KEYS, (50, 90, 95, 99, 99.9)):
            v = percentiles(x)[key]
            assert (x <= v).mean() >= q / 100
            assert (x < v).mean() < q / 100


def test_log_histogram_bins_every_value_once():
    x = np.concatenate([_lengths(), [0, 1, 2, 3, 100_000]])
    edges = log_bin_edges(int(x.max()))
    assert edges[0] == 0 and np.all(np.diff(edges) > 0) and edges[-1] > x.max()
    h = log_histogram(x, edges)
    assert sum(h["counts"]) == x.size
    e = np.array(h["edges"])
    for lo, hi, c in zip(e, e[1:], h["counts"]):
        assert c == np.count_nonzero((x >= lo) & (x < hi))
    # log spacing: about four bins per doubling above the small integers
    assert 3 <= np.count_nonzero((edges >= 1024) & (edges < 2048)) <= 5


@pytest.mark.parametrize("coverage", [0.5, 0.9, 0.99, 0.999, 1.0])
@pytest.mark.parametrize("grid", [1, 64, 128])
def test_chosen_length_covers_target_share_of_records(coverage, grid):
    x = _lengths(3000, seed=grid)
    c = choose_max_seq_len(x, LengthsConfig(coverage=coverage, grid=grid))
    L = c["value"]
    assert L % grid == 0
    assert (x <= L).mean() >= coverage
    if L > grid:  # the smallest such multiple
        assert (x <= L - grid).mean() < coverage
    assert c["records_covered"] == pytest.approx((x <= L).mean(), abs=1e-6)


@pytest.mark.parametrize("coverage", [0.9, 0.99])
def test_chosen_length_covers_target_share_of_tokens(coverage):
    x = _lengths(3000, seed=7)
    L = choose_max_seq_len(x, LengthsConfig(coverage=coverage, coverage_of="tokens"))["value"]
    kept = lambda length: np.minimum(x, length).sum() / x.sum()  # noqa: E731
    assert L % 64 == 0 and kept(L) >= coverage
    assert L == 64 or kept(L - 64) < coverage
    assert coverage_at(x, L)[1] == pytest.approx(kept(L))


def test_cap_by_max_position_embeddings_and_configured_length():
    x = np.array([100] * 90 + [10_000] * 10)
    c = choose_max_seq_len(x, LengthsConfig(coverage=0.99), max_position_embeddings=4096)
    assert c["value"] == 4096 and c["uncapped"] == 10_048 and c["warnings"]
    c = choose_max_seq_len(x, LengthsConfig(coverage=0.99), max_position_embeddings=1000)
    assert c["value"] == 960  # floored to the grid
    c = choose_max_seq_len(x, LengthsConfig(max_seq_len=512), max_position_embeddings=256)
    assert c["value"] == 512 and "configured" in c["reason"] and c["warnings"]


@pytest.mark.parametrize("seed", range(6))
def test_packing_never_exceeds_the_length_and_never_loses_a_token(seed):
    rng = np.random.default_rng(seed)
    L = int(rng.choice([64, 512, 2048, 4096]))
    x = np.concatenate([rng.integers(1, L * 2, 3000), rng.integers(1, 40, 500)])
    bins = pack_bfd(x, L)
    kept = np.minimum(x, L)
    assert bins.shape == x.shape and bins.min() == 0
    per_bin = np.bincount(bins, weights=kept)
    assert per_bin.max() <= L
    assert per_bin.sum() == kept.sum()                       # every token lands in exactly one sequence
    assert np.all(per_bin > 0)                                # no empty sequence
    assert len(per_bin) >= math.ceil(kept.sum() / L)         # cannot beat the volume bound
    s = packing_summary(x, L, 8)
    assert s["packed_sequences"] == len(per_bin)
    assert s["tokens"] + s["tokens_lost"] == x.sum()
    assert s["tokens_per_epoch"] == s["packed_sequences"] * L
    assert s["padding_ratio"] == pytest.approx(1 - kept.sum() / (len(per_bin) * L), abs=1e-6)


def test_best_fit_decreasing_on_a_known_case():
    # decreasing order 7, 6, 5, 4, 3, 3, 2: best fit gives {7,3}, {6,4}, {5,3,2}
    bins = pack_bfd([3, 7, 2, 6, 5, 4, 3], 10)
    groups = sorted(sorted(np.array([3, 7, 2, 6, 5, 4, 3])[bins == b].tolist()) for b in range(bins.max() + 1))
    assert groups == [[2, 3, 5], [3, 7], [4, 6]]


def test_dynamic_padding_waste_small_example():
    x = np.array([10, 10, 10, 10])
    assert dynamic_padding_waste(x, 100, 2) == 0.0
    x = np.array([1, 9, 1, 9])
    w = dynamic_padding_waste(x, 100, 4)
    assert w == pytest.approx(1 - 20 / 36)
    assert dynamic_padding_waste(x, 5, 4) == pytest.approx(1 - 12 / 20)  # truncated to 5


def _groups():
    x = _lengths(4000, 1)
    t = (x * 0.6).astype(np.int64)
    return {"all": (x, t), "split:train": (x[:3800], t[:3800]), "split:validation": (x[3800:], t[3800:]),
            "file:a.jsonl": (x[:1000], t[:1000])}


def test_summary_is_json_and_consistent():
    cfg = LengthsConfig(batch_size=4)
    s = summarize_lengths(_groups(), cfg, max_position_embeddings=8192)
    json.dumps(s)
    assert s["basis"] == "split:train"
    assert set(s["groups"]) == {"all", "split:train", "split:validation", "file:a.jsonl"}
    g = s["groups"]["all"]
    x = _groups()["all"][0]
    assert g["records"] == x.size and g["tokens"]["total"] == int(x.sum())
    assert g["trainable"]["total"] == int(_groups()["all"][1].sum())
    assert g["tokens"]["mean"] == pytest.approx(x.mean(), abs=0.01)
    L = s["max_seq_len"]
    assert isinstance(L, int) and any(r["chosen"] and r["max_seq_len"] == L for r in s["tradeoff"])
    train = _groups()["split:train"][0]
    row = next(r for r in s["tradeoff"] if r["chosen"])
    assert row["records_over"] == np.count_nonzero(train > L)
    assert row["tokens_lost"] == int(np.maximum(train - L, 0).sum())
    assert row["steps_per_epoch"] == math.ceil(train.size / 4)
    p = s["packing"]
    assert p["tokens_per_epoch"] == p["packed_sequences"] * L == p["sequences_per_epoch"] * L
    assert p["steps_per_epoch"] == math.ceil(p["packed_sequences"] / 4)
    assert s["overflow"]["records_over"] == row["records_over"]


def test_summary_drop_policy_packs_only_kept_records():
    x = np.array([100] * 99 + [5000])
    s = summarize_lengths({"all": (x, x)}, LengthsConfig(overflow="drop", coverage=0.9))
    assert s["max_seq_len"] == 128
    assert s["packing"]["records"] == 99 and s["packing"]["tokens_lost"] == 0


def test_sampled_summary_is_scaled_and_has_intervals():
    x = _lengths(2000, 3)
    s = summarize_lengths({"all": (x, x)}, LengthsConfig(), population={"all": 20_000})
    g = s["groups"]["all"]
    assert g["records"] == 20_000 and g["sample"]["sampled"] == 2000
    assert g["tokens"]["total"] == pytest.approx(x.sum() * 10, rel=1e-6)
    assert set(g["uncertainty"]["percentiles"]) == set(PCT_KEYS) | {"coverage"}
    assert s["packing"]["scaled_from_sample"] and s["packing"]["records"] == 20_000
    assert "intervals from a sample of 2,000 of 20,000" in render_lengths_text(s)


def test_percentile_uncertainty_exact_and_coverage():
    x = _lengths(500)
    exact = percentile_uncertainty(x, 500)
    assert exact["exact"] and all(d["low"] == d["high"] == d["value"] for d in exact["percentiles"].values())
    population = _lengths(50_000, 11)
    truth = percentiles(population)
    rng = np.random.default_rng(0)
    hits = {k: 0 for k in ("p50", "p90", "p99")}
    trials = 60
    for _ in range(trials):
        sample = rng.choice(population, 5000, replace=False)
        u = percentile_uncertainty(sample, population.size)
        for k in hits:
            d = u["percentiles"][k]
            hits[k] += d["low"] <= truth[k] <= d["high"]
    assert all(h / trials >= 0.85 for h in hits.values()), hits


def test_rendering():
    s = summarize_lengths(_groups(), LengthsConfig())
    s["tokenizer"] = "mistral-32k [offline default]"
    md = render_lengths_markdown(s)
    assert "| split:train |" in md and "| p99.9 |" in md
    assert f"max_seq_len {s['max_seq_len']:,}" in md and "◀" in md and "```text" in md
    txt = render_lengths_text(s)
    assert "◀ max_seq_len" in txt and "packing at" in txt and "p99" in txt
    assert render_lengths_text({"groups": {}}) == "token lengths: no records"


def test_png(tmp_path):
    s = summarize_lengths(_groups(), LengthsConfig())
    path = tmp_path / "lengths.png"
    plot_lengths_png(s, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


def test_png_legend_beside_the_bars_and_title_whole():
    from pipeline.data.lengths.draw import draw_lengths

    s = summarize_lengths(_groups(), LengthsConfig())
    s["tokenizer"] = "mistral-32k (tokenizer.model.v1 from mistral-common, 32000 tokens) [offline default: " \
                     "model 'llama-3.1-8b' has no local tokenizer files]"
    fig = draw_lengths(s)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:  # no legend box inside the plotting area
            assert not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))
    title = fig.axes[0].get_title().replace("\n", " ")
    assert "has no local tokenizer files]" in title
