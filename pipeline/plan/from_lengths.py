"""The GPU plan of a PrepareConfig and a token-length summary: the one glue `prepare run` (finalize) and
`prepare precheck` share, so both plan with the same estimator settings and model limits."""
from __future__ import annotations

from pipeline.core.config import PrepareConfig
from pipeline.core.models import load_model_spec
from pipeline.plan.gpus import MAX_MICRO_BATCH, plan_training


def max_positions(cfg: PrepareConfig) -> int | None:
    """The model's context window (max_position_embeddings), which caps the chosen max length; None when
    the model's spec is not known."""
    try:
        return load_model_spec(cfg.estimate.model).get("max_position_embeddings")
    except Exception:
        return None


def plan_options(cfg: PrepareConfig) -> dict:
    """plan_training's keywords for the estimator settings of the config."""
    return {**cfg.estimate.memory_options(), "max_micro_batch": cfg.estimate.micro_batch or MAX_MICRO_BATCH}


def plan_for_lengths(cfg: PrepareConfig, summary: dict) -> dict:
    """plan_training at the summary's max length, for the tokens and sequences of one epoch it packs."""
    packing = summary.get("packing", {})
    return plan_training(
        cfg.estimate.model, cfg.estimate.method, seq_len=summary["max_seq_len"],
        tokens_per_epoch=int(packing.get("tokens_per_epoch", 0)),
        sequences_per_epoch=int(packing.get("sequences_per_epoch", 0)), epochs=cfg.estimate.epochs,
        padding_ratio=packing.get("padding_ratio"),
        **plan_options(cfg))
