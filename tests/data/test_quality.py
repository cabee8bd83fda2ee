"""The quality checks (pipeline/data/quality.py): each with planted cases and a negative case, the drop reasons,
the canned-answer cap across two shards, and no record text in what reaches the report."""
import json

import pyarrow.parquet as pq
import pytest

from pipeline.core.config import QualityConfig
from pipeline.data.quality import (
    CannedStep,
    QualityStep,
    canned_keys,
    find_canned,
    has_words,
    mail_parts,
    quality_summary,
    repair_mojibake,
    repetition_ratio,
    strip_mail,
)

ORDER_SHIFT = 32


def chat(rid, answer, question="Siparişim nerede?", order=0):
    return {"id": rid, "kind": "chat", "_order": order, "text": None, "tools": None, "meta": "{}",
            "source": {"file": "f.jsonl", "line": 1},
            "messages": [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]}


def run_step(records, **cfg):
    step = QualityStep(QualityConfig(**cfg))
    out = step(records)
    return out, step.stats


# ---------------------------------------------------------------------------------------------- mojibake

def test_mojibake_is_repaired_and_counted_by_default():
    russian, turkish = "Привет, ваш заказ отправлен", "Siparişiniz kargoya verildi, teşekkürler"
    # UTF-8 read as cp1252, the usual mojibake; "Ð¿Ñ€Ð¸" and "SipariÅŸiniz"
    recs = [chat("a", russian.encode().decode("cp1252")), chat("b", turkish.encode().decode("cp1252")),
            chat("c", russian)]
    out, st = run_step(recs)
    assert [m["content"] for m in (r["messages"][1] for r in out)] == [russian, turkish, russian]
    assert st.counters["mojibake"] == {"records": 2, "example_ids": ["a", "b"]}


def test_cp1251_mojibake_of_russian_is_repaired():
    russian = "Привет, ваш заказ отправлен"
    assert repair_mojibake(russian.encode().decode("cp1251")) == russian  # "РџСЂРёРІРµС‚": Windows-Russian


def test_mojibake_count_mode_leaves_text_and_correct_text_is_untouched():
    text = "Siparişiniz hazır".encode().decode("cp1252")
    assert repair_mojibake("Müşteri «Иван» naïve café – “quoted” ﬁne") == "Müşteri «Иван» naïve café – “quoted” ﬁne"
    out, st = run_step([chat("a", text)], mojibake="count")
    assert out[0]["messages"][1]["content"] == text and st.counters["mojibake"]["records"] == 1


# -------------------------------------------------------------------------------------------- repetition

def test_stuck_generation_and_double_paste_are_repetitive():
    loop = "Please restart the router. " * 15
    para = ("Your refund was approved yesterday and the money will reach the card you paid with within five "
            "working days, depending on your bank. ")
    assert repetition_ratio(loop, 3, 20) > 0.8
    assert repetition_ratio(para * 2, 3, 20) >= 0.45
    out, st = run_step([chat("loop", loop), chat("ok", para)])
    assert [r["id"] for r in out] == ["ok"]
    assert st.dropped == {"repetitive": 1} and st.counters["repetitive"]["example_ids"] == ["loop"]


def test_turkish_suffixes_and_short_answers_are_not_repetitive():
    turkish = ("Evlerimizden, evlerinizden ve evlerinden gelen misafirler geliyorlar, gidiyorlar, görüyorlar; "
               "kitaplarımızı, kitaplarınızı, kitaplarını okuyorlar ve yazıyorlar, düşünüyorlar, konuşuyorlar, "
               "anlatıyorlar, dinliyorlar.")
    assert repetition_ratio(turkish, 3, 20) == 0.0
    assert repetition_ratio("tamam tamam tamam", 3, 20) == 0.0  # below min_words
    out, st = run_step([chat("tr", turkish)])
    assert len(out) == 1 and not st.dropped and "repetitive" not in st.counters


