"""The run configuration: one pydantic model, so the CLI, the Prefect deployment's parameter schema and
schemas/config.schema.json (generated from it, checked by a test) all agree."""
from __future__ import annotations

import codecs
import difflib
import json
import os
import stat
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from pipeline.core.errors import PrepareError

# Loss paths: standard = the HF loss, which upcasts the whole logits tensor to fp32; bf16 = F.cross_entropy on
# the bf16 logits; chunked = torchtune's CEWithChunkedOutputLoss (fp32 upcast per chunk); fused = Liger /
# Cut-Cross-Entropy / Unsloth kernels that never hold the logits of all tokens.
CrossEntropy = Literal["standard", "bf16", "chunked", "fused"]
CROSS_ENTROPY: tuple[str, ...] = get_args(CrossEntropy)
FrameworkName = Literal["hf", "axolotl", "llamafactory", "unsloth", "torchtune", "plain"]
FRAMEWORKS: tuple[str, ...] = get_args(FrameworkName)  # the stacks with a preset in pipeline.plan.setup
# The input formats, in detection order (auto-detection breaks ties by it): the one list of their names.
# pipeline.data.formats registers a detector and a converter for each; the config accepts them and "auto".
InputFormatName = Literal["sharegpt", "openai", "alpaca", "prompt_completion", "qa", "text"]
INPUT_FORMATS: tuple[str, ...] = get_args(InputFormatName)

# Every integer setting is at most this: past it a size reached C code as OverflowError mid-run
# (read.max_record_bytes: 1e20); it is also the largest integer a JSON client (Prefect's UI) keeps exact.
MAX_INT = 2**53


