import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
PEER_FORMATS = SHARED / "peer_formats"
SAMPLE_DATA = ROOT / "sample_data"
FOLDER_TIERS = {"e2e": "slow", "integration": "integration", "fuzz": "fuzz"}
SERVER_FIXTURES = {"s3_endpoint", "bucket", "prefect_api"}  # moto S3 and Prefect servers (below)
# tests/ mirrors the wings (tests/data, tests/plan, ...), with whole runs in tests/e2e, servers in
# tests/integration and Hypothesis in tests/fuzz; a few modules share helpers across folders (test_cli_errors'
# cli(), test_flow's log reader), so every folder is importable by module name, as in one flat folder
sys.path[:0] = [str(p) for p in sorted(Path(__file__).parent.iterdir()) if p.is_dir() and any(p.glob("test_*.py"))]


def pytest_collection_modifyitems(session, config, items):
    """The Hypothesis tests (test_fuzz.py) run first. Hypothesis checks that the global `random` state does
    not change during a draw, and the session's Prefect and moto servers, once started, draw from it in
    background threads: later, that shows as a HypothesisDeprecationWarning, which a future Hypothesis may
    turn into an error."""
    items.sort(key=lambda item: 0 if item.path.name == "test_fuzz.py" else 1)  # stable: the rest keep their order
    # The folders are the tiers: whole runs (e2e/) are slow, servers (integration/) and Hypothesis (fuzz/) are
    # theirs; `make test-fast` is what is left, the unit tests of the wings.
    for item in items:
        tier = FOLDER_TIERS.get(item.path.parent.name)
        if tier:
            item.add_marker(getattr(pytest.mark, tier))
    # A test that asks for a server fixture starts that server: it is in the integration tier wherever it is.
    for item in items:
        if SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    os.environ["PREPARE_CACHE"] = str(tmp_path_factory.mktemp("prepare-cache"))
    # a developer's Hugging Face cache (or the network) would change which tokenizer counts: tests see an empty
    # cache and no Hub unless they build a cache themselves (hf_cache_with_llama)
    os.environ["HF_HUB_CACHE"] = str(tmp_path_factory.mktemp("hf-hub-cache"))
    os.environ["HF_HUB_OFFLINE"] = "1"
    # a developer's own trial store would change the planned hours the tests assert on
    os.environ["PREPARE_CALIBRATION"] = str(tmp_path_factory.mktemp("calibration") / "calibration.json")


@pytest.fixture(scope="session")
def s3_endpoint():
    """A real moto S3 server on 127.0.0.1, reached over HTTP by boto3."""
    from flows.services import moto_server, s3_env

    with moto_server() as endpoint:
        saved = {k: os.environ.get(k) for k in s3_env(endpoint)}
        os.environ.update(s3_env(endpoint))
        yield endpoint
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def bucket(s3_endpoint):
    import boto3

    name = f"test-{uuid.uuid4().hex[:12]}"
    boto3.client("s3").create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory, s3_endpoint):
    """One `run_prepare` of the sample data with every stage on, uploaded to the local S3 server: the whole run
    several files look at (tests/e2e/test_run.py, the flow's output in tests/integration/test_flow.py), made
    once a session as it takes seconds."""
    import boto3

    from pipeline.core.config import PrepareConfig
    from pipeline.runner import run_prepare

    boto3.client("s3").create_bucket(Bucket="e2e")
    out = tmp_path_factory.mktemp("e2e") / "run"
    cfg = PrepareConfig(inputs=[str(SAMPLE_DATA)], out=str(out), s3="s3://e2e/datasets/sample")
    return cfg, run_prepare(cfg, progress=False)


@pytest.fixture(scope="session")
def prefect_api(tmp_path_factory):
    """One real Prefect server for the session (temporary SQLite DB), with its own PREFECT_HOME."""
    from prefect.settings import PREFECT_HOME, temporary_settings
    from prefect.testing.utilities import prefect_test_harness

    with temporary_settings({PREFECT_HOME: str(tmp_path_factory.mktemp("prefect-home"))}):
        with prefect_test_harness(server_startup_timeout=120):
            yield


# every artifact the prepare flow publishes (flows/prepare.py publish)
FLOW_ARTIFACT_KEYS = ("prepare-report", "prepare-accounting", "prepare-kvkk", "prepare-token-lengths",
                      "prepare-gpu-plan", "prepare-report-html")