def test_repetition_count_mode_keeps_the_record():
    out, st = run_step([chat("loop", "ok ok ok ok " * 10)], repetition="count")
    assert len(out) == 1 and st.counters["repetitive"]["records"] == 1 and not st.dropped

# ------------------------------------------------------------------------------------ threads, signatures

ANSWER = "Merhaba, iadeniz onaylandı; tutar 5 iş günü içinde kartınıza yansıyacak."
THREADS = {
    "gmail": ANSWER + "\n\nOn Mon, 4 Mar 2024 at 10:02, Ayşe Kaya <ayse@example.com> wrote:\n> Ürünü iade etmek istiyorum.\n> Teşekkürler",
    "gmail_wrapped": ANSWER + "\n\nOn Mon, 4 Mar 2024 at 10:02 AM Ayşe Kaya <ayse@example.com>\nwrote:\n> İade?",
    "outlook": ANSWER + "\n\n-----Original Message-----\nFrom: Ayşe Kaya\nSent: Monday\nSubject: iade\n\nÜrünü iade etmek istiyorum.",
    "turkish": ANSWER + "\n\n4 Mar 2024 10:02 tarihinde Ayşe Kaya <ayse@example.com> şunu yazdı:\n> İade etmek istiyorum",
    "russian": "Здравствуйте, возврат оформлен.\n\n4 марта 2024 г., в 10:02, Иван Петров <ivan@example.ru> написал(а):\n> Хочу вернуть товар",
    "quoted_block": "> Ürünü iade etmek istiyorum.\n> Siparişim 12345.\n\n" + ANSWER,
    "outlook_ru": "Здравствуйте, возврат оформлен.\n\nОт: Иван Петров\nОтправлено: 4 марта 2024 г.\nТема: возврат\n\nХочу вернуть товар",
}
SIGNATURES = {
    "delimiter": ANSWER + "\n\n--\nAyşe Kaya\nMüşteri Hizmetleri\n+90 212 555 00 00",
    "iphone": ANSWER + "\n\nSent from my iPhone",
    "saygilarimla": ANSWER + "\n\nSaygılarımla,\nAyşe Kaya\nDestek Ekibi",
    "s_uvazheniem": "Здравствуйте, возврат оформлен.\n\nС уважением,\nИван Петров",
}


@pytest.mark.parametrize("name", THREADS)
def test_quoted_threads_are_found_and_stripped(name):
    thread, _sig = mail_parts(THREADS[name])
    assert thread, name
    stripped = strip_mail(THREADS[name], threads=True, signatures=False)
    assert stripped in (ANSWER, "Здравствуйте, возврат оформлен.")
    assert "iade etmek" not in stripped and "вернуть" not in stripped


@pytest.mark.parametrize("name", SIGNATURES)
def test_signatures_are_found_and_stripped(name):
    _thread, sig = mail_parts(SIGNATURES[name])
    assert sig, name
    assert strip_mail(SIGNATURES[name], threads=False, signatures=True) in (ANSWER, "Здравствуйте, возврат оформлен.")


def test_a_quoted_line_of_code_or_a_closing_mid_text_is_no_thread_or_signature():
    negatives = [
        "Run this in a terminal:\n> git push origin main\nand tell me what it prints.",
        "In Python:\n```\n>>> print(1)\n1\n> not a quote\n> inside code\n```\nThat is all.",
        "```sql\n--\nSELECT 1;\n```\nThis query returns one.",
        "If x > 5 and y > 3:\nreturn x",
        "Best regards are not what I mean here. Let me explain in detail:\n1. first\n2. second\n3. third\n"
        "4. fourth\n5. fifth\n6. sixth",
        "OK, thanks!",
    ]
    for text in negatives:
        thread, sig = mail_parts(text)
        assert not thread and not sig, text
    out, st = run_step([chat(str(i), t) for i, t in enumerate(negatives)])
    assert len(out) == len(negatives) and not st.counters.get("quoted_thread") and not st.counters.get("signature")


