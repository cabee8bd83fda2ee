"""Every user error is one line on stderr, with a non-zero exit, and is found before the work: config mistakes,
YAML alias bombs, model and tokenizer mistakes, bad --s3 URIs, S3 destinations and inputs that cannot work, a full
disk, Ctrl-C, a closed stdout pipe, and a run that kept no record. The real CLI in a subprocess, the real moto S3
server over HTTP."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest
from conftest import ROOT

pytestmark = pytest.mark.integration

FAST = ("--no-pii", "--no-lengths", "--no-estimate")


def cli(*args, cwd, env=None, timeout=300):
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def assert_one_line(proc, *words, code=2):
    err = proc.stderr.strip()
    assert proc.returncode == code, (proc.returncode, err[-3000:])
    last = err.splitlines()[-1] if err else ""
    assert "Traceback" not in err and last.startswith("prepare: error: "), err[-3000:]
    for word in words:
        assert word in last, last
    return last


TOPICS = ["the weather in Ankara", "sorting a list in Python", "the boiling point of water", "how tides work",
          "planting tomatoes in spring", "the rules of chess castling"]


def write_alpaca(path, n=3, seed=0):
    """n records different enough that near-dedup keeps them all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    topics = TOPICS[seed % len(TOPICS):] + TOPICS[:seed % len(TOPICS)]
    path.write_text("".join(json.dumps({"instruction": f"Tell me about {topics[i % len(topics)]}, variant {seed}.",
                                        "output": f"Here is a short note on {topics[i % len(topics)]}."}) + "\n"
                            for i in range(n)))
    return path


@pytest.fixture
def data(tmp_path):
    return write_alpaca(tmp_path / "in" / "a.jsonl")


# --- configuration ----------------------------------------------------------------------------------------

CONFIG_CASES = {
    # name: (file name, file content or None for no file, extra flags, words the line must hold)
    "workers 0": (None, None, ["--workers", "0"], ["workers", "got 0"]),
    "unknown key": ("c.json", '{"piii": {"enabled": false}}', [], ["piii", "unknown key", "did you mean pii"]),
    "unknown nested key": ("c.json", '{"dedup": {"treshold": 0.5}}', [], ["dedup.treshold", "threshold"]),
    "bad json": ("c.json", '{"workers": 2,', [], ["c.json", "invalid JSON", "line 1"]),
    "bad yaml": ("c.yaml", "workers: [1\n", [], ["c.yaml", "invalid YAML"]),
    "not a mapping": ("c.json", "[1, 2]", [], ["c.json", "mapping"]),
    "missing file": ("nope.json", None, [], ["nope.json", "no such file"]),
    "salt_env with =": ("c.json", '{"pii": {"salt_env": "A=B"}}', [], ["pii.salt_env", "'A=B'"]),
    "empty salt_env": ("c.json", '{"pii": {"salt_env": ""}}', [], ["pii.salt_env"]),
    # accepted, then OverflowError in the reader mid-run
    "huge int": ("c.json", '{"read": {"max_record_bytes": 100000000000000000000}}', [],
                 ["read.max_record_bytes", "at most"]),
    "infinite float": ("c.json", '{"estimate": {"epochs": Infinity}}', [], ["estimate.epochs", "finite"]),
}


@pytest.mark.parametrize("case", CONFIG_CASES, ids=list(CONFIG_CASES))
def test_config_errors_are_one_line_naming_the_key(tmp_path, data, case):
    name, content, flags, words = CONFIG_CASES[case]
    args = ["run", str(data), "--out", str(tmp_path / "run"), *FAST, *flags]
    if name:
        if content is not None:
            (tmp_path / name).write_text(content)
        args += ["--config", name]
    assert_one_line(cli(*args, cwd=tmp_path), *words)
    assert not (tmp_path / "run").exists()


def test_a_folder_as_config_is_one_line(tmp_path, data):
    (tmp_path / "conf").mkdir()
    assert_one_line(cli("run", str(data), "--out", "run", "--config", "conf", *FAST, cwd=tmp_path), "conf", "folder")


