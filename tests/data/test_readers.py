import csv
import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from pipeline.core.config import ReadConfig
from pipeline.data.readers import FileReader, UnreadableInput, describe, detect_encoding, expand_inputs


def rows(path, **cfg):
    reader = FileReader(describe(str(path)), ReadConfig(**cfg))
    out = [r for batch in reader.batches() for r in batch]
    return out, reader


def test_jsonl_lines_are_numbered_and_bad_lines_flagged(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"text": "one"}\nnot json\n\n{"text": "four"}\n[1, 2]\n', encoding="utf-8")
    out, _ = rows(p)
    assert [(r.line, r.error) for r in out] == [(1, None), (2, "invalid_json"), (3, "empty_line"), (4, None),
                                               (5, "not_an_object")]
    assert out[3].value == {"text": "four"}


def test_json_array_and_object_of_arrays(tmp_path):
    a = tmp_path / "a.json"
    a.write_text(json.dumps([{"text": "x"}, {"text": "y"}]))
    out, _ = rows(a)
    assert [(r.line, r.value["text"]) for r in out] == [(1, "x"), (2, "y")]
    b = tmp_path / "b.json"
    b.write_text(json.dumps({"train": [{"text": "x"}], "test": [{"text": "y"}, {"text": "z"}]}))
    out, _ = rows(b)
    assert [(r.line, r.value["text"]) for r in out] == [(1, "x"), (2, "y"), (3, "z")]


def test_truncated_json_array_counts_the_unreadable_tail(tmp_path):
    p = tmp_path / "a.json"
    p.write_text('[{"text": "x"}, {"text": "y"}, {"text": ')
    out, reader = rows(p)
    assert [r.error for r in out] == [None, None, "invalid_json_tail"]
    assert reader.warnings


def test_csv_tsv_and_parquet(tmp_path):
    c = tmp_path / "a.csv"
    with open(c, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["question", "answer"])
        w.writerow(["Q1, with comma", "A1\nmultiline"])
        w.writerow(["only one cell"])
    out, _ = rows(c)
    assert out[0].value == {"question": "Q1, with comma", "answer": "A1\nmultiline"}
    assert (out[1].line, out[1].error) == (2, "bad_csv_row")
    t = tmp_path / "a.tsv"
    t.write_text("text\tlang\nhello\ten\n")
    assert rows(t)[0][0].value == {"text": "hello", "lang": "en"}
    p = tmp_path / "a.parquet"
    pq.write_table(pa.table({"text": ["a", "b", "c"]}), p)
    out, _ = rows(p, batch_size=2)
    assert [(r.line, r.value["text"]) for r in out] == [(1, "a"), (2, "b"), (3, "c")]


def test_txt_line_and_block_modes(tmp_path):
    p = tmp_path / "a.txt"
    p.write_text("first doc\nsecond doc\n\nthird doc line 1\nthird doc line 2\n")
    out, _ = rows(p)
    assert [r.value for r in out if r.value] == ["first doc", "second doc", "third doc line 1", "third doc line 2"]
    assert [r.error for r in out].count("empty_line") == 1
    out, _ = rows(p, txt_mode="block")
    assert [(r.line, r.value) for r in out] == [(1, "first doc\nsecond doc"), (4, "third doc line 1\nthird doc line 2")]


def test_gzip_and_zstd(tmp_path):
    data = b'{"text": "compressed"}\n' * 3
    g = tmp_path / "a.jsonl.gz"
    g.write_bytes(gzip.compress(data))
    z = tmp_path / "a.jsonl.zst"
    z.write_bytes(zstandard.ZstdCompressor().compress(data))
    for path in (g, z):
        out, _ = rows(path)
        assert [r.value for r in out] == [{"text": "compressed"}] * 3


def test_invalid_archive_and_parquet_are_unreadable(tmp_path):
    g = tmp_path / "bad.jsonl.gz"
    g.write_bytes(b"this is not gzip")
    with pytest.raises(UnreadableInput, match="bad.jsonl.gz"):
        rows(g)
    p = tmp_path / "bad.parquet"
    p.write_bytes(b"PAR1 nope")
    with pytest.raises(UnreadableInput, match="not a valid Parquet"):
        rows(p)
    with pytest.raises(UnreadableInput, match="unknown format"):
        describe(str(tmp_path / "x.docx"))


def test_decompressed_size_cap_marks_the_rest_unread(tmp_path):
    g = tmp_path / "big.jsonl.gz"
    g.write_bytes(gzip.compress(b'{"text": "0123456789"}\n' * 10_000))
    out, reader = rows(g, max_decompressed_bytes=2300)
    assert reader.unread
    assert 90 <= len(out) <= 101


def test_overlong_line_is_counted_not_loaded(tmp_path):
    p = tmp_path / "a.jsonl"
    p.write_text('{"text": "ok"}\n{"text": "' + "x" * 5000 + '"}\n{"text": "after"}\n')
    out, _ = rows(p, max_record_bytes=1024)
    assert [(r.line, r.error) for r in out] == [(1, None), (2, "too_large"), (3, None)]


