"""The end-of-run summary (terminal, the Prefect flow's log, report.md) names each input file the run did
something to besides reading it whole: skipped, truncated, re-encoded, with the reader's warnings; long lists
are capped. Counts are formatted one way in every view."""
import gzip
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

FAST = ("--no-pii", "--no-lengths", "--no-estimate", "--no-dedup")


def _alpaca_lines(n: int, seed: str = "") -> str:
    return "".join(json.dumps({"instruction": f"Question {seed}{i}: when does parcel {i * 7919} arrive?",
                               "output": f"Parcel {i * 7919} arrives within two working days."}) + "\n"
                   for i in range(n))


def _inputs(root):
    """One input of each kind of thing a run does to a file: a cut .gz, a Turkish text in Windows-1254,
    a DPO file (skipped under --skip-unreadable), an unsupported file, and a plain one it reads whole."""
    d = root / "in"
    d.mkdir()
    (d / "plain.jsonl").write_text(_alpaca_lines(5, "p"))
    whole = gzip.compress(_alpaca_lines(3000, "gz").encode())
    (d / "cut.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    (d / "turkish.txt").write_bytes(("Şifre değiştirme ekranı açılmıyor, müşteri hizmetleri yardım eder mi?\n\n"
                                     "Sipariş iptal edildi ama ödeme iadesi hâlâ gelmedi, ne yapmalıyım?\n"
                                     ).encode("cp1254"))
    (d / "pairs.jsonl").write_text("".join(json.dumps({"prompt": f"question {i}", "chosen": f"good answer {i}",
                                                       "rejected": f"bad answer {i}"}) + "\n" for i in range(5)))
    (d / "notes.docx").write_bytes(b"PK\x03\x04 not a dataset")
    return d