class ConfigError(PrepareError, ValueError):
    """A configuration the user must fix; str() is one line naming the file, key and value."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def _bounded(cls, value, info: ValidationInfo):
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            raise ValueError(f"must be at most {MAX_INT}")
        return value


def refuse_unknown(keys, known, what: str) -> None:
    """ValueError naming the first key that is not `known`: the close match where there is one, else the list."""
    unknown = sorted(set(keys) - set(known))
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(known), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(known)}"
        raise ValueError(f"unknown {what} {unknown[0]!r}; {hint}")


class ReadConfig(Section):
    encoding: str = Field(
        "auto", description="Text encoding of every input (any Python codec name, e.g. cp1254, cp1251, utf-16); "
                            "auto: UTF-8/UTF-16, else the Turkish, Russian or Western code page the text reads as.")
    csv_delimiter: Literal["auto", ",", ";", "\t", "|"] = Field(
        "auto", description="CSV separator; auto: sniffed from the first lines of each .csv (, ; tab |); "
                            ".tsv files use tab.")
    files_per_shard: int = Field(
        1000, ge=1, le=100_000, description="Small local files are read together, as one shard of about "
                                            "shard_bytes (their size on disk) and at most this many files.")

    @field_validator("encoding")
    @classmethod
    def _known_codec(cls, value: str) -> str:
        if value == "auto":
            return value
        try:
            codec = codecs.lookup(value)
        except LookupError:
            raise ValueError("not a known text encoding (e.g. auto, utf-8, cp1254, cp1251, utf-16)") from None
        if not getattr(codec, "_is_text_encoding", True):  # base64, zlib, rot13...: bytes to bytes
            raise ValueError("not a text encoding (e.g. auto, utf-8, cp1254, cp1251, utf-16)")
        return value

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
    # 16 MiB: the dedup keys step holds about 60x its batch's text at its peak (measured, 6 MB records)
    batch_bytes: int = Field(
        16 * 1024**2, ge=1024,
        description="A batch also ends after about this many input bytes: memory follows record size x batch rows.")
    # The ceiling keeps every later step safe: the recursive steps (PII's JSON walk, json.dumps) need about
    # two frames per level, and Python's default recursion limit is 1000.
    max_depth: int = Field(
        100, ge=1, le=256, description="Records nested deeper than this (JSON arrays/objects) are quarantined as too_deep.")
    follow_symlinks: bool = Field(
        False, description="Follow symlinks that point outside the input folder (otherwise skipped and reported).")
    # 1000: real chats and agent traces have tens to a few hundred messages; every later step costs per turn
    # (PII scanned a record of 200,000 turns for 250 s), and 1000 turns is past any max sequence length.
    max_turns: int = Field(
        1000, ge=1, description="Conversations with more messages than this are quarantined as too_many_turns.")


class FormatConfig(Section):
    format: Literal["auto", InputFormatName] = Field(
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
    # drop by default: a CRM export's chats mostly open with the agent's greeting, which answers nothing;
    # "reject" lost every such chat, and the dropped turns are counted in the report either way
    leading_assistant: Literal["drop", "system", "reject"] = Field(
        "drop", description="Assistant turns before a chat's first user turn (an agent's greeting): \"drop\" "
                            "removes them, \"system\" moves their text into the system message, \"reject\" "
                            "quarantines the chat as bad_role_order. Counted in stages.normalize.counters."
                            "leading_assistant.")

    @field_validator("mapping")
    @classmethod
    def _mapping_keys(cls, value):
        if not value:
            return value
        from pipeline.core.records import MAPPING_KEYS  # lazily: records imports pyarrow

        refuse_unknown(value, MAPPING_KEYS, "mapping key")
        if not ("text" in value or "messages" in value or {"prompt", "response"} <= set(value)):
            # otherwise every row is quarantined as bad_mapping, after the whole read
            raise ValueError("a mapping names the content: text, messages, or both prompt and response")
        return value


class CleanConfig(Section):
    enabled: bool = Field(True, description="Run the clean step (the min_chars and min_assistant_chars floors).")
    min_chars: int = Field(8, ge=0, description="Records with less content than this are dropped (too_short).")
    min_assistant_chars: int = Field(1, ge=0, description="Chat/instruction records need this much answer text.")


class QualityConfig(Section):
    """Quality checks for chat and CRM text (pipeline/data/quality.py), after clean and before dedup. Each check is
    counted in the report (stages.quality, report.quality) with a few record ids; "drop" removes the record
    under the check's reason, "strip" removes the quoted thread or signature from the answer."""

    enabled: bool = Field(True, description="Run the quality checks below.")
    mojibake: Literal["fix", "count", "off"] = Field(
        "fix", description="Text mis-decoded (UTF-8 read as cp1252/cp1251...) is repaired with ftfy's encoding "
                           "fixes only; ftfy changes nothing that does not look mis-decoded.")
    repetition: Literal["drop", "count", "off"] = Field(
        "drop", description="An answer whose word n-grams mostly repeat (a stuck generation, a text pasted "
                            "twice or more) is dropped as repetitive.")
    repetition_ngram: int = Field(3, ge=1, le=20, description="Word n-gram size of the repetition ratio.")
    repetition_threshold: float = Field(
        0.5, gt=0, le=1, description="Share of an answer's word n-grams that repeat an earlier one, at or above "
                                     "which it is repetitive (a loop tends to 1, a double paste is about 0.5).")
    repetition_min_words: int = Field(20, ge=1, description="Shorter answers are not checked for repetition.")
    threads: Literal["count", "strip", "drop", "off"] = Field(
        "count", description="Quoted e-mail threads in answers (\"> \" lines, \"On ... wrote:\", \"... yazdı:\", "
                             "\"... написал(а):\", -----Original Message-----): counted, stripped, or dropped "
                             "as quoted_thread.")
    signatures: Literal["count", "strip", "drop", "off"] = Field(
        "count", description="Signatures ending answers (a \"-- \" line, \"Sent from my iPhone\", \"Saygılarımla\", "
                             "\"С уважением\", \"Best regards\" with a few lines after): counted, stripped, or "
                             "dropped as signature.")
    no_words: Literal["count", "drop", "off"] = Field(
        "count", description="Records with a user or assistant turn of no letter or digit outside URLs and "
                             "e-mail addresses (\"👍\", \"???\", a bare link): counted, or dropped as no_words.")
    canned: Literal["count", "cap", "off"] = Field(
        "count", description="Canned answers: the same assistant text (case and spaces folded) in at least "
                             "canned_min_count records; counted, or capped at canned_cap records per answer "
                             "(the rest dropped as canned_answer, in input order).")
    canned_min_count: int = Field(20, ge=2, description="Records with the same answer that make it canned.")
    canned_cap: int = Field(20, ge=1, description="Records kept per canned answer under canned: cap.")
    canned_top: int = Field(10, ge=0, le=1000, description="Canned answers listed in the report (hash, length, ids).")