def test_thread_and_signature_modes_count_strip_drop():
    recs = lambda: [chat("t", THREADS["gmail"]), chat("s", SIGNATURES["iphone"]), chat("n", ANSWER)]
    out, st = run_step(recs())
    assert len(out) == 3 and st.counters["quoted_thread"]["example_ids"] == ["t"]
    assert st.counters["signature"]["example_ids"] == ["s"] and not st.dropped
    assert out[0]["messages"][1]["content"] == THREADS["gmail"]  # count mode changes nothing
    out, st = run_step(recs(), threads="strip", signatures="strip")
    assert [r["messages"][1]["content"] for r in out] == [ANSWER, ANSWER, ANSWER] and st.counters["stripped"] == 2
    out, st = run_step(recs(), threads="drop", signatures="drop")
    assert [r["id"] for r in out] == ["n"] and st.dropped == {"quoted_thread": 1, "signature": 1}


def test_an_answer_that_is_only_a_quote_is_dropped_when_stripped():
    out, st = run_step([chat("q", "> Ürünü iade etmek istiyorum.\n> Siparişim 12345.")], threads="strip")
    assert out == [] and st.dropped == {"quoted_thread": 1}

# -------------------------------------------------------------------------------------------- no words

def test_symbol_and_url_only_turns():
    assert not has_words("👍👍") and not has_words("???!!!") and not has_words("https://example.com/reset?x=1")
    assert not has_words("  ayse@example.com ")
    assert has_words("OK, thanks!") and has_words("42") and has_words("Tamam 👍") and has_words("Да")
    # words are cut where str.split() cuts them: at every str.isspace() character
    assert has_words("https://example.com\u3000ok") and not has_words("https://example.com\x1cwww.example.org")
    recs = [chat("emoji", "👍"), chat("url", "https://example.com/reset"), chat("q", "OK, thanks!"),
            chat("u", "Teşekkürler", question="???")]
    out, st = run_step(recs)
    assert len(out) == 4 and st.counters["no_words"]["example_ids"] == ["emoji", "url", "u"]
    out, st = run_step(recs, no_words="drop")
    assert [r["id"] for r in out] == ["q"] and st.dropped == {"no_words": 3}


def test_a_tool_call_turn_without_content_is_not_symbol_only():
    rec = chat("tc", "Siparişiniz yolda.")
    rec["messages"][1:1] = [{"role": "assistant", "content": "",
                             "tool_calls": [{"type": "function", "function": {"name": "track", "arguments": {}}}]},
                            {"role": "tool", "content": "{}", "name": "track"}]
    out, st = run_step([rec], no_words="drop")
    assert len(out) == 1 and not st.dropped


def test_off_shows_no_check_setting_in_the_report():
    # quality off: the step is not in phase 1's list (tests/runner/test_phases_contract.py), and the report
    # does not show the settings of checks that did not run
    summary = quality_summary(None, None, QualityConfig(enabled=False, no_words="drop"))
    assert {c["setting"] for c in summary["checks"].values()} == {"off"}
    assert {c["records"] for c in summary["checks"].values()} == {0}

# ------------------------------------------------------------------------------------- canned answers

CANNED = "Thank you for contacting us. Your request has been forwarded to the relevant department."


def _shard(tmp_path, index, answers):
    recs = [chat(f"s{index}-{k}", a, question=f"question {index} {k}", order=(index << ORDER_SHIFT) + k + 1)
            for k, a in enumerate(answers)]
    path = tmp_path / f"{index:05d}.parquet"
    pq.write_table(canned_keys(recs), path)
    return recs, str(path)


