"""Issue 30, the smaller guards: file names that are not UTF-8, an --out of "/", a PREPARE_CACHE that is a
file, a FIFO as --config, a password in AWS_ENDPOINT_URL, "..", in an --s3 prefix, two run directories
uploading into one prefix, an input named three times, a javascript: link in a file name, and a busy run
directory refused before the slow set-up."""
import json
import os
import socket

import pytest
from conftest import fast_config, prepare_in_process
from test_cli_errors import FAST, assert_one_line, cli, write_alpaca

from pipeline.runner import PrepareError, run_prepare
from pipeline.runner.rundir import RunDir


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def data(tmp_path):
    return write_alpaca(tmp_path / "in" / "a.jsonl")


# --- names that are not UTF-8 ---------------------------------------------------------------------------

@pytest.mark.slow  # two runs through the CLI's main()
def test_non_utf8_file_names_are_shown_escaped_and_the_run_finishes(tmp_path, data):
    folder = data.parent
    with open(os.path.join(os.fsencode(folder), b"x\xffy.docx"), "wb") as fh:
        fh.write(b"not a data file")
    with open(os.path.join(os.fsencode(folder), b"b\xfe.jsonl"), "wb") as fh:
        fh.write(b'{"text": "a second document about something else entirely"}\n')
    proc = prepare_in_process("run", str(folder), "--out", "run", *FAST, "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    report = json.loads((run / "report.json").read_text(encoding="utf-8"))
    assert {"file": "in/x\\xffy.docx", "reason": "unsupported file type (skipped)"} in report["unreadable_inputs"]
    assert "in/b\\xfe.jsonl" in report["files"] and (run / "manifest.json").is_file() and not (run / "work").exists()
    assert "in/b\\xfe.jsonl" in json.loads(proc.stdout)["files"]
    named = prepare_in_process("run", os.fsdecode(os.path.join(os.fsencode(folder), b"b\xfe.jsonl")), "--out",
                               "run2", *FAST, cwd=tmp_path)  # named on the command line: config.inputs in the manifest
    assert named.returncode == 0, named.stderr[-3000:]
    assert json.loads((tmp_path / "run2" / "manifest.json").read_text())["config"]["inputs"][0].endswith("b\\xfe.jsonl")


@pytest.mark.integration
def test_an_out_that_is_not_utf8_is_one_line(tmp_path, data):
    proc = cli("run", str(data), "--out", os.fsdecode(b"run\xfe"), *FAST, cwd=tmp_path)
    assert_one_line(proc, "run\\xfe", "not a UTF-8 path")


# --- refused before the set-up -----------------------------------------------------------------------------

@pytest.mark.integration
def test_out_root_with_pii_on_is_refused_in_one_line(tmp_path, data):
    proc = cli("run", str(data), "--out", "/", "--no-lengths", "--no-estimate", cwd=tmp_path)
    assert_one_line(proc, "/: --out holds an input")  # it used to be an internal error (ValueError)


def test_a_busy_run_directory_is_refused_before_the_tokenizer_and_pii_load(tmp_path, data, monkeypatch):
    from pipeline.runner import preflight

    cfg = fast_config(tmp_path, [data])
    cfg.pii.enabled = cfg.lengths.enabled = True
    run_prepare(fast_config(tmp_path, [data]), progress=False, log=lambda m: None)

    def slow(*args, **kwargs):
        raise AssertionError("the slow set-up ran before the lock check")

    for name in ("check_model", "check_tokenizer", "unsupported_files"):
        monkeypatch.setattr(preflight, name, slow)
    with RunDir(cfg.out), pytest.raises(PrepareError, match="another prepare run"):
        preflight.preflight(cfg, log=lambda m: None)


@pytest.mark.integration
def test_a_prepare_cache_that_is_a_file_is_refused_first(tmp_path, data):
    (tmp_path / "cache").write_text("")
    proc = cli("run", str(data), "--out", "run", "--no-pii", "--no-estimate", cwd=tmp_path,
               env={"PREPARE_CACHE": str(tmp_path / "cache" / "sub")})
    assert_one_line(proc, "PREPARE_CACHE", "is not a folder")
    assert not (tmp_path / "run").exists()


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_config_that_is_not_a_regular_file_is_refused_not_read(tmp_path, data, kind):
    config = "/dev/zero" if kind == "device" else str(tmp_path / "c.json")
    if kind == "fifo":
        os.mkfifo(config)
    proc = cli("run", str(data), "--out", "run", "--config", config, *FAST, cwd=tmp_path, timeout=60)
    assert_one_line(proc, config, "not a regular file")


# --- S3 ---------------------------------------------------------------------------------------------------

@pytest.mark.integration
def test_a_password_in_the_endpoint_url_is_not_printed(tmp_path, data):
    env = {"AWS_ENDPOINT_URL": f"http://admin:pw-s3cr3t-42@127.0.0.1:{closed_port()}",
           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
           "PREPARE_S3_ATTEMPTS": "1", "PREPARE_S3_CONNECT_TIMEOUT": "2"}
    proc = cli("run", str(data), "--out", "run", "--s3", "s3://bucket/x", *FAST, cwd=tmp_path, env=env)
    line = assert_one_line(proc, "cannot reach the S3 endpoint", "127.0.0.1")
    assert "pw-s3cr3t-42" not in proc.stderr + proc.stdout and "***@127.0.0.1" in line


@pytest.mark.integration
@pytest.mark.parametrize("uri", ["s3://data/../../x", "s3://data/a/./b", "s3://data//x", "s3://data/a//b"])
def test_dot_and_empty_segments_in_the_s3_prefix_are_refused(tmp_path, data, uri):
    proc = cli("run", str(data), "--out", "run", "--s3", uri, "--no-s3-check", *FAST, cwd=tmp_path)
    assert_one_line(proc, "path segment")
    assert not (tmp_path / "run").exists()


@pytest.mark.integration
def test_two_run_directories_do_not_replace_each_others_upload(tmp_path, data, bucket):
    dest = f"s3://{bucket}/shared"
    # the runs that succeed in this process; the refused one, a one-line error, from a CLI process of its own
    first = prepare_in_process("run", str(data), "--out", "one", "--s3", dest, *FAST, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    other = write_alpaca(tmp_path / "in2" / "b.jsonl", seed=3)
    second = cli("run", str(other), "--out", "two", "--s3", dest, *FAST, cwd=tmp_path)
    assert_one_line(second, f"{dest}/manifest.json", "another run directory", "--s3-overwrite")
    assert not (tmp_path / "two").exists()  # refused before the run
    again = prepare_in_process("run", str(data), "--out", "one", "--s3", dest, *FAST, cwd=tmp_path)  # the same, again
    assert again.returncode == 0, again.stderr[-3000:]
    replaced = prepare_in_process("run", str(other), "--out", "two", "--s3", dest, "--s3-overwrite", *FAST,
                                  cwd=tmp_path)
    assert replaced.returncode == 0, replaced.stderr[-3000:]


def test_the_upload_itself_refuses_a_prefix_of_another_run_directory(tmp_path, data, bucket):
    """The check before the upload too (--no-s3-check skips the one before the run)."""
    from pipeline.core.s3 import S3Error, upload_run

    one = run_prepare(fast_config(tmp_path, [data]), progress=False, log=lambda m: None).run_dir
    upload_run(one, f"s3://{bucket}/p", [])
    cfg = fast_config(tmp_path, [write_alpaca(tmp_path / "in2" / "b.jsonl", seed=3)])
    cfg.out = str(tmp_path / "two")
    two = run_prepare(cfg, progress=False, log=lambda m: None).run_dir
    with pytest.raises(S3Error, match="another run directory"):
        upload_run(two, f"s3://{bucket}/p", [])
    upload_run(two, f"s3://{bucket}/p", [], overwrite=True)


# --- inputs and report.md ------------------------------------------------------------------------------------

def test_an_input_named_three_times_is_read_once(tmp_path, data, monkeypatch):
    monkeypatch.chdir(tmp_path)
    said = []
    result = run_prepare(fast_config(tmp_path, [data, data.parent, "in/./a.jsonl"]), progress=False,
                         log=said.append)
    assert result.report["counts"]["input"] == 3
    assert any("2 input file(s) named more than once are read once" in line for line in said), said


def test_a_javascript_link_in_a_file_name_is_not_a_link_in_report_md(tmp_path, data):
    from markdown_it import MarkdownIt

    hostile = data.parent / "[click](javascript:alert(1)) ![i](javascript:x) `code`.jsonl"
    hostile.write_text(data.read_text().replace("Tell me", "Explain"))
    result = run_prepare(fast_config(tmp_path, [data.parent]), progress=False, log=lambda m: None)
    md = MarkdownIt("commonmark").enable("table")
    md.validateLink = lambda url: True  # a viewer that does not check link targets itself
    rendered = md.render((result.run_dir / "report.md").read_text())
    assert "javascript" in rendered and "<a " not in rendered and "<img" not in rendered
    assert "<code>" not in rendered