class DedupConfig(Section):
    enabled: bool = Field(
        True, description="Run the dedup step (exact and near duplicates; validation_inputs' duplicates in train).")
    exact: bool = Field(True, description="Remove records whose normalized text is the same as a kept one's.")
    near: bool = Field(True, description="Remove near duplicates: MinHash LSH, candidates verified by Jaccard.")
    case_fold: bool = Field(True, description="Compare text case-folded (exact and near).")
    punctuation_fold: bool = Field(False, description="Compare exact keys with punctuation removed.")
    num_perm: int = Field(128, ge=16, le=1024, description="MinHash permutations per signature (near dedup).")
    threshold: float = Field(0.8, gt=0, lt=1, description="Jaccard similarity above which records are near duplicates.")
    ngram: int = Field(5, ge=1, description="Word n-gram size.")
    char_ngram: int = Field(5, ge=1, description="Character n-gram size for short texts and scripts without spaces.")
    scope: Literal["all", "assistant"] = Field("all", description="Chat records: which turns are compared.")
    keep: Literal["first", "longest", "most_turns"] = Field("first", description="Which record of a cluster is kept.")
    verify: bool = Field(True, description="Verify LSH candidates by Jaccard: the MinHash estimate, and the shingle "
                                           "sketches where the estimate is near the threshold.")
    against: list[str] = Field(
        default_factory=list,
        description="Earlier datasets (run directories or the s3:// prefixes of their manifests): records that "
                    "duplicate one of their records, exactly or near, are removed (earlier_duplicate). Only "
                    "their dedup indexes are read, never their text.")


class DecontamConfig(Section):
    eval_sets: list[str] = Field(
        default_factory=list,
        description="Eval sets (files, folders, globs or s3:// URIs, any input format): training records that "
                    "share a word n-gram with one of their records, or are near duplicates of one, are removed. "
                    "They are only read.")
    ngram: int = Field(13, ge=5, le=50, description="Words in the n-gram a training record must share with an "
                                                    "eval record to be removed (eval_ngram).")
    near_threshold: float = Field(
        0.8, gt=0, lt=1, description="Estimated Jaccard similarity with an eval record (MinHash, as dedup) at which "
                                     "a training record is removed as its near duplicate (eval_near_dup).")

    @property
    def enabled(self) -> bool:
        """On when there is an eval set to check against: no switch of its own that could disagree."""
        return bool(self.eval_sets)