FLAG_CASES = {
    # flags are overrides of the config, validated with it: each used to be copied onto a validated config
    "precheck --coverage 1.5": (["precheck", "--coverage", "1.5"], ["lengths.coverage", "1.5"]),
    "precheck --coverage 5": (["precheck", "--coverage", "5"], ["lengths.coverage", "5.0"]),
    "precheck --epochs 0": (["precheck", "--epochs", "0"], ["estimate.epochs", "got 0"]),
    "precheck --micro-batch 0": (["precheck", "--micro-batch", "0"], ["estimate.micro_batch", "got 0"]),
    "run --lora-rank 0": (["run", "--lora-rank", "0", "--out", "run", *FAST], ["estimate.lora_rank", "got 0"]),
}


@pytest.mark.parametrize("case", FLAG_CASES, ids=list(FLAG_CASES))
def test_a_flag_out_of_range_is_one_line_naming_the_key(tmp_path, data, case):
    (command, *flags), words = FLAG_CASES[case]
    assert_one_line(cli(command, str(data), *flags, cwd=tmp_path), *words)
    assert not (tmp_path / "run").exists()


def test_every_command_fails_in_the_same_one_line(tmp_path):
    """estimate, gpus, calibrate and checkpoints had error helpers of their own; one prefix, exit 2, everywhere."""
    assert_one_line(cli("gpus", "--catalog", "missing.json", cwd=tmp_path), "missing.json")
    assert_one_line(cli("estimate", "--model", "llama-3.1-8b", "--method", "lora", "--seq-len", "0",
                        cwd=tmp_path), "seq")
    assert_one_line(cli("calibrate", "no-such-trial", cwd=tmp_path), "no-such-trial")
    assert_one_line(cli("precheck", "no-such-data.jsonl", cwd=tmp_path), "no-such-data.jsonl")


