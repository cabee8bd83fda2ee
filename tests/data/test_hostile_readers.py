"""Hostile inputs for the readers and the shard plan, end to end: a folder of many one-line files, a Turkish file
in cp1254 (the guess said on the terminal, or the encoding forced), an Excel CSV."""
import json

import pyarrow.parquet as pq
import pytest
from conftest import fast_config

from pipeline.runner import plan_shards, run_prepare

TURKISH = ["Şifre değiştir lütfen, hesabıma giremiyorum", "Değişim yapabilir miyim, ürün hasarlı geldi?"]


def many_files(folder, n: int):
    folder.mkdir()
    for i in range(n):
        (folder / f"ticket{i:04d}.txt").write_text(f"Support ticket number {i}: the parcel {i * 7} did not arrive\n")
    return folder


def shards_of(run_dir) -> list[tuple[str, str]]:
    return [(s["path"], s["sha256"]) for s in json.loads((run_dir / "manifest.json").read_text())["shards"]]


def test_small_files_are_read_as_few_shards(tmp_path):
    """Each one-line file was a shard of its own: 200,000 files read at ~100 files/s."""
    folder = many_files(tmp_path / "in", 250)
    tasks, _ = plan_shards(fast_config(tmp_path, [folder]))
    assert [len(t.files) for t in tasks] == [250]
    cfg = fast_config(tmp_path, [folder], read={"files_per_shard": 100})
    tasks, _ = plan_shards(cfg)
    assert [len(t.files) for t in tasks] == [100, 100, 50]
    assert [f.name for t in tasks for f in t.files] == [f"in/ticket{i:04d}.txt" for i in range(250)]
    cfg = fast_config(tmp_path, [folder], read={"shard_bytes": 1024})  # about 1 KiB of files a shard
    assert all(sum((tmp_path / f.name).stat().st_size for f in t.files) <= 1024 for t in plan_shards(cfg)[0])


def test_grouped_files_keep_their_sources_report_and_output(tmp_path):
    """Records of a shard of many files keep their own file and line; the report still accounts per file;
    the shards are byte for byte those of one file per shard, and the same on a rerun."""
    folder = many_files(tmp_path / "in", 60)
    (folder / "ticket0003.txt").write_text("Support ticket number 3: the parcel 21 did not arrive\n\nok\n")
    (folder / "ticket0010.txt").write_text((folder / "ticket0011.txt").read_text())  # an exact duplicate
    grouped = run_prepare(fast_config(tmp_path / "g", [folder], read={"files_per_shard": 25}), progress=False,
                          log=lambda m: None)
    alone = run_prepare(fast_config(tmp_path / "a", [folder], read={"files_per_shard": 1}), progress=False,
                        log=lambda m: None)
    again = run_prepare(fast_config(tmp_path / "g", [folder], read={"files_per_shard": 25}), progress=False,
                        log=lambda m: None)
    assert shards_of(grouped.run_dir) == shards_of(alone.run_dir) == shards_of(again.run_dir)
    assert grouped.report["files"] == alone.report["files"]
    assert grouped.report["counts"] == alone.report["counts"]
    files = grouped.report["files"]
    assert len(files) == 60 and files["in/ticket0003.txt"]["input"] == 3
    assert files["in/ticket0003.txt"]["dropped"] == {"empty_line": 1, "too_short": 1}
    assert files["in/ticket0010.txt"]["kept"] + files["in/ticket0011.txt"]["kept"] == 1
    rows = [r for path, _ in shards_of(grouped.run_dir) for r in pq.read_table(grouped.run_dir / path).to_pylist()]
    sources = {(r["source"]["file"], r["source"]["line"]) for r in rows}
    assert ("in/ticket0059.txt", 1) in sources and ("in/ticket0003.txt", 1) in sources
    assert len(sources) == len(rows) == grouped.report["counts"]["kept"]