class PiiConfig(Section):
    enabled: bool = Field(True, description="Run the PII step (detect and replace personal data).")
    languages: list[Literal["tr", "ru", "en"]] = Field(
        default_factory=lambda: ["tr", "ru", "en"], description="Languages whose recognizers run.")
    operator: Literal["placeholder", "mask", "pseudonym", "drop"] = Field(
        "placeholder", description="What replaces a detected span: a typed placeholder (<PHONE>), a mask, a salted "
                                   "pseudonym (<PERSON_1a2b...>, needs salt_env), or drop (the whole record).")
    operators: dict[str, Literal["placeholder", "mask", "pseudonym", "drop"]] = Field(
        default_factory=dict, description="Per entity type overrides, e.g. {\"PERSON\": \"pseudonym\"}.")
    strip_fields: list[str] | None = Field(
        None, description="Input fields removed from meta as personal data by name; None = the built-in list.")
    score_threshold: float = Field(
        0.5, ge=0, le=1, description="Detections scored at or above this are replaced; lower ones are counted as "
                                     "residual candidates.")
    kvkk: Literal["report", "strict"] = Field(
        "report", description="strict fails the run when detected personal data above strict_score would remain.")
    strict_score: float = Field(
        0.8, ge=0, le=1, description="kvkk: strict fails the run when a detection scored at or above this would "
                                     "remain in the text.")
    special: Literal["report", "drop", "quarantine"] = Field(
        "report", description="KVKK article-6 special categories (health, religion, ethnicity, politics, union, "
                              "sexual orientation, criminal records, biometrics) found in a record: count them, "
                              "drop the record (pii_special), or quarantine it (pii_special_review). Under kvkk "
                              "strict, report fails the run when any are found.")
    salt_env: str = Field("PREPARE_PII_SALT", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=128,
                          description="Environment variable holding the pseudonym salt.")
    residual_sample: int = Field(
        300, ge=0, le=100_000,
        description="Copies of the run's records (seeded by split.seed) into which real names no recognizer list "
                    "holds are planted, to measure how many would survive the PII step (report: "
                    "pii.residual_risk.measured); the copies are never written. 0 = off.")
    residual_max: float = Field(
        0.05, ge=0, le=1,
        description="kvkk: strict fails the run when the upper 95% bound of the share of probe copies that keep a "
                    "planted name is above this.")

    @field_validator("operators")
    @classmethod
    def _entity_types(cls, value):
        if not value:
            return value
        from pipeline.core.records import ENTITY_TYPES  # lazily: records imports pyarrow

        refuse_unknown(value, ENTITY_TYPES, "entity type")
        return value


class LengthsConfig(Section):
    enabled: bool = Field(
        True, description="Run the lengths step: count tokens, choose the max length, apply lengths.overflow.")
    tokenizer: str | None = Field(
        None, description="Tokenizer: a tokenizer file or folder, a hub id, or an alias (mistral-32k, tekken); "
                          "default: the model's own (next to its config.json, else from the Hugging Face cache or "
                          "hub), else the offline Mistral 32k from mistral-common (counts marked approximate).")
    chat_template: str | None = Field(None, description="Jinja chat template overriding the tokenizer's.")
    coverage: float = Field(0.99, gt=0, le=1, description="Share of records (or tokens) the max length must cover.")
    coverage_of: Literal["records", "tokens"] = Field(
        "records", description="What coverage counts: records whose length fits, or tokens that fit.")
    grid: int = Field(64, ge=1, description="Max length is a multiple of this.")
    max_seq_len: int | None = Field(None, ge=1, description="Use this instead of choosing from the data.")
    overflow: Literal["keep", "truncate_response", "truncate_prompt", "drop"] = Field(
        "keep", description="Records longer than the max length: keep them whole (the trainer cuts), truncate "
                            "the response or the prompt to fit, or drop them.")
    batch_size: int = Field(8, ge=1, description="Micro-batch size for steps-per-epoch figures.")
    untrained: Literal["drop", "fail", "keep"] = Field(
        "drop", description="Chat/instruction records with no trainable token after templating and truncation at "
                            "the chosen max length (all labels -100): drop them (counted as `untrained`, with a "
                            "few ids in the report), fail the run before the shards are written, or keep them.")
    text_chunking: Literal["off", "max_len"] = Field(
        "max_len", description="Plain-text records longer than the max length: max_len cuts them into chunks "
                               "that fit (one row each, with a derived id and meta.chunk); the max length is then "
                               "chosen from the chat records and documents counted at most 2,048 tokens. off: "
                               "text records follow lengths.overflow like chat records.")