def read_flow_artifacts() -> list:
    """The artifacts with the flow's keys on the session's Prefect server (prefect_api), all runs so far."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async def read():
        async with get_client() as client:
            return await client.read_artifacts(
                artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=list(FLOW_ARTIFACT_KEYS))))
    return asyncio.run(read())


def prepare_in_process(*args: str, cwd) -> subprocess.CompletedProcess:
    """`prepare <args>` run by the CLI's main() in this process, in `cwd`: its exit code, stdout and stderr as a
    subprocess would give them (what Python prints, and what reaches the file descriptors: worker processes,
    libraries), without the seconds a new interpreter takes to start and import the pipeline (most of a small
    run's time). Tests about the process itself (signals, what the interpreter or an import prints) start one."""
    import contextlib
    import io
    import tempfile

    from pipeline.cli import main

    texts, fds, here = (io.StringIO(), io.StringIO()), (tempfile.TemporaryFile(), tempfile.TemporaryFile()), os.getcwd()
    sys.stdout.flush(), sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        os.chdir(cwd)
        os.dup2(fds[0].fileno(), 1), os.dup2(fds[1].fileno(), 2)
        with contextlib.redirect_stdout(texts[0]), contextlib.redirect_stderr(texts[1]):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code
    finally:
        os.dup2(saved[0], 1), os.dup2(saved[1], 2)
        os.close(saved[0]), os.close(saved[1])
        os.chdir(here)
    out, err = (text.getvalue() + _read(fd) for text, fd in zip(texts, fds))
    return subprocess.CompletedProcess(["prepare", *args], code, out, err)


def _read(file) -> str:
    with file:
        file.seek(0)
        return file.read().decode("utf-8", "replace")


def fast_config(tmp_path, inputs, **overrides):
    """A config with the slow stages off, for tests about reading and accounting."""
    from pipeline.core.config import PrepareConfig

    cfg = PrepareConfig(inputs=[str(i) for i in inputs], out=str(tmp_path / "run"), workers=1, **overrides)
    cfg.pii.enabled = cfg.lengths.enabled = cfg.estimate.enabled = False
    return cfg


def worked_example_tokens() -> int:
    """Tokens per epoch sized so the README's worked example (Llama-3.1-8B QLoRA, max length 2048, 3 epochs)
    takes 20 hours on one A40 by the planner's own time model (time is linear in the sequences at a fixed
    micro-batch, so one large plan gives the rate)."""
    from pipeline.plan.gpus import plan_training

    probe = 2048 * 1_000_000
    plan = plan_training("Llama-3.1-8B", "qlora", seq_len=2048, tokens_per_epoch=probe,
                         sequences_per_epoch=probe // 2048, epochs=3, hints=False)
    hours = next(c for c in plan["candidates"] if c["gpu"] == "A40")["hours"]
    return round(probe * 20 / hours / 2048) * 2048


LLAMA_31_REPO = "meta-llama/Llama-3.1-8B-Instruct"


def write_hf_cache(cache: Path, repo: str = LLAMA_31_REPO, revision: str = "0e9e39f249a16976918f6564b8830bc894c89659"
                   ) -> Path:
    """A Hugging Face hub cache holding the tokenizer files of `repo` in huggingface_hub's layout
    (models--org--name/refs/main and snapshots/<sha>/; plain files where the hub client links to blobs/): a
    small byte-level BPE trained here with
    Llama 3.1's chat template (tests/fixtures/templates), so the model's own tokenizer resolves offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = ["merhaba dünya bugün hava çok güzel", "привет мир как дела сегодня", "the quick brown fox jumps"] * 50
    tok.train_from_iterator(corpus, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                                        "<|eot_id|>", "<|end_of_text|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")
    fast.chat_template = (Path(__file__).parent / "fixtures" / "templates" / "llama-3.1-instruct.jinja").read_text()
    repo_dir = cache / ("models--" + repo.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / revision
    fast.save_pretrained(snapshot)
    (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs" / "main").write_text(revision)
    return snapshot


@pytest.fixture
def hf_cache_with_llama(tmp_path, monkeypatch):
    """HF_HUB_CACHE pointing at a cache made here that holds Llama-3.1-8B-Instruct's (stand-in) tokenizer."""
    cache = tmp_path / "hf-hub"
    snapshot = write_hf_cache(cache)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return snapshot