def test_yaml_aliases_are_refused(tmp_path, data):
    """A billion-laughs config (1 KB, nine levels of ten aliases) took 6 GB once anything walked it."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]")
    lines.append("inputs: *a8")
    (tmp_path / "lol.yaml").write_text("\n".join(lines) + "\n")
    assert len((tmp_path / "lol.yaml").read_bytes()) < 1500
    assert_one_line(cli("run", str(data), "--out", "run", "--config", "lol.yaml", *FAST, cwd=tmp_path),
                    "lol.yaml", "line 1", "aliases")


def test_a_plain_yaml_config_still_loads(tmp_path):
    from pipeline.core.config import ConfigError, load_config

    (tmp_path / "c.yaml").write_text("workers: 3\ndedup:\n  near: false\n")
    cfg = load_config(tmp_path / "c.yaml", {"dedup": {"exact": False}})
    assert (cfg.workers, cfg.dedup.near, cfg.dedup.exact) == (3, False, False)
    (tmp_path / "m.yaml").write_text("base: &b {near: false}\ndedup: *b\n")
    with pytest.raises(ConfigError):
        load_config(tmp_path / "m.yaml")


# --- checked before a record is read ----------------------------------------------------------------------

def test_model_typo_is_one_line_with_close_matches_before_the_work(tmp_path, data):
    line = assert_one_line(cli("run", str(data), "--out", "run", "--model", "lama-3.1-8b", "--no-pii",
                               cwd=tmp_path), "lama-3.1-8b", "did you mean", "llama-3.1-8b")
    assert len(line) < 300
    assert not (tmp_path / "run").exists()


def test_precheck_and_estimate_name_close_matches_for_a_model_typo(tmp_path, data):
    proc = cli("precheck", str(data), "--model", "lama-3.1-8b", cwd=tmp_path)
    assert_one_line(proc, "did you mean", "llama-3.1-8b")
    assert "precheck: " not in proc.stderr  # found before the data is read and tokenized
    proc = cli("estimate", "--model", "mistral-7", "--method", "lora", "--seq-len", "2048", cwd=tmp_path)
    err = proc.stderr.strip()
    assert proc.returncode == 2 and "\n" not in err and "did you mean" in err and "mistral-7b" in err, err
    assert "Qwen2.5-72B" not in err  # the close matches, not the whole catalog


def test_unloadable_tokenizer_is_found_before_the_work(tmp_path, data):
    tok = tmp_path / "tok"
    tok.mkdir()
    (tok / "tokenizer.json").write_text("{not a tokenizer")
    assert_one_line(cli("run", str(data), "--out", "run", "--tokenizer", str(tok), "--no-pii", "--no-estimate",
                        cwd=tmp_path), "tokenizer", "cannot load")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("uri,words", [
    ("s3://my bucket/x", ["'my bucket'", "3-63"]),   # botocore's message was cut to "Parameter validation failed:"
    ("s3:/bucket/x", ["not an s3:// URI"]),
    ("s3:///x", ["no bucket"]),
    ("s3://bucket/x*", ["pattern"]),
    ("s3://b/x", ["'b'"]),
])
def test_bad_s3_uris_are_one_line_before_the_work(tmp_path, data, uri, words):
    assert_one_line(cli("run", str(data), "--out", "run", "--s3", uri, *FAST, cwd=tmp_path), *words)
    assert not (tmp_path / "run").exists()


def test_missing_bucket_is_found_before_the_work(tmp_path, data, s3_endpoint):
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    assert_one_line(cli("run", str(data), "--out", "run", "--s3", f"s3://{missing}/ds", *FAST, cwd=tmp_path),
                    f"s3://{missing}", "no such bucket")
    assert not (tmp_path / "run").exists()
    # --no-s3-check skips it: the run does the work and the upload fails, in one line
    assert_one_line(cli("run", str(data), "--out", "run", "--s3", f"s3://{missing}/ds", "--no-s3-check", *FAST,
                        cwd=tmp_path), missing)
    assert (tmp_path / "run" / "report.json").exists()


def test_endpoint_down_is_found_before_the_work(tmp_path, data, s3_endpoint, bucket):
    from flows.services import free_port

    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}  # nothing listens there
    assert_one_line(cli("run", str(data), "--out", "run", "--s3", f"s3://{bucket}/ds", *FAST, cwd=tmp_path,
                        env=env), "cannot reach the S3 endpoint")
    assert not (tmp_path / "run").exists()


def test_s3_input_errors_are_one_line(tmp_path, s3_endpoint, bucket):
    import boto3

    boto3.client("s3").put_object(Bucket=bucket, Key="in/a.jsonl", Body=write_alpaca(tmp_path / "a.jsonl").read_bytes())
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    assert_one_line(cli("run", f"s3://{missing}/in/", "--out", "run", *FAST, cwd=tmp_path), missing,
                    "no such bucket")
    assert_one_line(cli("run", f"s3://{bucket}/nothing-here/", "--out", "run", *FAST, cwd=tmp_path),
                    f"s3://{bucket}/nothing-here/", "no objects")
    from flows.services import free_port

    assert_one_line(cli("run", f"s3://{bucket}/in/", "--out", "run", *FAST, cwd=tmp_path,
                        env={"AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}), "cannot reach the S3 endpoint")
    assert not (tmp_path / "run").exists()
    proc = cli("run", f"s3://{bucket}/in/", "--out", "run", *FAST, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["counts"]["kept"] == 3


# --- during and after the work ----------------------------------------------------------------------------

@pytest.mark.skipif(not shutil.which("unshare") or os.geteuid() != 0, reason="needs unshare and root for a tmpfs")
def test_full_disk_is_one_line_naming_the_folder(tmp_path):
    """A real full disk: a 256 KB tmpfs in a private mount namespace, 3 MB of records that do not compress."""
    import random

    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(5000)]
    src = tmp_path / "in" / "big.jsonl"
    src.parent.mkdir()
    with open(src, "w") as fh:
        for i in range(3000):
            fh.write(json.dumps({"text": " ".join(rng.choice(words) for _ in range(150))}) + "\n")
    disk = tmp_path / "disk"
    disk.mkdir()
    probe = subprocess.run(["unshare", "-m", "mount", "-t", "tmpfs", "-o", "size=1k", "none", str(disk)],
                           capture_output=True)
    if probe.returncode:
        pytest.skip("no mount namespaces here")
    run = [sys.executable, "-m", "pipeline.cli", "run", str(src), "--out", str(disk / "run"), "--workers", "1", *FAST]
    script = f"mount -t tmpfs -o size=256k none {disk} && exec " + " ".join(f"'{a}'" for a in run)
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert_one_line(proc, "no space left on device writing", str(disk / "run"))


def test_ctrl_c_is_one_line_and_no_worker_traceback(tmp_path):
    for i in range(4):
        write_alpaca(tmp_path / "in" / f"f{i}.jsonl", n=5, seed=i)
    from slowshards import slow_shards

    env = {**os.environ, **slow_shards(120)}
    out = tmp_path / "run"
    (tmp_path / "cfg.json").write_text('{"read": {"files_per_shard": 1}}')  # a shard for each worker
    proc = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "run", "in", "--out", str(out), "--workers", "2",
                             *FAST, "--config", "cfg.json"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        # both workers are inside a shard once two work files exist (normalize writes them before the sleep; the
        # executor starts the largest shards first, so which two is not known)
        deadline = time.monotonic() + 120
        while len(list((out / "work" / "normalized").glob("*.parquet"))) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() else ""
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)  # what the terminal does: the whole foreground process group
        # a hang guard, not a timing: the shards sleep 120 s, and the run used to wait for them
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    lines = [line for line in err.strip().splitlines() if not line.startswith("prepare: 4 input")]
    assert len(lines) == 1 and lines[0].startswith("prepare: error: interrupted"), err


def test_closed_stdout_pipe_is_not_an_error(tmp_path):
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first line is written, as with `| head -0`
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "gpus"], stdout=w, stderr=subprocess.PIPE,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    os.close(w)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_a_run_that_keeps_nothing_fails_unless_allow_empty(tmp_path, s3_endpoint, bucket):
    import boto3

    d = tmp_path / "in"
    d.mkdir()
    (d / "odd.jsonl").write_text("".join(json.dumps({"foo": i, "bar": "baz"}) + "\n" for i in range(4)))
    (d / "notes.pdf").write_bytes(b"%PDF-1.4 not data")
    line = assert_one_line(cli("run", "in", "--out", "run", "--s3", f"s3://{bucket}/ds", *FAST, cwd=tmp_path),
                           "no usable record", "in/odd.jsonl", "unknown_format 4", "notes.pdf", "--allow-empty")
    assert "unsupported file type" in line
    assert "Contents" not in boto3.client("s3").list_objects_v2(Bucket=bucket), "nothing uploaded"
    assert not (tmp_path / "run" / "manifest.json").exists()
    assert json.loads((tmp_path / "run" / "report.json").read_text())["counts"]["kept"] == 0

    proc = cli("run", "in", "--out", "run", "--s3", f"s3://{bucket}/ds", "--allow-empty", *FAST, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    keys = {o["Key"] for o in boto3.client("s3").list_objects_v2(Bucket=bucket)["Contents"]}
    assert "ds/manifest.json" in keys


def test_unsupported_files_in_a_folder_are_reported(tmp_path):
    write_alpaca(tmp_path / "in" / "a.jsonl")
    (tmp_path / "in" / "sub").mkdir()
    (tmp_path / "in" / "sub" / "contract.docx").write_bytes(b"PK\x03\x04")
    (tmp_path / "in" / ".DS_Store").write_bytes(b"\0")  # hidden: not data, not worth a line
    proc = cli("run", "in", "--out", "run", "--json", *FAST, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    warning = [line for line in proc.stderr.splitlines() if "unsupported" in line]
    assert len(warning) == 1 and "in/sub/contract.docx" in warning[0] and ".DS_Store" not in warning[0], proc.stderr
    report = json.loads(proc.stdout)
    assert report["unreadable_inputs"] == [{"file": "in/sub/contract.docx", "reason": "unsupported file type (skipped)"}]
    assert report["counts"]["kept"] == 3