class FiltersConfig(Section):
    """Language filters (pipeline/data/lang.py). With detect_language on, every record gets meta.lang whatever the
    other fields say."""
    detect_language: bool = Field(
        True, description="Identify each record's language (meta.lang, the report's language mix, PII routing). "
                          "Off: no meta.lang, PII routes by a stop-word guess, and languages/lang_mismatch "
                          "cannot be used.")
    languages: list[str] | None = Field(
        None, description="Keep only records in these languages (ISO 639-1 codes, e.g. [tr, ru, en]); "
                          "others are dropped as `language`. Records without letters are kept.")
    lang_mismatch: Literal["count", "drop"] = Field(
        "count", description="A chat record whose answer is in another language than its prompt: count it, "
                             "or drop it as `lang_mismatch`.")
    lang_min_letters: int = Field(20, ge=1, description="Letters each side (prompt, answer) needs before "
                                                        "their languages are compared.")
    lang_min_confidence: float = Field(0.5, ge=0, le=1, description="Model probability each side needs before "
                                                                   "a differing language counts as a mismatch.")

    @field_validator("languages")
    @classmethod
    def _codes(cls, value):
        bad = [c for c in value or () if not (2 <= len(c) <= 3 and c.isascii() and c.isalpha() and c.islower())]
        if bad:
            raise ValueError(f"not a language code (ISO 639-1, lower case, e.g. tr): {bad[0]!r}")
        return value

    @model_validator(mode="after")
    def _needs_detection(self):
        if not self.detect_language and (self.languages or self.lang_mismatch == "drop"):
            raise ValueError("filters.languages and lang_mismatch: drop need filters.detect_language: true")
        return self


class SplitConfig(Section):
    """The validation split (pipeline/data/split.py): stratified by language when filters.detect_language is on."""
    validation_fraction: float = Field(
        0.05, ge=0, lt=1, description="Share of each language's records (those left after dedup and the canned-"
                                      "answer cap, rounded half up) held out as validation; with "
                                      "filters.detect_language off, each record by its id's hash. Not taken "
                                      "when validation_inputs are given.")
    seed: int = Field(0, description="Seed of the blake2b(seed:id) hash that orders records for the split.")


class WriteConfig(Section):
    shard_rows: int = Field(50_000, ge=1, description="Rows per Parquet shard at most.")
    shard_bytes: int = Field(256 * 1024**2, ge=1024, description="Target uncompressed bytes per shard.")
    compression: Literal["zstd", "snappy", "gzip", "none"] = Field(
        "zstd", description="Parquet compression codec of the shards.")
    split_by_kind: bool = Field(
        False, description="Write chat records (messages) and plain-text records (text) to separate shard sets, "
                           "<split>/chat/ and <split>/text/, so that no shard has rows with null messages or text.")


