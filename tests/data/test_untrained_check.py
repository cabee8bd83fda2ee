"""The untrained check's shortcut: an over-length record whose untrained tokens are fewer than the max length has
a trainable token before the cut, and is decided without rendering it (no tokenizer in the checking process)."""
import numpy as np
import pytest

from pipeline.core.config import PrepareConfig
from pipeline.data.lengths.untrained import UntrainedCheck, prompt_fits


class Rendering(Exception):
    pass


class NoTokenizer(UntrainedCheck):
    @property
    def handle(self):
        raise Rendering


def _check(tmp_path) -> UntrainedCheck:
    cfg = PrepareConfig(inputs=[str(tmp_path)], out=str(tmp_path / "out"), lengths={"overflow": "keep"})
    return NoTokenizer(cfg, 100, None)


def test_an_over_length_record_whose_prompt_fits_trains_without_rendering(tmp_path):
    check = _check(tmp_path)
    assert check({"kind": "chat", "_tokens": 400, "_trainable": 350}) is False  # 50 untrained tokens < 100
    assert check({"kind": "chat", "_tokens": 400, "_trainable": 0}) is True  # nothing to train on at all
    with pytest.raises(Rendering):  # 120 untrained tokens: they may fill the first 100, so it is rendered
        check({"kind": "chat", "_tokens": 400, "_trainable": 280})


def test_prompt_fits_counts_untrained_tokens_against_the_cut():
    assert prompt_fits(400, 301, 100) and not prompt_fits(400, 300, 100)
    assert prompt_fits(np.array([400.0, 400.0]), np.array([350.0, 10.0]), 100).tolist() == [True, False]
