import csv
import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from pipeline.config import ReadConfig
from pipeline.readers import FileReader, UnreadableInput, describe, detect_encoding, expand_inputs


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