class EstimateConfig(Section):
    enabled: bool = Field(True, description="Run the GPU plan: memory of a training step, GPU, time and cost.")
    model: str = Field("llama-3.1-8b", description="Model for the length cap and the GPU plan: a built-in name "
                                                   "(prepare models), a hub id org/name, or a config.json or its "
                                                   "folder.")
    method: Literal["full", "lora", "qlora"] = Field(
        "qlora", description="Fine-tuning method: full, lora (16-bit base) or qlora (4-bit NF4 base).")
    epochs: float = Field(3.0, gt=0, description="Passes over the data, for time and cost.")
    # the estimator's knobs (pipeline.plan.memory.estimate_memory); None = the framework preset's default
    cross_entropy: CrossEntropy | None = Field(
        None, description="Loss: standard (HF, fp32-upcast logits), bf16 (F.cross_entropy on bf16 logits), "
                          "chunked (torchtune), or fused (Liger / Cut-CE / Unsloth).")
    framework: FrameworkName = Field(
        "hf", description="Training stack whose defaults apply (pipeline.plan.setup.framework_preset): hf (Trainer/TRL), "
                          "axolotl, llamafactory, unsloth, torchtune, plain (PyTorch loop).")
    adapter_dtype: Literal["fp32", "bf16"] | None = Field(
        None, description="LoRA/QLoRA adapter weights: fp32 (PEFT's get_peft_model default on a bf16 model, also in "
                          "a plain loop) or bf16 (Unsloth, torchtune, a model cast after wrapping); None = the "
                          "framework preset's.")
    lora_rank: int = Field(16, ge=1, le=4096, description="LoRA rank (lora and qlora).")
    lora_targets: str = Field("all-linear", description="all-linear or modules such as q_proj,v_proj.")
    grad_ckpt: bool = Field(True, description="Gradient checkpointing.")
    attn: Literal["sdpa", "fa2", "eager"] = Field(
        "sdpa", description="Attention kernel: sdpa (torch scaled_dot_product_attention), fa2 (FlashAttention-2), "
                            "eager (the model's matmul + softmax code); the time model times each differently.")
    optimizer: Literal["adamw", "adamw8bit", "paged_adamw8bit", "sgd", "adafactor"] = Field(
        "adamw", description="Optimizer, for the size of its state.")
    micro_batch: int | None = Field(None, ge=1, le=1024,
                                    description="At most this many sequences per card per step; None = the largest that fits (up to 64).")

    def memory_options(self) -> dict:
        """The keywords of estimate_memory / plan_training these settings stand for."""
        return self.model_dump(include={"cross_entropy", "framework", "adapter_dtype", "lora_rank", "lora_targets",
                                        "grad_ckpt", "attn", "optimizer"})


class PrepareConfig(Section):
    """Everything a `prepare run` or a `prepare/dataset` deployment run needs."""

    inputs: list[str] = Field(default_factory=list, description="Files, folders, globs or s3:// URIs.")
    validation_inputs: list[str] = Field(
        default_factory=list, description="Evaluation sets: kept whole, their duplicates removed from train.")
    out: str = Field("runs/latest", description="Run directory.")
    s3: str | None = Field(None, description="s3://bucket/prefix to upload shards and manifest to.")
    append_to: str | None = Field(
        None, description="An earlier dataset (run directory or s3:// prefix of its manifest) this run adds a "
                          "version to: the manifest references its shards (unchanged, not copied) and lists this "
                          "run's new records after them; records that duplicate an earlier one are removed as "
                          "with --against.")
    workers: int = Field(2, ge=1, le=64, description="Worker processes for per-shard work.")
    read: ReadConfig = Field(default_factory=ReadConfig)
    formats: FormatConfig = Field(default_factory=FormatConfig)
    clean: CleanConfig = Field(default_factory=CleanConfig)
    quality: QualityConfig = Field(default_factory=QualityConfig)
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    decontam: DecontamConfig = Field(default_factory=DecontamConfig)
    pii: PiiConfig = Field(default_factory=PiiConfig)
    lengths: LengthsConfig = Field(default_factory=LengthsConfig)
    filters: FiltersConfig = Field(default_factory=FiltersConfig)
    split: SplitConfig = Field(default_factory=SplitConfig)
    write: WriteConfig = Field(default_factory=WriteConfig)
    estimate: EstimateConfig = Field(default_factory=EstimateConfig)
    allow_empty: bool = Field(
        False, description="A run that keeps no record succeeds (and uploads an empty dataset) instead of failing.")
    s3_check: bool = Field(
        True, description="Check the S3 destination (endpoint, credentials, bucket) before reading a record.")
    s3_overwrite: bool = Field(
        False, description="Upload even when the S3 prefix holds the manifest of another run directory (it is "
                           "replaced); by default such a run is refused before a record is read.")

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo):
        """Settings of one section that another turns off would be silently ignored: each pair is an error
        naming both keys (the command-line flag where one set it: validation context "flags")."""
        flags = (info.context or {}).get("flags", {})
        found = contradictions(self, lambda key, setting: flags.get(key) or setting)
        if found:
            raise ValueError(found[0])
        return self