def _run(*args, cwd):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", "run", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.integration
def test_the_terminal_summary_names_each_file_the_run_skipped_cut_or_re_encoded(tmp_path):
    d = _inputs(tmp_path)
    proc = _run(str(d), "--out", str(tmp_path / "run"), "--skip-unreadable", *FAST, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()

    def line_of(name):
        found = [line for line in lines if name in line]
        assert len(found) == 1, (name, proc.stdout)   # one line per file
        return found[0]

    assert "truncated" in line_of("cut.jsonl.gz")
    assert "re-encoded from " in line_of("turkish.txt")
    assert "skipped" in line_of("pairs.jsonl") and "formats.preference" in line_of("pairs.jsonl")
    assert "skipped" in line_of("notes.docx") and "unsupported" in line_of("notes.docx")
    assert not any("plain.jsonl" in line for line in lines)   # read whole: nothing to say
    assert "Şifre" not in proc.stdout and "Parcel" not in proc.stdout   # names and notes, never content
    # report.md says the same, from the same function
    md = (tmp_path / "run" / "report.md").read_text()
    for name in ("cut.jsonl.gz", "turkish.txt", "pairs.jsonl", "notes.docx"):
        assert name in md.split("## What the run did to input files", 1)[1].split("\n## ", 1)[0]


def _report(skipped: int = 0, files: dict | None = None) -> dict:
    entry = {"input": 1, "kept": 1, "rows": 1, "quarantined": 0, "quarantined_by_reason": {}, "dropped": {},
             "format": "alpaca", "encoding": "utf-8", "split_source": "input", "shards": 1, "warnings": [],
             "unread_after_cap": False, "truncated": False}
    return {"counts": {"input": 683078, "kept": 635525, "rows": 635525, "quarantined": 47553,
                       "quarantined_by_reason": {"invalid_json": 47553}, "dropped": {},
                       "splits": {"train": 620000, "validation": 15525}},
            "files": {name: {**entry, **over} for name, over in (files or {}).items()},
            "unreadable_inputs": [{"file": f"skip-{i:02d}.docx", "reason": "unsupported file type (skipped)"}
                                  for i in range(skipped)],
            "stages": {}}


def test_a_long_list_of_notes_is_capped_and_points_at_report_json():
    from pipeline.cli.run import summary_text
    from pipeline.report.build import NOTES_SHOWN

    text = summary_text(_report(skipped=NOTES_SHOWN + 15), None, "runs/x")
    named = [line for line in text.splitlines() if "skip-" in line]
    assert len(named) == NOTES_SHOWN
    assert "and 15 more, see report.json" in text


def test_each_kind_of_file_note_is_one_line_and_reader_warnings_are_not_repeated():
    from pipeline.report.build import file_notes

    report = _report(files={
        "cut.jsonl.gz": {"truncated": True, "warnings": ["the gz stream ends early (truncated or corrupt); the rows "
                                                         "before the cut were read"]},
        "tr.txt": {"encoding": "cp1254", "warnings": ["not UTF-8; decoded as cp1254 (detected)"]},
        "big.jsonl.zst": {"unread_after_cap": True},
        "bom.csv": {"encoding": "utf-8-sig"},
        "dup.csv": {"warnings": ["2 column(s) with a name already used in the file kept, renamed with a .1, .2, "
                                 "... suffix"]},
        "fine.jsonl": {}})
    notes = dict(file_notes(report))
    assert notes["cut.jsonl.gz"].startswith("truncated") and "corrupt" not in notes["cut.jsonl.gz"]
    assert notes["tr.txt"] == "re-encoded from cp1254"
    assert "max_decompressed_bytes" in notes["big.jsonl.zst"]
    assert "renamed" in notes["dup.csv"]                 # a warning with no field of its own is said as it is
    assert "bom.csv" not in notes and "fine.jsonl" not in notes   # UTF-8 with a BOM is not a re-encoding


def test_a_control_character_in_a_file_name_does_not_reach_the_terminal():
    from pipeline.cli.run import summary_text

    report = _report()
    report["unreadable_inputs"] = [{"file": "a\x1b[2Jb.docx", "reason": "unsupported file type (skipped)"}]
    text = summary_text(report, None, "runs/x")
    assert "\x1b" not in text and "a\\x1b[2Jb.docx" in text


def test_counts_are_formatted_one_way_in_the_terminal_report_md_and_report_html():
    from pipeline.cli.run import summary_text
    from pipeline.report.build import render_markdown
    from pipeline.report.html import render_html

    report = _report()
    report["stages"] = {"read": {"seconds": 1.0, "records_in": 683078, "records_out": 635525, "dropped": {},
                                 "quarantined": {"invalid_json": 47553}, "counters": {}}}
    for view in (summary_text(report, None, "runs/x"), render_markdown(report), render_html(report)):
        assert "683,078" in view and "635,525" in view
        assert "683078" not in view and "635525" not in view


@pytest.mark.integration
def test_the_prefect_flow_logs_the_same_file_notes(prefect_api, tmp_path):
    from conftest import fast_config
    from test_flow import read_flow_run_logs

    from flows.prepare import prepare
    from pipeline.report.build import render_notes_text

    d = tmp_path / "in"
    d.mkdir()
    (d / "plain.jsonl").write_text(_alpaca_lines(5))
    (d / "notes.docx").write_bytes(b"PK\x03\x04 not a dataset")
    state = prepare(fast_config(tmp_path, [d]), return_state=True)
    out = state.result()
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    expected = "\n".join(render_notes_text(report))
    assert "notes.docx: skipped" in expected and out["run_dir"]
    messages = [log.message for log in read_flow_run_logs(state.state_details.flow_run_id)]
    assert expected in messages, messages


def _report_with_lengths_and_plan() -> dict:
    """A report whose lengths and plan sections come from the real summarizers: a long tail of records, so
    that some shares are under 10%, and a job short enough to be counted in minutes."""
    import numpy as np

    from pipeline.core.config import LengthsConfig
    from pipeline.data.lengths.summary import summarize_lengths
    from pipeline.plan.gpus import plan_training

    tokens = np.array([300] * 970 + [2000] * 25 + [9000] * 5)
    lengths = summarize_lengths({"all": (tokens, tokens // 2)}, LengthsConfig(grid=1024))
    plan = plan_training("Llama-3.1-8B", "qlora", seq_len=lengths["max_seq_len"], tokens_per_epoch=1_200_000,
                         sequences_per_epoch=1_000)
    return {**_report(), "lengths": lengths, "plan": plan}


def test_report_md_and_report_html_show_the_same_figures_the_same_way():
    """report.md printed 1.77% and 2 min where report.html printed 1.8% and 0.04 h, max length 4096 beside
    4,096, and GiB to the hundredth beside the thousandth: pipeline/core/numfmt.py formats them for both."""
    import html
    import re

    from pipeline.core import numfmt
    from pipeline.report.build import render_markdown
    from pipeline.report.html import render_html

    report = _report_with_lengths_and_plan()
    md = render_markdown(report)
    page = html.unescape(re.sub(r"<[^>]+>", " ", render_html(report)))
    over = next(r for r in report["lengths"]["tradeoff"] if 0 < r["tokens_lost_share"] < 0.1)
    rec = report["plan"]["recommendation"]
    figures = [numfmt.percent(over["tokens_lost_share"]), numfmt.percent(report["lengths"]["packing"]["padding_ratio"]),
               numfmt.number(report["plan"]["max_seq_len"]), numfmt.hours(rec["hours"]), numfmt.cost(rec["cost_usd"]),
               numfmt.gib(report["plan"]["memory"]["components"]["weights"])]
    assert "," in figures[2] and "." in figures[0].rstrip("%")  # 4,096 and a share with decimals: a real check
    for figure in figures:
        assert figure in md and figure in page, figure
    # and not the other way either
    assert f"{rec['hours']:.2f} h" not in page and f"max length {report['plan']['max_seq_len']}," not in md


def test_precheck_text_report_md_and_report_html_give_the_time_range_and_the_assumed_stack():
    """Issue 33: the plan says how sure it is: the recommended card's likely time and cost range (the time
    model's held-out spread) and the stack and kernels the times assume, in every view."""
    import html
    import re

    from pipeline.plan.gpus import likely_range, render_plan_text, time_model_line
    from pipeline.report.build import render_markdown
    from pipeline.report.html import render_html

    report = _report_with_lengths_and_plan()
    plan = report["plan"]
    low, high = plan["recommendation"]["hours_range"]
    assert low < plan["recommendation"]["hours"] < high
    spread, stack = likely_range(plan["recommendation"]), time_model_line(plan)
    assert spread.startswith("likely ") and plan["time_model"]["stack"]["framework"] in stack
    page = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", render_html(report))))
    for view in (render_plan_text(plan), render_markdown(report), page):
        assert spread in view and stack in view
