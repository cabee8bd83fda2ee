"""The Step contract as the runner applies it: each phase's step list is built from the config by one function
(pipeline/runner/steps.py), the steps built are the steps listed, each accounts for every record, the resume
key names the same steps, and a step that is off is not in the list (no step decides on its own)."""
import importlib
import inspect
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from pipeline.core.config import PrepareConfig
from pipeline.core.step import GlobalStep, Planned, Step, build_steps, config_key, run_steps
from pipeline.data import dedup
from pipeline.data.normalize import Normalizer
from pipeline.data.readers import describe
from pipeline.data.split import read_validation_ids
from pipeline.runner import run_prepare
from pipeline.runner.run import build_eval_index
from pipeline.runner.steps import KeySinks, ShardDecisions, global_steps, normalize_steps, process_steps
from pipeline.runner.work import WorkWriter, work_paths

ALL_OFF = {"clean": {"enabled": False}, "quality": {"enabled": False}, "filters": {"detect_language": False},
           "dedup": {"enabled": False}, "pii": {"enabled": False}, "lengths": {"enabled": False},
           "estimate": {"enabled": False}}
CONFIGS = {"defaults": {}, "all_off": ALL_OFF, "strict_kvkk": {"pii": {"kvkk": "strict"}},
           "decontam_only": {**ALL_OFF, "decontam": {"eval_sets": ["eval.jsonl"]}}}  # in tmp_path
# the PII engine and the tokenizer take seconds to load: with them on, a config is in the slow tier
FAST = ("all_off", "decontam_only")
TIERED = [pytest.param(name, marks=[] if name in FAST else [pytest.mark.slow]) for name in CONFIGS]
ANSWERS = ["Open the settings page and choose a new password there.",
           "Orders ship within two working days of the payment.",
           "The warranty covers every part for two full years."]


def write_input(path):
    rows = [json.dumps({"instruction": f"Question number {i} about the shop?", "output": ANSWERS[i % 3]})
            for i in range(6)]
    rows += ["", "{not json", json.dumps({"instruction": "Hi?", "output": ""})]  # empty, unreadable, no answer
    path.write_text("\n".join(rows) + "\n")
    return path


def config(tmp_path, name) -> PrepareConfig:
    cfg = PrepareConfig(inputs=[str(tmp_path / "in.jsonl")], out=str(tmp_path / "run"), workers=1,
                        **CONFIGS[name])
    cfg.decontam.eval_sets = [str(tmp_path / p) for p in cfg.decontam.eval_sets]
    return cfg


def eval_index(cfg: PrepareConfig, work: Path) -> str | None:
    """The run's eval index when decontam is on, of an eval set that holds the input's first record."""
    if not cfg.decontam.enabled:
        return None
    Path(cfg.decontam.eval_sets[0]).write_text(
        json.dumps({"instruction": "Question number 0 about the shop?", "output": ANSWERS[0]}) + "\n")
    return str(build_eval_index(cfg, work))


def check_built(plan: list[Planned], steps: list[Step], cfg: PrepareConfig) -> None:
    assert [type(s) for s in steps] == [p.cls for p in plan]  # what is built is what is listed, in order
    assert config_key(cfg, steps) == config_key(cfg, plan)  # the resume key names the steps that ran
    for step in steps:
        st = step.stats
        assert st.records_in == st.records_out + sum(st.dropped.values()) + sum(st.quarantined.values()), step.name