_QUALITY_ACTIONS = {"threads": ("strip", "drop"), "signatures": ("strip", "drop"), "no_words": ("drop",),
                    "canned": ("cap",)}


def contradictions(cfg: PrepareConfig, given) -> list[str]:
    """Cross-section contradictions, one sentence each; `given(key, setting)` names how a key was set."""
    found = []
    pii_off = given("pii.enabled", "pii.enabled: false")
    if not cfg.pii.enabled and cfg.pii.kvkk == "strict":  # strict promises no personal data in the output
        found.append(f"pii.kvkk: strict needs the PII step, but {pii_off} turns it off; "
                     f"turn the PII step on or set pii.kvkk: report")
    if not cfg.pii.enabled and cfg.pii.special != "report":
        found.append(f"pii.special: {cfg.pii.special} needs the PII step, but {pii_off} turns it off")
    if not cfg.lengths.enabled and cfg.lengths.overflow != "keep":
        found.append(f"lengths.overflow: {cfg.lengths.overflow} needs the lengths step, but "
                     f"{given('lengths.enabled', 'lengths.enabled: false')} turns it off")
    if cfg.validation_inputs and not (cfg.dedup.enabled and (cfg.dedup.exact or cfg.dedup.near)):
        # the dedup step is what removes validation records' duplicates from train
        off = given("dedup.enabled", "dedup.enabled: false") if not cfg.dedup.enabled else \
            "dedup.exact: false and dedup.near: false"
        found.append(f"{given('validation_inputs', 'validation_inputs')}: their duplicates are removed from "
                     f"train by the dedup step, but {off} turns that off")
    if cfg.formats.mapping and cfg.formats.format != "auto":
        found.append(f"formats.mapping is used only with formats.format: auto, and formats.format is "
                     f"{cfg.formats.format}; drop one of them")
    if not cfg.quality.enabled:
        for key, actions in _QUALITY_ACTIONS.items():
            if getattr(cfg.quality, key) in actions:
                found.append(f"quality.{key}: {getattr(cfg.quality, key)} needs quality.enabled: true")
    return found


CONFIG_BYTES = 1 << 20   # a config is a few KB; a larger --config is a wrong file, not a config