def test_canned_answers_are_counted_across_shards_and_capped(tmp_path):
    # 3 + 4 records with the canned answer (case and spacing differ), one with another answer
    recs0, p0 = _shard(tmp_path, 0, [CANNED, CANNED.upper(), "Another answer.", CANNED])
    recs1, p1 = _shard(tmp_path, 1, [CANNED + "  ", CANNED, CANNED, "  " + CANNED])
    drop = tmp_path / "canned_drop.parquet"
    cfg = QualityConfig(canned="cap", canned_min_count=5, canned_cap=2)
    rep = find_canned([p0, p1], cfg, None, str(drop))
    assert rep["answers"] == 1 and rep["records"] == 7 and rep["capped"] == 5
    top = rep["top"][0]
    assert top["records"] == 7 and top["chars"] == len(CANNED) and top["example_ids"][:2] == ["s0-0", "s0-1"]
    kept0 = CannedStep(str(drop), 0, ORDER_SHIFT)(recs0)
    step1 = CannedStep(str(drop), 1, ORDER_SHIFT)
    kept1 = step1(recs1)
    assert [r["id"] for r in kept0] == ["s0-0", "s0-1", "s0-2"]  # the first two canned ones, in input order
    assert kept1 == [] and step1.stats.dropped == {"canned_answer": 4}
    # count mode: the same report figures, nothing dropped
    rep = find_canned([p0, p1], QualityConfig(canned_min_count=5), None, str(drop))
    assert rep["records"] == 7 and rep["capped"] == 0 and len(CannedStep(str(drop), 1, ORDER_SHIFT)(recs1)) == 4


def test_records_dedup_removes_are_not_counted_as_canned(tmp_path):
    import pyarrow as pa

    recs0, p0 = _shard(tmp_path, 0, [CANNED] * 5)
    removed = tmp_path / "dedup_removed.parquet"
    pq.write_table(pa.table({"_order": pa.array([recs0[3]["_order"], recs0[4]["_order"]], pa.int64())}), removed)
    rep = find_canned([p0], QualityConfig(canned_min_count=4), str(removed), str(tmp_path / "d.parquet"))
    assert rep["answers"] == 0 and rep["records"] == 0
    rep = find_canned([p0], QualityConfig(canned_min_count=3), str(removed), str(tmp_path / "d.parquet"))
    assert rep["records"] == 3


def test_no_record_text_reaches_the_report(tmp_path):
    secret = "Ayşe Kaya, TC 12345678901, ayse@example.com"
    recs = [chat("m", ("Siparişiniz hazır, " + secret).encode().decode("cp1252")), chat("r", (secret + " ") * 8),
            chat("t", ANSWER + "\n\nOn Mon, Ayşe Kaya wrote:\n> " + secret + "\n> again"),
            chat("e", "👍", question=secret)]
    out, st = run_step(recs, repetition="count")
    _recs, p0 = _shard(tmp_path, 0, [secret] * 3)
    canned = find_canned([p0], QualityConfig(canned_min_count=2), None, str(tmp_path / "d.parquet"))
    summary = json.dumps([quality_summary(st.counters, canned, QualityConfig()), st.to_dict()], ensure_ascii=False)
    for word in ("Ayşe", "Kaya", "12345678901", "ayse@", "Sipari", "AyÅ", "wrote", "👍"):
        assert word not in summary
    assert json.loads(summary)[0]["checks"]["mojibake"]["example_ids"] == ["m"]


def test_report_html_and_markdown_show_the_quality_section(tmp_path):
    from pipeline.report.html import render_html
    from pipeline.report.html.page import SECTION_IDS
    from pipeline.report.quality import render_quality_markdown

    recs = [chat("t", THREADS["gmail"]), chat("loop", "Please restart the router. " * 15)]
    _out, st = run_step(recs)
    _recs, p0 = _shard(tmp_path, 0, [CANNED] * 3)
    q = quality_summary(st.counters, find_canned([p0], QualityConfig(canned_min_count=2), None,
                                                 str(tmp_path / "d.parquet")), QualityConfig())
    page = render_html({"quality": q})
    assert "quality" in SECTION_IDS and '<section id="quality">' in page
    assert 'id="table-quality"' in page and 'id="table-canned"' in page and "s0-0" in page and "loop" in page
    md = render_quality_markdown(q)
    assert "repeated n-grams" in md and q["canned"]["top"][0]["answer_hash"] in md
    for text in (CANNED[:20], "restart", "Ayşe", "iade"):
        assert text not in page and text not in md
