"""The Step base: accounting, one process(batch) contract, and resume keys from declared config sections."""
from pipeline.core.config import PrepareConfig
from pipeline.core.step import Step, config_key, run_steps
from pipeline.data.split import SplitStep


class DropOdd(Step):
    name = "odd"
    config_sections = ("clean",)

    def process(self, batch):
        kept = [r for r in batch if r["n"] % 2 == 0]
        self.drop("too_short", len(batch) - len(kept))
        return kept


class Seen(Step):  # counts through self.stats, as every step does
    name = "seen"

    def process(self, batch):
        self.stats.add("seen", len(batch))
        return batch


def test_the_base_counts_records_and_reasons_and_skips_empty_batches():
    odd, old = DropOdd(), Seen()
    out = [r for b in run_steps([odd, old], [[{"n": i} for i in range(5)], [{"n": 1}]]) for r in b]
    assert [r["n"] for r in out] == [0, 2, 4]
    assert (odd.stats.records_in, odd.stats.records_out, dict(odd.stats.dropped)) == (6, 3, {"too_short": 3})
    # the second batch became empty at `odd`: `old` never saw it
    assert (old.stats.records_in, old.stats.records_out, old.stats.counters) == (3, 3, {"seen": 3})
    assert odd.stats.records_in == odd.stats.records_out + sum(odd.stats.dropped.values())


def test_resume_key_follows_the_sections_a_step_declares():
    cfg = PrepareConfig(inputs=["x"], out="o")
    other_clean = cfg.model_copy(update={"clean": cfg.clean.model_copy(update={"min_chars": 99})})
    other_split = cfg.model_copy(update={"split": cfg.split.model_copy(update={"seed": 7})})
    assert config_key(cfg, [DropOdd]) != config_key(other_clean, [DropOdd])
    assert config_key(cfg, [DropOdd]) == config_key(other_split, [DropOdd])  # split is not read by it
    assert config_key(cfg, [DropOdd, SplitStep]) != config_key(other_split, [DropOdd, SplitStep])
    assert config_key(cfg, [DropOdd])["steps"] == ["odd"]


def test_take_stats_starts_a_fresh_count_and_progress_goes_on():
    class Counter:
        value = None

        def set(self, n, final=False):
            self.value = n

    step = DropOdd()
    step.progress = Counter()
    step([{"n": 0}, {"n": 2}])
    first = step.take_stats()
    step([{"n": 4}])
    assert first.records_in == 2 and step.stats.records_in == 1
    assert step.progress.value == 3