def read_config_file(path: str | Path) -> dict:
    """The mapping in a JSON or YAML config file; ConfigError (one line) for anything else."""
    p = Path(path)
    try:
        kind = os.stat(p).st_mode
        if stat.S_ISDIR(kind):
            raise ConfigError(f"config {path}: is a folder, not a file")
        if not stat.S_ISREG(kind):  # a FIFO or a device would block or never end
            raise ConfigError(f"config {path}: not a regular file (a pipe, a device or a socket)")
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since the stat
                raise ConfigError(f"config {path}: not a regular file (a pipe, a device or a socket)")
            raw = fh.read(CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"config {path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"config {path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    if len(raw) > CONFIG_BYTES:
        raise ConfigError(f"config {path}: larger than {CONFIG_BYTES // 1024} KB; not a config file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(f"config {path}: not UTF-8 text") from None
    if str(path).lower().endswith((".yaml", ".yml")):
        data = _load_yaml(text, str(path))
    else:
        try:
            data = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise ConfigError(f"config {path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {path}: must be a mapping of settings, not {type(data).__name__}")
    return data


def _load_yaml(text: str, name: str):
    try:
        import yaml  # optional: only for users who write YAML
    except ImportError:
        raise ConfigError(f"config {name}: YAML needs PyYAML (pip install pyyaml), or write JSON") from None

    class NoAliasLoader(yaml.SafeLoader):
        """SafeLoader without anchors and aliases: each alias is a reference, so a 1 KB file of nested aliases
        (a "billion laughs") expands to gigabytes once anything walks it; a config never needs one."""

        def compose_node(self, parent, index):
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                line = event.start_mark.line + 1
                raise ConfigError(f"config {name}: line {line}: YAML anchors and aliases (&{event.anchor} / "
                                  f"*{event.anchor}) are not allowed in a config; write the values out")
            return super().compose_node(parent, index)

    try:
        return yaml.load(text, Loader=NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"config {name}: invalid YAML{where}: {problem}") from None


def _merge(base: dict, overrides: dict, model: type[BaseModel] | None = None, skip_none: bool = True) -> dict:
    """base with the overrides applied field by field: a mapping for a section updates the keys it names and
    keeps the others; any other value (a list, formats.mapping) replaces the old one whole. With skip_none a
    None means "not given" (a CLI flag left out); without, it is a value (Prefect: "s3": null, no upload)."""
    model = model or PrepareConfig
    out = dict(base)
    for key, value in overrides.items():
        if value is None and skip_none:
            continue
        field = model.model_fields.get(key)
        section = getattr(field, "annotation", None)
        if isinstance(value, dict) and isinstance(section, type) and issubclass(section, Section):
            current = out.get(key)
            out[key] = _merge(current if isinstance(current, dict) else {}, value, section, skip_none)
        else:
            out[key] = value
    return out


def merge_config(base: PrepareConfig | dict, overrides: dict | None) -> PrepareConfig:
    """A PrepareConfig from `base` with the (possibly partial, nested) `overrides` merged over it field by field;
    ConfigError (one line) if the result is not valid."""
    data = base.model_dump(mode="json") if isinstance(base, BaseModel) else dict(base)
    return validate_config(_merge(data, overrides or {}, skip_none=False))


def validate_config(data: dict, source: str | None = None, flags: dict[str, str] | None = None) -> PrepareConfig:
    """`flags`: dotted config key -> the command-line flag that set it, named in the errors."""
    try:
        return PrepareConfig.model_validate(data, context={"flags": flags or {}})
    except ValidationError as exc:
        prefix = f"config {source}: " if source else "invalid setting: "
        raise ConfigError(prefix + describe_errors(exc, flags)) from None


def describe_errors(exc: ValidationError, flags: dict[str, str] | None = None) -> str:
    """pydantic's errors as one line: `key.path: what is wrong (got value)`, unknown keys with close matches;
    a key a flag set is shown with its flag, a whole-config error (a contradiction) as its message alone."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(x) for x in err["loc"])
        if not loc:
            parts.append(err["msg"].replace("Value error, ", ""))
            continue
        if flags and loc in flags:
            loc = f"{loc} ({flags[loc]})"
        if err["type"] == "extra_forbidden":
            known = _fields_at(err["loc"][:-1])
            close = difflib.get_close_matches(str(err["loc"][-1]), known, n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else f"; known: {', '.join(known)}"
            parts.append(f"{loc}: unknown key{hint}")
            continue
        message = err["msg"].replace("Value error, ", "")
        value = repr(err.get("input"))
        parts.append(f"{loc}: {message} (got {value if len(value) <= 60 else value[:57] + '...'})")
    return "; ".join(parts)


def _fields_at(loc: tuple) -> list[str]:
    model: type[BaseModel] = PrepareConfig
    for key in loc:
        field = model.model_fields.get(str(key))
        annotation = getattr(field, "annotation", None)
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)


def load_config(path: str | Path | None = None, overrides: dict | None = None,
                flags: dict[str, str] | None = None) -> PrepareConfig:
    """Read a JSON (or YAML, if PyYAML is installed) config file and merge the nested `overrides` over it (the
    command line's flags: a None is a flag not given; a mapping for a section updates only the keys it names),
    then validate the result as one config. ConfigError, one line naming the key (and the flag that set it,
    from `flags`: dotted key -> flag), for any mistake."""
    data = read_config_file(path) if path else {}
    # blame the file for what is wrong in it, before flags change anything
    validate_config(data, str(path) if path else None)
    return validate_config(_merge(data, overrides or {}), flags=flags)


def config_json_schema() -> dict:
    schema = PrepareConfig.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "config.schema.json"
    return schema
