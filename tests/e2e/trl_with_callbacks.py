"""trl's own `trl sft` entry point (trl.scripts.sft: its parser reads the emitted config, its main trains), with the
callbacks its command line cannot take: pipeline.train.S3Checkpoints and, for the tests, `Worse` (a run that gets
worse after a step), `HoldAt` (a run that stops progressing at a step, to be killed) and `Seen` (what it trains on).

    python tests/e2e/trl_with_callbacks.py S3_URI [--worse-after N] [--hold-at N] --config trl_sft.yaml ...

Nothing of trl's is changed but the trainer class its main builds, which gets the callbacks added (what a user
does in the few lines of Python the docs show); every other argument goes to trl's parser as typed.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import trl
from transformers import TrainerCallback
from trl.scripts import sft

from pipeline.train import S3Checkpoints


class Worse(TrainerCallback):
    """After step `after`, noise on the trained weights at every step: a run whose evaluations get worse from
    there, so its best checkpoint is known (a tiny model's eval loss otherwise moves by 1e-4 a step, in an order
    that float rounding may change)."""

    def __init__(self, after: int):
        self.after = after

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step > self.after:
            with torch.no_grad():
                for p in model.parameters():
                    if p.requires_grad:
                        p.add_(torch.randn_like(p) * 5)


class HoldAt(TrainerCallback):
    """Stop making progress at the end of step `step` (before it is saved) until the process is killed: a kill
    after a known checkpoint, whatever the speed of the machine."""

    def __init__(self, step: int):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            time.sleep(600)  # the test kills the process long before; a test that died leaves no trainer behind


class Seen(TrainerCallback):
    """What the trainer trains on, kept for the test: the packed train dataset and the batches of an epoch."""

    def on_train_begin(self, args, state, control, train_dataloader=None, **kwargs):
        self.dataset, self.batches = train_dataloader.dataset, len(train_dataloader)


@contextmanager
def callbacks_added(callbacks: list) -> Iterator[None]:
    """trl.scripts.sft.main builds `trl.SFTTrainer` (imported when it runs): that class, with `callbacks` added."""
    original = trl.SFTTrainer

    class WithCallbacks(original):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, callbacks=[*(kwargs.pop("callbacks", None) or []), *callbacks], **kwargs)

    trl.SFTTrainer = WithCallbacks
    try:
        yield
    finally:
        trl.SFTTrainer = original


def trl_sft(argv: list[str], callbacks: list) -> None:
    """`trl sft ARGV` with `callbacks` added."""
    with callbacks_added(callbacks):
        sft.main(*sft.make_parser().parse_args_and_config(argv))


def main(argv: list[str]) -> None:
    uri, rest = argv[0], argv[1:]
    callbacks: list = [S3Checkpoints(uri, keep=1)]
    tests = {"--worse-after": Worse, "--hold-at": HoldAt}
    while rest[:1] and rest[0] in tests:
        callbacks.append(tests[rest[0]](int(rest[1])))
        rest = rest[2:]
    trl_sft(rest, callbacks)


if __name__ == "__main__":
    main(sys.argv[1:])
