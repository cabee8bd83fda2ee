"""From the pre-check to a training job: trainer configs (emit), checkpoints to S3 (checkpoints, and the
S3Checkpoints TrainerCallback), and the trial run that corrects the plan (calibrate).

`from pipeline.train import S3Checkpoints` imports transformers; the rest of the package does not."""
from __future__ import annotations


def __getattr__(name: str):
    if name == "S3Checkpoints":  # transformers (and torch) only for who asks for the callback
        from pipeline.train.callback import S3Checkpoints  # imports transformers: only when asked for

        return S3Checkpoints
    raise AttributeError(name)