def test_encodings_bom_and_cp1251(tmp_path):
    p = tmp_path / "bom.jsonl"
    p.write_bytes(b"\xef\xbb\xbf" + '{"text": "çay"}\n'.encode())
    assert rows(p)[0][0].value == {"text": "çay"}
    russian = "Клиент просит перезвонить после обеда по поводу возврата товара и бонусов.\n" * 3
    q = tmp_path / "ru.txt"
    q.write_bytes(russian.encode("cp1251"))
    out, reader = rows(q)
    assert reader.encoding == "cp1251" and reader.warnings
    assert out[0].value.startswith("Клиент просит")
    assert detect_encoding("ğüşöç".encode("utf-8")) == "utf-8"


def test_expand_folders_globs_and_missing(tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "d" / "a.jsonl").write_text("{}\n")
    (tmp_path / "d" / "sub" / "b.txt").write_text("x\n")
    (tmp_path / "d" / "notes.docx").write_text("ignored: not a data file")
    names = [f.name for f in expand_inputs([str(tmp_path / "d")])]
    assert names == ["d/a.jsonl", "d/sub/b.txt"]
    assert len(expand_inputs([str(tmp_path / "d" / "**" / "*.txt")])) == 1
    with pytest.raises(UnreadableInput):
        expand_inputs([str(tmp_path / "missing.jsonl")])


def test_s3_inputs_are_listed_and_streamed(bucket):
    import boto3

    s3 = boto3.client("s3")
    s3.put_object(Bucket=bucket, Key="in/a.jsonl", Body=b'{"text": "from s3"}\n')
    s3.put_object(Bucket=bucket, Key="in/b.jsonl.gz", Body=gzip.compress(b'{"text": "gz on s3"}\n'))
    files = expand_inputs([f"s3://{bucket}/in/"])
    assert [f.uri for f in files] == [f"s3://{bucket}/in/a.jsonl", f"s3://{bucket}/in/b.jsonl.gz"]
    values = [r.value["text"] for f in files for b in FileReader(f, ReadConfig()).batches() for r in b]
    assert values == ["from s3", "gz on s3"]


# --- issue 20: reading never blocks, loops, escapes its root or loses rows silently ----------------

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, fast_config, prepare_in_process

from pipeline.core.config import PrepareConfig
from pipeline.data.readers import names_file, parquet_batch_rows, too_deep


def problems(files):
    return {f.name: f.problem for f in files if f.problem}


def test_fifo_is_refused_not_opened(tmp_path):
    """A FIFO blocked the run forever on open(): it is found, refused with a reason and never opened."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.jsonl").write_text('{"text": "a perfectly ordinary document"}\n')
    os.mkfifo(d / "pipe.jsonl")
    files = expand_inputs([str(d)])
    assert [f.name for f in files] == ["d/a.jsonl", "d/pipe.jsonl"]
    assert problems(files) == {"d/pipe.jsonl": "not a regular file (FIFO)"}
    with pytest.raises(UnreadableInput, match="pipe.jsonl: not a regular file"):
        FileReader(files[1], ReadConfig())
    (direct,) = expand_inputs([str(d / "pipe.jsonl")])  # named on its own, too
    assert direct.problem == "not a regular file (FIFO)"


def test_symlink_loops_end_and_are_not_followed(tmp_path):
    """`**` over a folder with links to its parents never ended (glob follows them); a folder walk
    enters each real folder once."""
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "a.jsonl").write_text("{}\n")
    for i in range(3):
        os.symlink("..", d / "sub" / f"up{i}")
        os.symlink(".", d / f"here{i}")
    for item in (str(d), str(d / "**" / "*.jsonl"), str(d / "**")):
        files = expand_inputs([item])
        assert [os.path.realpath(f.uri) for f in files] == [str((d / "sub" / "a.jsonl").resolve())], item
        assert not problems(files)


def test_symlink_out_of_the_input_folder_is_skipped_and_reported(tmp_path):
    outside = tmp_path / "secret.jsonl"
    outside.write_text('{"text": "a file the user did not give as input"}\n')
    d = tmp_path / "d"
    (d / "inner").mkdir(parents=True)
    (d / "inner" / "ok.jsonl").write_text('{"text": "a perfectly ordinary document"}\n')
    os.symlink(outside, d / "passwd.jsonl")
    os.symlink(d / "inner" / "ok.jsonl", d / "inside.jsonl")  # inside the root: followed
    os.symlink(tmp_path, d / "up")  # a folder outside: not entered
    for item in (str(d), str(d / "*.jsonl"), str(d / "**" / "*.jsonl")):
        found = {f.name.split("/")[-1]: f.problem for f in expand_inputs([item])}
        assert found["passwd.jsonl"].startswith("symlink to outside the input folder"), item
        assert found["inside.jsonl"] is None and "secret.jsonl" not in found
    cfg = PrepareConfig()
    cfg.read.follow_symlinks = True
    cfg.pii.enabled = False
    found = {f.name: f.problem for f in expand_inputs([str(d)], cfg)}
    assert found["d/passwd.jsonl"] is None and found["d/up/secret.jsonl"] is None


def test_a_run_reports_refused_inputs_and_reads_the_rest(tmp_path, monkeypatch):
    from pipeline.runner import run_prepare

    monkeypatch.chdir(tmp_path)
    (tmp_path / "outside.jsonl").write_text('{"text": "not an input of this run at all"}\n')
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.jsonl").write_text('{"text": "a perfectly ordinary document"}\n')
    os.mkfifo(d / "pipe.jsonl")
    os.symlink(tmp_path / "outside.jsonl", d / "link.jsonl")
    with pytest.raises(UnreadableInput, match="link.jsonl: symlink to outside"):  # stops before any output
        run_prepare(fast_config(tmp_path, [d]), progress=False, log=lambda m: None)
    assert not (tmp_path / "run" / "manifest.json").exists()
    cfg = fast_config(tmp_path, [d])
    cfg.read.skip_unreadable = True
    report = run_prepare(cfg, progress=False, log=lambda m: None).report
    reasons = {os.path.basename(u["file"]): u["reason"] for u in report["unreadable_inputs"]}
    assert reasons["pipe.jsonl"] == "not a regular file (FIFO)"
    assert reasons["link.jsonl"].startswith("symlink to outside the input folder")
    assert report["counts"]["input"] == 1 and list(report["files"]) == ["in/a.jsonl"]


LIST_AS_NOBODY = """
import json, os, sys
from pipeline.data.readers import expand_inputs
if os.getuid() == 0:  # root lists every folder: list as an unprivileged user (imports done before)
    os.setgid(65534); os.setuid(65534)