def test_an_unreadable_file_in_a_group_is_reported_and_the_rest_read(tmp_path):
    import gzip

    folder = many_files(tmp_path / "in", 5)
    (folder / "ticket0002.jsonl.gz").write_bytes(b"not gzip at all")
    (folder / "ticket0004.jsonl.gz").write_bytes(gzip.compress(b'{"text": "a compressed ticket about a refund"}\n'))
    cfg = fast_config(tmp_path, [folder], read={"skip_unreadable": True})
    assert len(plan_shards(cfg)[0]) == 1
    report = run_prepare(cfg, progress=False, log=lambda m: None).report
    assert [u["file"].rsplit("/", 1)[1] for u in report["unreadable_inputs"]] == ["ticket0002.jsonl.gz"]
    assert report["counts"]["input"] == 6 and len(report["files"]) == 6


def test_a_guessed_encoding_is_said_on_the_terminal_and_in_the_report(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "chat.txt").write_bytes(("\n".join(TURKISH) + "\n").encode("cp1254"))
    (folder / "plain.txt").write_text("An ordinary line in UTF-8 about an order\n")
    seen: list[str] = []
    result = run_prepare(fast_config(tmp_path, [folder]), progress=False, log=seen.append)
    notes = [line for line in seen if "not UTF-8" in line]
    assert notes == ["prepare: in/chat.txt: not UTF-8, read as cp1254 (guessed; --encoding or read.encoding sets it)"]
    entry = result.report["files"]["in/chat.txt"]
    assert entry["encoding"] == "cp1254" and entry["warnings"] == ["not UTF-8; decoded as cp1254 (detected)"]
    rows = [r for path, _ in shards_of(result.run_dir) for r in pq.read_table(result.run_dir / path).to_pylist()]
    assert sorted(r["text"] for r in rows if r["source"]["file"] == "in/chat.txt") == sorted(TURKISH)


@pytest.mark.integration  # the CLI in a subprocess
def test_encoding_flag_forces_the_encoding_and_a_bad_one_is_one_line(tmp_path):
    import subprocess
    import sys

    from conftest import ROOT

    (tmp_path / "is.txt").write_bytes("Þórður býr á Íslandi og vinnur í verslun\n".encode("iso8859_10"))
    base = [sys.executable, "-m", "pipeline.cli", "run", "is.txt", "--no-pii", "--no-lengths", "--no-estimate",
            "--workers", "1", "--json"]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    bad = subprocess.run([*base, "--out", "bad", "--encoding", "klingon"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "read.encoding" in bad.stderr
    assert "klingon" in bad.stderr and "Traceback" not in bad.stderr
    good = subprocess.run([*base, "--out", "good", "--encoding", "iso8859-10"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert good.returncode == 0, good.stderr[-2000:]
    assert "not UTF-8" not in good.stderr  # given, not guessed
    assert json.loads(good.stdout)["files"]["is.txt"]["encoding"] == "iso8859-10"
    rows = [r for path, _ in shards_of(tmp_path / "good") for r in pq.read_table(tmp_path / "good" / path).to_pylist()]
    assert [r["text"] for r in rows] == ["Þórður býr á Íslandi og vinnur í verslun"]


def test_an_excel_csv_with_semicolons_is_read_in_a_run(tmp_path):
    """Every row of an Excel export (; separators, a BOM) was bad_csv_row or one unknown-format column."""
    p = tmp_path / "export.csv"
    p.write_bytes(b"\xef\xbb\xbf" + "soru;cevap\r\nKargom nerede?;Yarın teslim edilecek, 2,5 gün sürer\r\n"
                  "Fiyat ne kadar?;149,90 TL, kargo dahil\r\n".encode("utf-8"))
    report = run_prepare(fast_config(tmp_path, [p], formats={"mapping": {"prompt": "soru", "response": "cevap"}}),
                         progress=False, log=lambda m: None).report
    assert report["counts"]["input"] == 2 and report["counts"]["kept"] == 2, report["counts"]
