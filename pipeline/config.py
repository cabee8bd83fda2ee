"""The run configuration: one pydantic model, so the CLI, the Prefect deployment's parameter schema and
schemas/config.schema.json (generated from it, checked by a test) all agree."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadConfig(Section):
    batch_size: int = Field(2000, ge=1, description="Records per batch handed between steps.")
    txt_mode: Literal["line", "block"] = Field(
        "line", description="Plain .txt: one document per line, or per blank-line-separated block.")
    max_record_bytes: int = Field(
        8 * 1024 * 1024, ge=1024, description="Larger records are counted and quarantined by reference.")
    max_decompressed_bytes: int = Field(
        20 * 1024**3, ge=1, description="Past this many decompressed bytes the rest of a file is counted as unread.")
    skip_unreadable: bool = Field(False, description="Record unreadable inputs in the report and go on.")
    shard_bytes: int = Field(
        64 * 1024**2, ge=1024, description="Large uncompressed .jsonl/.txt files are read as shards of about this size.")
    batch_bytes: int = Field(
        64 * 1024**2, ge=1024,
        description="A batch also ends after about this many input bytes: memory follows record size x batch rows.")
    # The ceiling keeps every later step safe: the recursive steps (PII's JSON walk, json.dumps) need about
    # two frames per level, and Python's default recursion limit is 1000.
    max_depth: int = Field(
        100, ge=1, le=256, description="Records nested deeper than this (JSON arrays/objects) are quarantined as too_deep.")
    follow_symlinks: bool = Field(
        False, description="Follow symlinks that point outside the input folder (otherwise skipped and reported).")


class FormatConfig(Section):
    format: Literal["auto", "alpaca", "sharegpt", "openai", "prompt_completion", "qa", "text"] = Field(
        "auto", description="Input format; auto-detected per file by default.")
    mapping: dict[str, str] = Field(
        default_factory=dict,
        description="Explicit column/role mapping, LLaMA-Factory style: e.g. {\"messages\": \"dialog\", "
                    "\"role\": \"speaker\", \"content\": \"utterance\", \"user\": \"customer\", "
                    "\"assistant\": \"agent\"} or {\"prompt\": \"question\", \"response\": \"reply\"} "
                    "or {\"text\": \"body\"}.")
    preference: Literal["refuse", "chosen"] = Field(
        "refuse", description="Preference files (DPO chosen/rejected pairs, KTO labels) are not SFT data: "
                              "\"refuse\" stops the run naming the file; \"chosen\" keeps the chosen answer "
                              "of each pair and the desirable KTO answers (undesirable ones are dropped).")


class CleanConfig(Section):
    enabled: bool = True
    min_chars: int = Field(8, ge=0, description="Records with less content than this are dropped (too_short).")
    min_assistant_chars: int = Field(1, ge=0, description="Chat/instruction records need this much answer text.")


class DedupConfig(Section):
    enabled: bool = True
    exact: bool = True
    near: bool = True
    case_fold: bool = True
    punctuation_fold: bool = False
    num_perm: int = Field(128, ge=16, le=1024)
    threshold: float = Field(0.8, gt=0, lt=1, description="Jaccard similarity above which records are near duplicates.")
    ngram: int = Field(5, ge=1, description="Word n-gram size.")
    char_ngram: int = Field(5, ge=1, description="Character n-gram size for short texts and scripts without spaces.")
    scope: Literal["all", "assistant"] = Field("all", description="Chat records: which turns are compared.")
    keep: Literal["first", "longest", "most_turns"] = Field("first", description="Which record of a cluster is kept.")
    verify: bool = Field(True, description="Verify LSH candidates by estimated Jaccard.")


class PiiConfig(Section):
    enabled: bool = True
    languages: list[Literal["tr", "ru", "en"]] = Field(default_factory=lambda: ["tr", "ru", "en"])
    operator: Literal["placeholder", "mask", "pseudonym", "drop"] = "placeholder"
    operators: dict[str, Literal["placeholder", "mask", "pseudonym", "drop"]] = Field(
        default_factory=dict, description="Per entity type overrides, e.g. {\"PERSON\": \"pseudonym\"}.")
    strip_fields: list[str] | None = Field(
        None, description="Input fields removed from meta as personal data by name; None = the built-in list.")
    score_threshold: float = Field(0.5, ge=0, le=1)
    kvkk: Literal["report", "strict"] = Field(
        "report", description="strict fails the run when detected personal data above strict_score would remain.")
    strict_score: float = Field(0.8, ge=0, le=1)
    salt_env: str = Field("PREPARE_PII_SALT", description="Environment variable holding the pseudonym salt.")


class LengthsConfig(Section):
    enabled: bool = True
    tokenizer: str | None = Field(None, description="Tokenizer path or hub id; default: Mistral 32k from mistral-common.")
    chat_template: str | None = Field(None, description="Jinja chat template overriding the tokenizer's.")
    coverage: float = Field(0.99, gt=0, le=1, description="Share of records (or tokens) the max length must cover.")
    coverage_of: Literal["records", "tokens"] = "records"
    grid: int = Field(64, ge=1, description="Max length is a multiple of this.")
    max_seq_len: int | None = Field(None, ge=1, description="Use this instead of choosing from the data.")
    overflow: Literal["keep", "truncate_response", "truncate_prompt", "drop", "split"] = "keep"
    batch_size: int = Field(8, ge=1, description="Micro-batch size for steps-per-epoch figures.")


class SplitConfig(Section):
    validation_fraction: float = Field(0.05, ge=0, lt=1)
    seed: int = 0


class WriteConfig(Section):
    shard_rows: int = Field(50_000, ge=1, description="Rows per Parquet shard at most.")
    shard_bytes: int = Field(256 * 1024**2, ge=1024, description="Target uncompressed bytes per shard.")
    compression: Literal["zstd", "snappy", "gzip", "none"] = "zstd"


class EstimateConfig(Section):
    enabled: bool = True
    model: str = Field("llama-3.1-8b", description="Built-in model name, config.json path or folder.")
    method: Literal["full", "lora", "qlora"] = "qlora"
    epochs: float = Field(3.0, gt=0)


class PrepareConfig(Section):
    """Everything a `prepare run` or a `prepare/dataset` deployment run needs."""

    inputs: list[str] = Field(default_factory=list, description="Files, folders, globs or s3:// URIs.")
    validation_inputs: list[str] = Field(
        default_factory=list, description="Evaluation sets: kept whole, their duplicates removed from train.")
    out: str = Field("runs/latest", description="Run directory.")
    s3: str | None = Field(None, description="s3://bucket/prefix to upload shards and manifest to.")
    workers: int = Field(2, ge=1, le=64, description="Worker processes for per-shard work.")
    read: ReadConfig = Field(default_factory=ReadConfig)
    formats: FormatConfig = Field(default_factory=FormatConfig)
    clean: CleanConfig = Field(default_factory=CleanConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    pii: PiiConfig = Field(default_factory=PiiConfig)
    lengths: LengthsConfig = Field(default_factory=LengthsConfig)
    split: SplitConfig = Field(default_factory=SplitConfig)
    write: WriteConfig = Field(default_factory=WriteConfig)
    estimate: EstimateConfig = Field(default_factory=EstimateConfig)


def load_config(path: str | Path | None = None, **overrides) -> PrepareConfig:
    """Read a JSON (or YAML, if PyYAML is installed) config file and apply non-None overrides."""
    data: dict = {}
    if path:
        text = Path(path).read_text(encoding="utf-8")
        if str(path).endswith((".yaml", ".yml")):
            import yaml  # optional: only for users who write YAML

            data = yaml.safe_load(text) or {}
        else:
            data = json.loads(text)
    data.update({k: v for k, v in overrides.items() if v is not None})
    return PrepareConfig.model_validate(data)


def config_json_schema() -> dict:
    schema = PrepareConfig.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "config.schema.json"
    return schema