print(json.dumps({f.name: f.problem for f in expand_inputs([sys.argv[1]])}))
"""


def test_unlistable_sub_folder_is_reported(tmp_path_factory):
    """A sub-folder that cannot be listed was skipped without a word (rglob swallows the error)."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="unlistable-"))
    try:
        os.chmod(d, 0o755)
        (d / "locked").mkdir()
        (d / "locked" / "hidden.jsonl").write_text("{}\n")
        (d / "a.jsonl").write_text("{}\n")
        os.chmod(d / "a.jsonl", 0o644)
        os.chmod(d / "locked", 0)
        proc = subprocess.run([sys.executable, "-c", LIST_AS_NOBODY, str(d)], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd="/")
        assert proc.returncode == 0, proc.stderr[-2000:]
        found = json.loads(proc.stdout)
        name = d.name
        assert found[f"{name}/a.jsonl"] is None
        assert found[f"{name}/locked"] == "cannot list this folder (Permission denied)"
    finally:
        os.chmod(d / "locked", 0o755)
        import shutil

        shutil.rmtree(d)


def _cut_archives(tmp_path) -> tuple:
    """in/: a .gz over 1 MB and a .zst, each cut in half, and the whole .zst (40,000 records)."""
    lines = b"".join(json.dumps({"text": f"record {i} " + os.urandom(24).hex()}).encode() + b"\n"
                     for i in range(40_000))
    d = tmp_path / "in"
    d.mkdir()
    gz, zst = gzip.compress(lines), zstandard.ZstdCompressor().compress(lines)
    assert len(gz) > 1 << 20
    (d / "cut.jsonl.gz").write_bytes(gz[: len(gz) // 2])
    (d / "cut.jsonl.zst").write_bytes(zst[: len(zst) // 2])
    (d / "whole.jsonl.zst").write_bytes(zst)
    return d, lines


def test_truncated_gzip_and_zstd_count_what_was_read_and_say_so(tmp_path):
    """A cut .zst was taken as complete (123,618 of 300,000 records, nothing said); a cut .gz over 1 MB
    failed the run (EOFError) and ignored skip_unreadable. Both: the rows before the cut are counted,
    the file is reported truncated."""
    d, lines = _cut_archives(tmp_path)
    for name in ("cut.jsonl.gz", "cut.jsonl.zst"):
        out, reader = rows(d / name)
        assert reader.truncated and reader.warnings
        assert 10_000 < len(out) < 30_000
        assert all(r.error is None for r in out[:-1])  # the last line may be cut mid-record
    out, reader = rows(d / "whole.jsonl.zst")
    assert len(out) == 40_000 and not reader.truncated
    # multi-frame .zst cut exactly between frames: complete frames only, nothing missing inside one
    two = zstandard.ZstdCompressor(write_checksum=True).compress(lines[:1000])
    (d / "frames.jsonl.zst").write_bytes(two + two[:-2])
    assert rows(d / "frames.jsonl.zst")[1].truncated
    (d / "frames.jsonl.zst").write_bytes(two + two)
    assert not rows(d / "frames.jsonl.zst")[1].truncated


@pytest.mark.slow  # a whole run over 80,000 records
def test_a_run_reports_the_cut_archives_truncated_and_counts_what_was_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    d, _ = _cut_archives(tmp_path)
    from pipeline.core.schemas import validate
    from pipeline.runner import run_prepare

    cfg = fast_config(tmp_path, [d])
    cfg.dedup.enabled = False
    report = run_prepare(cfg, progress=False, log=lambda m: None).report
    validate(report, "report")
    files = report["files"]
    assert files["in/cut.jsonl.gz"]["truncated"] and files["in/cut.jsonl.zst"]["truncated"]
    assert not files["in/whole.jsonl.zst"]["truncated"]
    assert files["in/whole.jsonl.zst"]["input"] == 40_000
    assert 10_000 < files["in/cut.jsonl.gz"]["input"] < 30_000


def test_unbalanced_csv_quote_loses_one_row_not_the_rest(tmp_path):
    p = tmp_path / "a.csv"
    body = [f"question {i},answer {i}\n" for i in range(1000)]
    p.write_text("question,answer\n" + '"opened and never closed,x\n' + "".join(body))
    out, _ = rows(p)
    assert [(r.line, r.error) for r in out[:2]] == [(1, "bad_csv_row"), (2, None)]
    assert len(out) == 1001 and [r.value["question"] for r in out[1:]] == [f"question {i}" for i in range(1000)]
    # a quote closed further down, the merged row with too many cells: the same
    q = tmp_path / "b.csv"
    q.write_text("question,answer\n" + '"opened,x\n' + "".join(body) + 'closed",y,z\n')
    out, _ = rows(q)
    assert out[0].error == "bad_csv_row" and sum(r.error is None for r in out) == 1000
    # a real multi-line cell stays one row
    r = tmp_path / "c.csv"
    r.write_text('question,answer\n"line one\nline two",x\nq,a\n')
    assert [r.value for r in rows(r)[0]] == [{"question": "line one\nline two", "answer": "x"},
                                             {"question": "q", "answer": "a"}]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-8-sig"])
@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv", "txt"])
def test_bom_files_are_read(tmp_path, encoding, fmt):
    """UTF-16 .jsonl with a BOM gave 0 records (lines split inside characters); UTF-8-BOM .json gave 0
    (ijson stopped at the BOM)."""
    texts = [f"Şükrü çok güzel bir gün geçirdi, Привет #{i}" for i in range(30)]
    body = {"jsonl": "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts),
            "json": json.dumps([{"text": t} for t in texts], ensure_ascii=False),
            "csv": "text\n" + "".join(f'"{t}"\n' for t in texts),
            "txt": "".join(t + "\n" for t in texts)}[fmt]
    p = tmp_path / f"a.{fmt}"
    p.write_bytes(body.encode(encoding))
    out, _ = rows(p)
    got = [r.value if fmt == "txt" else r.value["text"] for r in out]
    assert got == texts


def test_depth_limit_quarantines_deep_records_at_read(tmp_path):
    """JSON nested 520-990 deep in a field reached the PII walk and stopped the run with RecursionError.
    One limit (read.max_depth), checked when a row is read, for every format that can nest."""
    limit = ReadConfig().max_depth

    def nested(n):
        return "[" * (n - 1) + "]" * (n - 1)

    ok, deep = f'{{"text": "fine", "x": {nested(limit)}}}', f'{{"text": "too deep", "x": {nested(limit + 1)}}}'
    p = tmp_path / "a.jsonl"
    p.write_text("\n".join([ok, deep, '{"text": "x", "y": ' + nested(990) + "}", "[" * 100_000]) + "\n")
    assert [r.error for r in rows(p)[0]] == [None, "too_deep", "too_deep", "too_deep"]
    j = tmp_path / "a.json"
    j.write_text("[" + ",".join([ok, deep, ok]) + "]")
    assert [r.error for r in rows(j)[0]] == [None, "too_deep", None]
    q = tmp_path / "a.parquet"  # (Parquet readers refuse deep schemas themselves: a small limit here)
    value = "x"
    for _ in range(5):
        value = [value]
    pq.write_table(pa.table({"text": ["a", "b"], "deep": [value, value]}), q)
    assert [r.error for r in rows(q, max_depth=5)[0]] == ["too_deep", "too_deep"]
    assert [r.error for r in rows(q, max_depth=6)[0]] == [None, None]
    assert not too_deep({"a": [{"b": []}]}, 4) and too_deep({"a": [{"b": []}]}, 3)


def test_a_record_at_the_depth_limit_goes_through_every_step(tmp_path, monkeypatch):
    """The ceiling of read.max_depth is safe for the recursive steps after reading (PII's walk of meta,
    json.dumps): a record at the highest allowed limit runs through the whole path with PII on."""
    from pipeline.runner import run_prepare

    monkeypatch.chdir(tmp_path)
    limit = ReadConfig.model_fields["max_depth"].metadata[-1].le
    d = tmp_path / "in"
    d.mkdir()
    value = "Ahmet Yılmaz 27384619550"
    for _ in range(limit - 1):
        value = {"k": value}
    (d / "a.jsonl").write_text(json.dumps({"text": "a perfectly ordinary document", "extra": value}) + "\n"
                               + json.dumps({"text": "another perfectly ordinary document", "x": {"k": value}}) + "\n")
    cfg = fast_config(tmp_path, [d])
    cfg.pii.enabled = True
    cfg.read.max_depth = limit
    report = run_prepare(cfg, progress=False, log=lambda m: None).report
    assert report["counts"]["kept"] == 1 and report["counts"]["quarantined_by_reason"] == {"too_deep": 1}
    meta = pq.read_table(tmp_path / "run" / "train").column("meta").to_pylist()[0]
    assert "27384619550" not in meta


def test_batches_are_capped_by_bytes(tmp_path):
    p = tmp_path / "big.jsonl"
    p.write_text("".join(json.dumps({"text": "x" * 200_000}) + "\n" for _ in range(50)))
    reader = FileReader(describe(str(p)), ReadConfig(batch_bytes=1 << 20))
    sizes = [len(b) for b in reader.batches()]
    assert sum(sizes) == 50 and max(sizes) <= 11  # 1 MiB, give or take the 1 MiB read buffer
    q = tmp_path / "big.parquet"
    pq.write_table(pa.table({"text": ["y" * 200_000] * 50}), q, row_group_size=25)
    reader = FileReader(describe(str(q)), ReadConfig(batch_bytes=1 << 20))
    sizes = [len(b) for b in reader.batches()]
    assert sum(sizes) == 50 and max(sizes) <= 6
    assert parquet_batch_rows(pq.ParquetFile(q), ReadConfig(batch_bytes=1 << 20)) == 5
    assert parquet_batch_rows(pq.ParquetFile(q), ReadConfig(batch_size=40)) == 40  # under the byte cap


def test_s3_parquet_is_read_by_row_group(bucket):
    """A Parquet object on S3 was read whole into memory (247 MB -> 739 MB RSS): now by range requests,
    so the first batch fetches the footer and one row group, not the object."""
    import boto3

    table = pa.table({"text": [os.urandom(300).hex() for _ in range(20_000)]})
    local = f"/tmp/{bucket}.parquet"
    pq.write_table(table, local, row_group_size=1000, compression="none")
    size = os.path.getsize(local)
    boto3.client("s3").upload_file(local, bucket, "in/a.parquet")
    os.unlink(local)
    (f,) = expand_inputs([f"s3://{bucket}/in/"])
    reader = FileReader(f, ReadConfig(batch_size=1000))
    batches = reader.batches()
    assert len(next(batches)) == 1000
    assert reader._s3_source.fetched < size / 5
    assert sum(len(b) for b in batches) == 19_000
    assert reader._s3_source.fetched < size * 1.2  # each byte about once (footer and a sample twice)


# --- issue 20, point 3: file names are data --------------------------------------------------------

def test_file_names_holding_personal_data_are_labels_in_every_output(tmp_path, monkeypatch):
    from pipeline.runner import run_prepare

    monkeypatch.chdir(tmp_path)
    d = tmp_path / "in"
    d.mkdir()
    secret_name = "musteri_ahmet_yilmaz_27384619550.jsonl"
    lines = [json.dumps({"text": f"Ürün iadesi hakkında bilgi almak istiyorum, sipariş {i}."}, ensure_ascii=False)
             for i in range(5)] + ["not json"]
    (d / secret_name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    (d / "train.jsonl").write_text(json.dumps({"text": "a perfectly ordinary document"}) + "\n")
    cfg = fast_config(tmp_path, [d])
    cfg.pii.enabled = True
    result = run_prepare(cfg, progress=False, log=lambda m: None)
    run = tmp_path / "run"
    label = next(n for n in result.report["files"] if n != "in/train.jsonl")
    assert label.startswith("redacted-") and label.endswith(".jsonl") and len(label) == len("redacted-12345678.jsonl")
    for path in run.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".parquet":
                data = json.dumps(pq.read_table(path).to_pylist(), default=str).encode()
            for piece in ("ahmet", "yilmaz", "27384619550", "musteri"):
                assert piece.encode() not in data, (path, piece)
    sources = {r["source"]["file"] for r in pq.read_table(run / "train").to_pylist()} | \
              {r["source"]["file"] for r in pq.read_table(run / "validation").to_pylist()} if \
              (run / "validation").exists() else {r["source"]["file"] for r in pq.read_table(run / "train").to_pylist()}
    assert label in sources and "in/train.jsonl" in sources
    mapping = names_file(cfg.out)
    assert mapping.parent == run.parent and oct(mapping.stat().st_mode & 0o777) == "0o600"
    assert json.loads(mapping.read_text(encoding="utf-8"))["names"] == {label: f"in/{secret_name}"}
    assert str(mapping) not in {f.uri for f in expand_inputs([str(tmp_path)])}  # never read back as data
    # the same label again for the same run directory (a resumed run's shards and report agree)
    again = run_prepare(cfg, progress=False, log=lambda m: None).report
    assert label in again["files"]


PII_FILE = "John_Smith_12345678901.jsonl"
PII_PIECES = ("John", "Smith", "12345678901", "Ahmet", "27384619550")


@pytest.mark.slow  # a whole run through the CLI's main()
def test_a_file_named_on_the_command_line_is_a_label_in_every_output(tmp_path):
    """`prepare run path/John_Smith_12345678901.jsonl`: config.inputs (in manifest.json, uploaded) held the
    path as typed; an unsupported file's name in a folder reached stderr and report.json. Every output, the
    --json stdout and stderr hold labels; the real names are only in RUN.file-names.local."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / PII_FILE).write_text("".join(
        json.dumps({"text": f"an ordinary support note about order number {i}"}) + "\n" for i in range(3)))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.jsonl").write_text(json.dumps({"text": "another ordinary document"}) + "\n")
    (tmp_path / "sub" / "Ahmet_Yilmaz_27384619550.docx").write_text("not data")
    proc = prepare_in_process("run", f"in/{PII_FILE}", "sub", "--out", "run", "--no-lengths", "--no-estimate",
                              "--no-dedup", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    mapping = json.loads(names_file(str(tmp_path / "run")).read_text(encoding="utf-8"))["names"]
    item = next(lab for lab, name in mapping.items() if name == f"in/{PII_FILE}")  # the input as typed
    label = next(lab for lab, name in mapping.items() if name == PII_FILE)  # the file's name in the outputs
    docx = next(lab for lab, name in mapping.items() if name == "sub/Ahmet_Yilmaz_27384619550.docx")
    assert {item[-6:], label[-6:], docx[-5:]} == {".jsonl", ".docx"} and label.startswith("redacted-")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["inputs"] == [item, "sub"]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert label in report["files"] and {u["file"] for u in report["unreadable_inputs"]} == {docx}
    texts = [proc.stdout, proc.stderr]
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".parquet":
                data = json.dumps(pq.read_table(path).to_pylist(), default=str).encode()
            texts.append(data.decode("utf-8", "replace"))
    for text in texts:
        for piece in PII_PIECES:
            assert piece not in text, piece


def test_the_map_of_names_is_written_only_with_the_run_directory_locked(tmp_path, monkeypatch):
    """A run that stops before it holds the run directory (an unreadable input; a second run that lost the
    race for the lock) must not write RUN.file-names.local: the map belongs to the run holding the folder."""
    from pipeline import runner
    from pipeline.runner.rundir import PrepareError, RunDir

    monkeypatch.chdir(tmp_path)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "John_Smith_12345678901.jsonl.gz").write_bytes(b"not a gzip archive at all")
    cfg = fast_config(tmp_path, [tmp_path / "in"])
    cfg.pii.enabled = True
    with pytest.raises(UnreadableInput, match=r"^redacted-[0-9a-f]{8}\.jsonl\.gz: not a valid gzip archive"):
        runner.run_prepare(cfg, progress=False, log=lambda m: None)
    assert not names_file(cfg.out).exists()
    (tmp_path / "in" / "John_Smith_12345678901.jsonl.gz").write_bytes(gzip.compress(b'{"text": "fine words"}\n'))
    from pipeline.data.readers import NameMap

    NameMap._open.clear()  # a fresh process's view: nothing remembered from the refused run
    # the other run took the lock between this run's check of --out and its own lock
    import importlib

    monkeypatch.setattr(importlib.import_module("pipeline.runner.run"), "check_out", lambda out, inputs: None)
    with RunDir(cfg.out), pytest.raises(PrepareError, match="another prepare run"):
        runner.run_prepare(cfg, progress=False, log=lambda m: None)
    assert not names_file(cfg.out).exists()
    runner.run_prepare(cfg, progress=False, log=lambda m: None)
    assert list(json.loads(names_file(cfg.out).read_text())["names"].values()) == ["in/John_Smith_12345678901.jsonl.gz"]


def test_precheck_expands_inputs_with_the_config(tmp_path):
    """precheck read a symlink out of the input folder that run refuses, and showed real file names."""
    from pipeline.runner.precheck import sample_records

    (tmp_path / "outside.jsonl").write_text(json.dumps({"text": "a document outside the input folder"}) + "\n")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "ok.jsonl").write_text(json.dumps({"text": "a document inside the input folder"}) + "\n")
    os.symlink(tmp_path / "outside.jsonl", tmp_path / "in" / "link.jsonl")
    cfg = fast_config(tmp_path, [tmp_path / "in"])
    with pytest.raises(UnreadableInput, match="symlink to outside the input folder"):
        sample_records(cfg, 10)
    cfg.read.skip_unreadable = True  # as in `run`: listed, and the rest is read
    sample, seen, counts = sample_records(cfg, 10)
    assert seen == 1 and [u["file"].rsplit("/", 1)[-1] for u in counts["unreadable"]] == ["link.jsonl"]
    cfg.read.follow_symlinks = True
    sample, seen, _ = sample_records(cfg, 10)
    assert seen == 2


def test_follow_symlinks_flag(tmp_path, monkeypatch):
    """`prepare run --follow-symlinks` reads a link out of the input folder; without it the link is refused."""
    from pipeline.cli import build_parser, config_from_args

    monkeypatch.chdir(tmp_path)
    (tmp_path / "outside.jsonl").write_text('{"text": "a document outside the input folder"}\n')
    (tmp_path / "in").mkdir()
    os.symlink(tmp_path / "outside.jsonl", tmp_path / "in" / "link.jsonl")
    for flags, problem in (([], True), (["--follow-symlinks"], False)):
        cfg = config_from_args(build_parser().parse_args(["run", "in", "--out", "run", "--no-pii", *flags]))
        (f,) = expand_inputs(cfg.inputs, cfg)
        assert bool(f.problem) is problem and cfg.read.follow_symlinks is not problem


def test_which_file_names_hold_personal_data():
    from pipeline.data.readers import name_holds_pii

    cfg = PrepareConfig()
    for name in ("musteri_ahmet_yilmaz_27384619550.jsonl", "in/musteri_27384619550.jsonl", "ivan_petrov.csv",
                 "notes/john_smith_notes.txt", "ayse-kaya-siparisleri.jsonl", "ivan.petrov@example.com.csv",
                 "Иван_Петров.txt"):
        assert name_holds_pii(name, cfg), name
    for name in ("customer_data.jsonl", "quarantine/mine.jsonl", "train.jsonl", "support_chats_2024-05.jsonl",
                 "sample_data/alpaca_tr.json", "sharegpt_ru.jsonl.zst", "d/sub/b.txt"):
        assert not name_holds_pii(name, cfg), name


def test_a_missing_s3_parquet_object_says_so(bucket):
    from pipeline.data.readers import describe as describe_uri

    f = describe_uri(f"s3://{bucket}/in/gone.parquet", f"{bucket}/in/gone.parquet")
    with pytest.raises(UnreadableInput, match=r"gone.parquet: cannot read the object \(ClientError 40[34]\)"):
        FileReader(f, ReadConfig())


# --- issue 20, low: line ends, runs of empty lines, duplicate columns, NaN in meta -------------------

def _expected_lines(data: bytes) -> list[tuple[int, object]]:
    out = []
    for number, line in enumerate(data.splitlines(), 1):
        out.append((number, "empty_line" if not line.strip() else line.decode()))
    return out


def _flat(out) -> list[tuple[int, object]]:
    """RawRows with runs of empty lines spelled out line by line."""
    flat = []
    for r in out:
        if r.error == "empty_line":
            flat += [(r.line + i, "empty_line") for i in range(r.count)]
        else:
            flat.append((r.line, r.error or r.value))
    return flat


@pytest.mark.parametrize("block", [1, 2, 3, 7, 1 << 20])
def test_lone_cr_ends_a_line_in_jsonl_and_txt(tmp_path, monkeypatch, block):
    """Old Mac line ends (\\r only) made the whole file one record (invalid_json for a .jsonl). \\n, \\r\\n
    and \\r are line ends, also where a \\r\\n falls across two read blocks."""
    import pipeline.data.readers.text as readers_text

    monkeypatch.setattr(readers_text, "LINE_BLOCK", block)
    docs = [json.dumps({"text": f"record {i}"}) for i in range(6)]
    data = (docs[0] + "\r" + docs[1] + "\r\r" + docs[2] + "\r\n" + docs[3] + "\n\r\n\n" + docs[4] + "\r"
            + docs[5]).encode()
    p = tmp_path / "mac.jsonl"
    p.write_bytes(data)
    out, _ = rows(p)
    assert [(r.line, r.value) for r in out if not r.error] == [
        (1, {"text": "record 0"}), (2, {"text": "record 1"}), (4, {"text": "record 2"}), (5, {"text": "record 3"}),
        (8, {"text": "record 4"}), (9, {"text": "record 5"})]
    assert _flat(out) == [(n, v if v == "empty_line" else json.loads(v)) for n, v in _expected_lines(data)]
    t = tmp_path / "mac.txt"
    t.write_bytes(b"first line\rsecond line\r\rthird\r")
    out, _ = rows(t)
    assert _flat(out) == [(1, "first line"), (2, "second line"), (3, "empty_line"), (4, "third")]
    out, _ = rows(t, txt_mode="block")
    assert [(r.line, r.value) for r in out] == [(1, "first line\nsecond line"), (4, "third")]


def test_a_line_over_the_cap_ends_at_a_lone_cr(tmp_path, monkeypatch):
    import pipeline.data.readers.text as readers_text

    monkeypatch.setattr(readers_text, "LINE_BLOCK", 300)
    p = tmp_path / "a.jsonl"
    p.write_bytes(b'{"text": "' + b"x" * 2000 + b'"}\r{"text": "short"}\r\n{"text": "' + b"y" * 2000 + b'"}')
    out, _ = rows(p, max_record_bytes=1024)
    assert [(r.line, r.error or r.value) for r in out] == [(1, "too_large"), (2, {"text": "short"}), (3, "too_large")]


def test_byte_ranges_count_lone_cr_line_ends(tmp_path):
    """A large file cut into byte ranges: each range's first line number counts \\r line ends as the reader
    does, so quarantine references stay right."""
    from pipeline.data.readers import split_ranges

    lines = [json.dumps({"text": f"row {i} " + "z" * 40}) for i in range(3000)]
    ends = ["\r", "\n", "\r\n"]
    data = "".join(line + ends[i % 3] for i, line in enumerate(lines)).encode()
    p = tmp_path / "mixed.jsonl"
    p.write_bytes(data)
    whole = [(r.line, r.value) for r in rows(p)[0]]
    parts = split_ranges(describe(str(p)), 20_000)
    assert len(parts) > 5
    pieces = [(r.line, r.value) for part in parts for b in FileReader(part, ReadConfig()).batches() for r in b]
    assert pieces == whole and [n for n, _ in whole] == list(range(1, 3001))


def test_a_gzip_of_newlines_is_counted_in_bulk(tmp_path):
    """200 MB of newlines took minutes: one RawRow per empty line through every step. A run of empty lines
    is one RawRow with its count; the accounting still counts every line."""
    from pipeline.core.config import PrepareConfig
    from pipeline.data.normalize import Normalizer

    p = tmp_path / "nl.jsonl.gz"
    p.write_bytes(gzip.compress(b"\n" * 3_000_000 + b'{"text": "the one record"}\n' + b"\r\n" * 1_000_000))
    out, _ = rows(p)
    assert len(out) < 20 and sum(r.count for r in out) == 4_000_001
    assert [(r.line, r.value) for r in out if not r.error] == [(3_000_001, {"text": "the one record"})]
    normalizer = Normalizer(describe(str(p)), PrepareConfig())
    records = [rec for batch in normalizer.batches() for rec in batch]
    read = normalizer.read.to_dict()
    assert len(records) == 1 and read["records_in"] == 4_000_001 and read["dropped"] == {"empty_line": 4_000_000}


def test_duplicate_column_names_are_kept_renamed_and_reported(tmp_path):
    """A dict per row kept the last of two columns of one name: a column was lost without a word (CSV and
    Parquet). Both are kept, the later one renamed with a pandas-style suffix, and the file's warnings say so."""
    c = tmp_path / "dup.csv"
    c.write_text("text,note,note,note.1\nhello there,first,second,third\n")
    out, reader = rows(c)
    assert out[0].value == {"text": "hello there", "note": "first", "note.2": "second", "note.1": "third"}
    assert reader.warnings == ["1 column(s) with a name already used in the file kept, renamed with a .1, .2, "
                               "... suffix"]
    p = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["a text"]), pa.array([1]), pa.array([2])],
                                        names=["text", "n", "n"]), p)
    out, reader = rows(p)
    assert out[0].value == {"text": "a text", "n": 1, "n.1": 2} and len(reader.warnings) == 1


def test_nan_and_infinity_in_meta_are_null(tmp_path):
    """A Parquet float column with NaN was written into meta as bare NaN: not JSON. NaN, inf and -inf are
    null, at any depth, and meta is strict JSON."""
    from pipeline.core.config import PrepareConfig
    from pipeline.data.normalize import Normalizer

    p = tmp_path / "m.parquet"
    pq.write_table(pa.table({"text": ["one document", "two documents", "three documents"],
                             "score": [float("nan"), float("inf"), 0.5],
                             "vec": [[float("-inf"), 1.0], [], [2.0]]}), p)
    j = tmp_path / "m.jsonl"
    j.write_text('{"text": "from a jsonl line", "score": NaN, "deep": {"x": [Infinity]}}\n')
    metas = []
    for path in (p, j):
        normalizer = Normalizer(describe(str(path)), PrepareConfig())
        metas += [rec["meta"] for batch in normalizer.batches() for rec in batch]

    def strict(text):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in meta"))

    assert [strict(m) for m in metas] == [{"score": None, "vec": [None, 1.0]}, {"score": None, "vec": []},
                                          {"score": 0.5, "vec": [2.0]}, {"score": None, "deep": {"x": [None]}}]


def test_the_names_map_exists_only_with_labels_and_comes_back_if_deleted(tmp_path):
    """A run without a flagged name writes no map; a long-lived process (prepare serve) whose map file was
    deleted since writes it again, though its labels are not new to it."""
    from pipeline.data.readers import NameMap

    names = NameMap(names_file(str(tmp_path / "run")))
    names.save()
    assert not names.path.exists()
    label = names.label("ivan_petrov.csv")
    names.save()
    names.path.unlink()
    assert names.label("ivan_petrov.csv") == label and not names.dirty
    names.save()
    assert json.loads(names.path.read_text())["names"] == {label: "ivan_petrov.csv"}


def test_a_parquet_row_over_the_cap_in_list_items_is_too_large(tmp_path):
    """The cap counted only the message text of a Parquet row: a 2.5 KB file with one row of 1,000,000
    short messages (30 MB as JSON) was read whole into Python objects. A row is now sized as JSON (every
    field, list item and struct) on the Arrow data and quarantined before it is built."""
    from pipeline.data.readers.rows import arrow_row_json_bytes

    turn = {"role": "user", "content": "hi"}
    table = pa.table({"text": ["first document", "many turns", "last document"],
                      "messages": [[turn], [turn] * 200, None],
                      "tags": [["a", "b"], None, ["x" * 3000]]})
    p = tmp_path / "lists.parquet"
    pq.write_table(table, p)
    out, _ = rows(p, max_record_bytes=2048)
    assert [(r.line, r.error) for r in out] == [(1, None), (2, "too_large"), (3, "too_large")]
    assert out[0].value == {"text": "first document", "messages": [turn], "tags": ["a", "b"]}
    out, _ = rows(p, max_record_bytes=64 * 1024)
    assert [r.error for r in out] == [None, None, None] and out[1].value["messages"] == [turn] * 200
    # sized like the JSON reader sizes a record, so at or above the JSON text of a row
    sizes = arrow_row_json_bytes(table.to_batches()[0]).tolist()
    assert all(size >= len(json.dumps(row)) for size, row in zip(sizes, table.to_pylist()))


def test_parquet_row_sizes_cover_every_arrow_type(tmp_path):
    """Structs, maps, dictionary columns, fixed-size lists, nulls at every level and sliced batches."""
    from pipeline.data.readers.rows import arrow_row_json_bytes

    table = pa.table({
        "s": pa.array([{"k": "v" * 10, "n": 1}, None, {"k": None, "n": 2}]),
        "m": pa.array([[("a", 1)], None, [("b" * 20, 2), ("c", 3)]], pa.map_(pa.string(), pa.int64())),
        "d": pa.array(["same long value " * 5, None, "same long value " * 5]).dictionary_encode(),
        "f": pa.array([[1, 2], [3, 4], None], pa.list_(pa.int64(), 2)),
        "b": pa.array([b"\x00\x01", None, b"x" * 40]),
    })
    batch = table.to_batches()[0]
    sizes = arrow_row_json_bytes(batch)
    rows_ = batch.to_pylist()
    assert all(size >= len(json.dumps(row, default=str)) for size, row in zip(sizes.tolist(), rows_))
    assert sizes[2] > sizes[1]  # the null row is the smallest
    assert arrow_row_json_bytes(batch.slice(1)).tolist() == sizes[1:].tolist()


def test_line_ends_counts_lf_crlf_and_lone_cr_alike():
    from pipeline.data.readers.text import line_ends

    assert line_ends(b"a\nb\n") == 2  # no \r: the \r\n search is skipped
    assert line_ends(b"a\r\nb\rc\n") == 3
    assert line_ends(b"\r\n\r\n\r") == 3
    assert line_ends(b"no line end") == 0
