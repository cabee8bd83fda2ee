"""Inputs as exported by real tools: legacy code pages (Turkish cp1254, Russian cp1251/koi8-r), UTF-16, Excel
CSV (; separators, a BOM), and folders of many small files."""
import csv
import io
import json

import pytest

from pipeline.core.config import ConfigError, ReadConfig, load_config
from pipeline.data.readers import FileReader, describe, detect_encoding

TURKISH_CHAT = [
    "Şifre değiştir",
    "Şikayetim var",
    "Değişim yapabilir miyim?",
    "Üyeliğimi iptal etmek istiyorum",
    "Kargo ücreti ne kadar?",
    "Merhaba, şifremi unuttum ve hesabıma giriş yapamıyorum. Yardımcı olabilir misiniz?",
    "İyi günler, siparişiniz yarın kargoya verilecek; takip numarası SMS ile gönderilecektir.",
    "Kartımdan iki kez çekim yapılmış, iade işlemini başlatır mısınız? Teşekkürler.",
]
RUSSIAN_CHAT = [
    "Сменить пароль",
    "Здравствуйте, я забыл пароль и не могу войти в личный кабинет. Помогите, пожалуйста.",
    "Спасибо, всего доброго!",
]
ENGLISH_LATIN1 = ["Café menu: crème brûlée", "Hello, I forgot my password.", "Price: 5 £, naïve résumé"]


def rows(path, **cfg):
    reader = FileReader(describe(str(path)), ReadConfig(**cfg))
    out = [r for batch in reader.batches() for r in batch]
    return out, reader


# --- encodings -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("line", TURKISH_CHAT)
@pytest.mark.parametrize("encoding", ["cp1254", "iso8859_9"])
def test_a_turkish_line_in_a_turkish_code_page_is_read_as_turkish(line, encoding):
    """One short support-chat line was read as iso8859-10 ("Þifre deðiþtir"), big5 or cp1251."""
    got = detect_encoding(line.encode(encoding))
    assert line.encode(encoding).decode(got) == line, got


@pytest.mark.parametrize("lines,encodings", [
    (TURKISH_CHAT, ["cp1254", "iso8859_9"]),
    (RUSSIAN_CHAT, ["cp1251", "koi8_r"]),
    (ENGLISH_LATIN1, ["latin_1", "cp1252"]),
])
def test_each_language_is_read_in_its_code_page(lines, encodings):
    for encoding in encodings:
        for n in (1, 2, len(lines)):
            data = "\n".join(lines[:n]).encode(encoding)
            got = detect_encoding(data)
            assert data.decode(got) == "\n".join(lines[:n]), (encoding, n, got)


@pytest.mark.parametrize("encoding,detected", [
    ("utf-8", "utf-8"), ("utf-8-sig", "utf-8-sig"), ("utf-16", "utf_16"),
    ("utf-16-le", "utf_16_le"), ("utf-16-be", "utf_16_be")])
def test_unicode_files_with_and_without_bom(tmp_path, encoding, detected):
    lines = TURKISH_CHAT[:3] + RUSSIAN_CHAT[:1] + ["plain ascii"]
    p = tmp_path / "a.jsonl"
    p.write_bytes("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in lines).encode(encoding))
    out, reader = rows(p)
    assert reader.encoding == detected
    assert [r.value["text"] for r in out] == lines


def test_a_turkish_jsonl_file_in_cp1254_is_read_right_and_the_guess_is_reported(tmp_path):
    p = tmp_path / "chat.jsonl"
    p.write_bytes("".join(json.dumps({"user": t, "assistant": "Tamam"}, ensure_ascii=False) + "\n"
                          for t in TURKISH_CHAT[:2]).encode("cp1254"))
    out, reader = rows(p)
    assert [r.value["user"] for r in out] == TURKISH_CHAT[:2]
    assert reader.encoding == "cp1254"
    assert reader.warnings == ["not UTF-8; decoded as cp1254 (detected)"]


def test_read_encoding_forces_the_encoding(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes("Þórður býr á Íslandi\n".encode("iso8859_10"))  # Icelandic: no guess would pick it
    out, reader = rows(p, encoding="iso8859_10")
    assert out[0].value == "Þórður býr á Íslandi"
    assert reader.encoding == "iso8859-10" and reader.warnings == []
    # a forced one-byte code page is taken as given, also on lines that happen to be valid UTF-8
    q = tmp_path / "b.txt"
    q.write_bytes("Ã§ay\n".encode("cp1252"))
    assert rows(q, encoding="cp1252")[0][0].value == "Ã§ay"


@pytest.mark.parametrize("value", ["klingon", "base64", "rot13"])
def test_an_unknown_encoding_is_refused_at_config_time(value):
    with pytest.raises(ConfigError, match=f"read.encoding: not a.*encoding.*{value}"):
        load_config(None, {"read": {"encoding": value}})


# --- CSV ---------------------------------------------------------------------------------------------

def excel_csv(lines: list[list[str]], delimiter: str) -> bytes:
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator="\r\n").writerows(lines)  # quotes what needs it
    return b"\xef\xbb\xbf" + out.getvalue().encode("utf-8")


@pytest.mark.parametrize("delimiter", [";", "\t", "|", ","])
def test_an_excel_csv_with_a_bom_is_read_with_its_delimiter(tmp_path, delimiter):
    """An Excel export with ; separators (decimal commas in the text) gave bad_csv_row for every row."""
    table = [["soru", "cevap", "puan"],
             ["Kargom nerede?", "Yarın teslim edilecek, takip no 12", "4,5"],
             ["Fiyat ne kadar?", "149,90 TL; kargo | vergi dahil", "3,0"]]
    p = tmp_path / "excel.csv"
    p.write_bytes(excel_csv(table, delimiter))
    out, _ = rows(p)
    assert [r.error for r in out] == [None, None]
    assert out[0].value == {"soru": "Kargom nerede?", "cevap": "Yarın teslim edilecek, takip no 12", "puan": "4,5"}


def test_read_csv_delimiter_forces_the_delimiter(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("a;b\n1;2,5\n")
    assert rows(p, csv_delimiter=";")[0][0].value == {"a": "1", "b": "2,5"}
    assert rows(p, csv_delimiter=",")[0][0].error == "bad_csv_row"  # as told: "1;2" and "5" under one column


def test_a_forced_utf8_encoding_still_strips_the_bom_from_the_header(tmp_path):
    p = tmp_path / "a.csv"
    p.write_bytes(excel_csv([["question", "answer"], ["q", "a"]], ";"))
    assert rows(p, encoding="utf-8")[0][0].value == {"question": "q", "answer": "a"}


def test_sniff_delimiter_respects_quotes_and_defaults_to_comma():
    from pipeline.data.readers.rows import sniff_delimiter

    assert sniff_delimiter('text;label\n"a; b; c";x\n"d";y\n') == ";"
    assert sniff_delimiter('text,label\n"a; b; c",x\n"d; e",y\n') == ","
    assert sniff_delimiter("text\nhello\nworld\n") == ","
    assert sniff_delimiter("a\tb\n1\t2\n") == "\t"