@pytest.mark.parametrize("name", TIERED)
def test_each_phase_list_runs_as_built_and_accounts_for_every_record(tmp_path, name):
    cfg, work = config(tmp_path, name), tmp_path / "work"
    # phase 1: the file's steps after its reader, then the key steps writing the shard's key files
    phase1 = normalize_steps(cfg, eval_index(cfg, work))
    normalizer = Normalizer(describe(str(write_input(tmp_path / "in.jsonl"))), cfg, plan=phase1.files)
    paths = work_paths(work, 0)
    for path in paths.values():
        path.parent.mkdir(parents=True)
    writers = {kind: WorkWriter(paths[kind]) for kind in ("keys", "canned", "langs")}
    key_steps = build_steps(phase1.keys, KeySinks(*(w.append for w in writers.values())))
    records = [r for batch in run_steps(key_steps, normalizer.batches()) for r in batch]
    for w in writers.values():
        w.close()
    check_built(phase1.files, normalizer.steps, cfg)
    check_built(phase1.keys, key_steps, cfg)
    assert normalizer.read.records_in == 9 and records
    if cfg.decontam.enabled:  # the eval item's copy, and record 3: 13 words of it ("about the shop? Open ...")
        assert normalizer.steps[-1].stats.dropped == {"eval_ngram": 2}

    # phase 2: each global step decides from the key files that phase 1's list wrote
    shard = {"index": 0, **{f"has_{kind}": w.written for kind, w in writers.items()}}
    decided = global_steps(cfg, tmp_path, work, [shard], has_eval=False)
    for step in decided:
        assert isinstance(step.run(), dict) and Path(step.decision).exists()
    decisions = {step.name: step.decision for step in decided}

    # phase 3, built with those decisions
    phase3 = process_steps(cfg, residual_rate=0.5)
    assert set(decisions) <= {p.cls.name for p in phase3}  # every global decision has its phase-3 step
    ids = read_validation_ids(decisions["split"]) if "split" in decisions else None
    history = []  # the masked keys of the dataset's index (dedup.history)
    steps = build_steps(phase3, ShardDecisions(0, False, dedup.removed_reasons(decisions.get("dedup"), 0),
                                               decisions.get("canned"), ids, b"contract-salt", None, history.append))
    out = [r for batch in run_steps(steps, [records]) for r in batch]
    assert bool(history) == cfg.dedup.enabled
    check_built(phase3, steps, cfg)
    assert out and all(r["_split"] in ("train", "validation") for r in out)


def test_every_step_reads_only_sections_of_the_config():
    for cls in [*step_classes(Step), *step_classes(GlobalStep)]:
        assert cls.name and set(cls.config_sections) <= set(PrepareConfig.model_fields), cls.__name__


@pytest.mark.slow  # whole runs
@pytest.mark.parametrize("name", ["defaults", "all_off"])
def test_a_listed_step_runs_and_an_off_one_is_absent(tmp_path, name):
    cfg = config(tmp_path, name)
    write_input(tmp_path / "in.jsonl")
    report = run_prepare(cfg, progress=False, log=lambda _: None).report
    listed = {p.cls.name for p in normalize_steps(cfg).steps} | {p.cls.name for p in process_steps(cfg, 0.5)}
    assert set(report["stages"]) == listed | {"write"}
    if name == "all_off":
        assert not {"clean", "quality", "language", "dedup", "canned", "pii", "lengths"} & set(report["stages"])
        assert {c["setting"] for c in report["quality"]["checks"].values()} == {"off"}  # shown off, as before


STEP_MODULES = ("normalize", "clean", "quality", "lang", "decontam", "split", "dedup", "pii", "pii.residual",
                "lengths.step", "shards")


def step_classes(base: type) -> list[type]:
    for module in STEP_MODULES:
        importlib.import_module(f"pipeline.data.{module}")

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    return [cls for cls in subclasses(base) if cls.__module__.startswith("pipeline.")]


def test_no_step_decides_on_its_own_whether_it_runs():
    found = step_classes(Step)
    assert len(found) >= 15
    for cls in found:
        for method in ("process", "annotate"):
            if hasattr(cls, method):
                assert ".enabled" not in inspect.getsource(getattr(cls, method)), f"{cls.__name__}.{method}"


def test_strict_kvkk_with_pii_off_is_a_config_error():
    with pytest.raises(ValidationError, match="pii.kvkk: strict needs the PII step"):
        PrepareConfig(inputs=["x"], out="o", pii={"enabled": False, "kvkk": "strict"})
