"""KVKK article 6 special categories: each category found when a text says it of a person and not found in the
hard negatives (product names, places, topics, sales copy), in tr/ru/en; the pii.special policies; strict mode
failing in one line with counts only; counts in the report."""
import json
import subprocess
import sys

import pytest
from conftest import ROOT

from pipeline.core.config import PiiConfig
from pipeline.data.pii import PiiPolicyError, PiiStep, kvkk_summary, render_kvkk_markdown
from pipeline.data.pii.special import CATEGORIES, get_special_detector

pytestmark = pytest.mark.timeout(300)

# (category, language, text about a person, a hard negative with the same or a related word)
CASES = [
    ("health", "en", "I have diabetes and take insulin every morning.", "Diabetes awareness month: 20% off glucose monitors."),
    ("health", "tr", "Müşteri şeker hastası, her gün insülin kullanıyor.", "Diyabet hastaları için yeni glukometre cihazımız %20 indirimde."),
    ("health", "ru", "У клиента диабет, он принимает метформин.", "Скидка на тест-полоски для диабетиков до конца недели."),
    ("religion", "en", "My husband is Muslim, so no pork please.", "Christmas sale: everything 30% off until Sunday."),
    ("religion", "tr", "Ben Aleviyim, cemevine gidiyorum.", "Kurban Bayramı kampanyası başladı, kargo bedava."),
    ("religion", "ru", "Я мусульманин и не ем свинину.", "Православный храм на площади открыт для туристов."),
    ("ethnicity", "en", "She is Kurdish and moved here last year.", "The Armenian restaurant on the corner has great food."),
    ("ethnicity", "tr", "Eşim Kürt kökenli, ailesi Diyarbakırlı.", "Ermeni mutfağı tarifleri kitabı çıktı."),
    ("ethnicity", "ru", "Мой сосед по национальности татарин.", "Татарская кухня: рецепт эчпочмака."),
    ("politics", "en", "He is a member of the Green party since 2010.", "Political news today: the budget debate continues."),
    ("politics", "tr", "Müşteri CHP'li olduğunu söyledi.", "Party pack doğum günü seti stokta."),
    ("politics", "ru", "Мой отец состоит в партии и ходит на собрания.", "Новости политики: выборы в сентябре."),
    ("union", "en", "She is a union member and asked for a steward.", "Meet us at Union Square at noon."),
    ("union", "tr", "Çalışan sendika üyesi olduğu için itiraz etti.", "Sendika haberleri sayfası güncellendi."),
    ("union", "ru", "Я член профсоюза на заводе.", "Профсоюзная новость: курс обучения."),
    ("sexual", "en", "My brother is gay and lives with his partner.", "The gay bar downtown hosts a pride parade."),
    ("sexual", "tr", "Arkadaşım eşcinsel olduğunu ailesine söyledi.", "Cinsel yönelim araştırması makalesi yayımlandı."),
    ("sexual", "ru", "Она бисексуалка и не скрывает этого.", "Фильм о геях вышел в прокат."),
    ("criminal", "en", "The applicant has a criminal record for theft.", "Criminal record check policy for landlords explained."),
    ("criminal", "tr", "Başvuranın sabıka kaydı var.", "Adli sicil kaydı belgesi e-Devlet'ten alınır, haberi okuyun."),
    ("criminal", "ru", "Он судим за кражу.", "Справка о несудимости: как получить."),
    ("biometric", "en", "I gave my fingerprint at the bank yesterday.", "New phone with a fingerprint sensor, now on sale."),
    ("biometric", "tr", "Müşterinin parmak izi kaydı alındı.", "Parmak izi okuyuculu kilit, kampanyalı fiyat."),
    ("biometric", "ru", "Клиент сдал ДНК-тест для установления отцовства.", "Сканер отпечатков пальцев купить со скидкой."),
]


def test_every_category_has_a_case_in_every_language():
    assert {(c, lang) for c, lang, _, _ in CASES} == {(c, lang) for c in CATEGORIES for lang in ("en", "tr", "ru")}


@pytest.mark.parametrize("category,lang,positive,negative", CASES, ids=[f"{c}-{lang}" for c, lang, _, _ in CASES])
def test_category_positive_and_hard_negative(category, lang, positive, negative):
    det = get_special_detector(("tr", "ru", "en"))
    assert {c for _, _, c in det.find(positive)} == {category}, positive
    assert det.find(negative) == [], negative


@pytest.mark.parametrize("text", [
    "diyabetim var", "Diyabetliyim.", "Kanserim, kemoterapi görüyorum.", "CHP'liyim", "İYİ Parti üyesiyim.",
    "Müslümanım", "Ben HİV pozitifim", "ISTANBUL'DA YAŞIYORUM, DİYABETİM VAR",
])
def test_turkish_suffixes_and_dotted_i(text):
    assert get_special_detector().find(text), text


@pytest.mark.parametrize("text", ["Он болеет диабетом.", "Мужу поставили диагноз гипертония.", "Я ранее судима."])
def test_russian_inflections(text):
    assert get_special_detector().find(text), text


@pytest.mark.parametrize("text", [
    "Health insurance plan for families", "sağlık sigortası planı", "Union Square", "Party pack", "Political news",
    "Christmas sale", "Kurban Bayramı kampanyası", "Christian Dior perfume for my wife", "my SSH key fingerprint",
    "Dünya Diyabet Günü etkinliği", "Ракета стартовала", "Diabetes is a chronic disease.", "geyik yapmayalım",
    "Şiir kitabı", "Tüm kürtaj haberleri", "Романы Толстого",
])
def test_hard_negatives(text):
    assert get_special_detector().find(text) == [], text


# ------------------------------------------------------------------------------------------ the step

def record(text, rid="r"):
    return {"id": rid, "kind": "chat", "text": None, "source": {"file": "f", "line": 1}, "meta": "{}",
            "messages": [{"role": "user", "content": text}, {"role": "assistant", "content": "Tamam, not aldım."}]}


BATCH = [record("Müşteri şeker hastası, insülin kullanıyor.", "a"), record("Он судим за кражу.", "b"),
         record("Kargo ne zaman gelir?", "c"), record("I have diabetes and my husband is Muslim.", "d")]


def run(batch, **cfg):
    step = PiiStep(PiiConfig(**cfg), salt=b"s")
    return step(batch), step.stats


def test_report_policy_counts_and_keeps_records():
    out, stats = run(BATCH)
    assert out == run(BATCH, special="report")[0]
    assert [r["id"] for r in out] == ["a", "b", "c", "d"]
    assert "şeker hastası" in out[0]["messages"][0]["content"]  # report changes nothing in the text
    c = stats.counters
    assert c["special"] == {"health": 3, "criminal": 1, "religion": 1}
    assert c["special_languages"]["tr"] == {"health": 2} and c["special_languages"]["ru"] == {"criminal": 1}
    assert c["special_languages"]["en"] == {"health": 1, "religion": 1}
    assert c["records_with_special"] == 3
    assert not stats.dropped and not stats.quarantined


def test_drop_policy_removes_the_records():
    out, stats = run(BATCH, special="drop")
    assert [r["id"] for r in out] == ["c"]
    assert stats.dropped == {"pii_special": 3} and not stats.quarantined
    assert stats.counters["special"]["health"] == 3


def test_quarantine_policy_counts_them_as_quarantined():
    out, stats = run(BATCH, special="quarantine")
    assert [r["id"] for r in out] == ["c"]
    assert stats.quarantined == {"pii_special_review": 3} and not stats.dropped


def test_strict_fails_in_one_line_with_counts_only():
    with pytest.raises(PiiPolicyError) as err:
        run(BATCH, kvkk="strict")
    msg = str(err.value)
    assert "\n" not in msg
    assert "5 KVKK special-category mention(s)" in msg and "3 record(s)" in msg
    assert "(criminal: 1, health: 3, religion: 1)" in msg
    for word in ("şeker", "судим", "diabetes", "Muslim", "insülin"):
        assert word not in msg
    # removed records leave nothing behind for strict to refuse
    out, _ = run(BATCH, kvkk="strict", special="drop")
    assert [r["id"] for r in out] == ["c"]


def test_summary_and_markdown_hold_counts_not_text():
    _, stats = run(BATCH)
    pii = kvkk_summary(stats.counters, PiiConfig())
    sc = pii["special_categories"]
    assert sc == {"policy": "report", "total": 5, "records": 3,
                  "by_category": {"criminal": 1, "health": 3, "religion": 1},
                  "by_language": {"en": {"health": 1, "religion": 1}, "ru": {"criminal": 1}, "tr": {"health": 2}}}
    risk = next(i for i in pii["residual_risk"]["items"] if i["topic"] == "special")
    assert risk["found"] == 5
    md = render_kvkk_markdown(pii)
    assert "| health | 3 |" in md and "şeker" not in md and "судим" not in md


@pytest.mark.integration  # the CLI in a subprocess
def test_strict_run_exits_with_the_policy_code(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    rows = [{"instruction": "Müşteri şeker hastası, randevu istiyor.", "output": "Randevunuz oluşturuldu."},
            {"instruction": "Kargo ne zaman gelir?", "output": "Yarın teslim edilir."}]
    (src / "a.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("pii:\n  kvkk: strict\nlengths:\n  enabled: false\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pipeline.cli", "run", str(src), "--out", str(tmp_path / "out"),
                           "--config", str(cfg)], capture_output=True, text=True, cwd=ROOT, timeout=240)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 3, proc.stderr[-2000:]
    policy = [line for line in err if "kvkk strict" in line]
    assert policy == [err[-1]], err  # progress lines above it, the error one line at the end
    assert "special-category" in err[-1] and "health: 1" in err[-1]
    assert "şeker" not in proc.stderr and "şeker" not in proc.stdout


def test_the_term_prefilter_passes_every_term_and_skips_plain_prose():
    """SpecialDetector searches a text only when one of its words may start a term: every lexicon term, with a
    suffix, after punctuation and in capitals, passes that test; prose of everyday words does not."""
    from pipeline.data.pii.special import norm

    det = get_special_detector()

    def may_hold(text):
        leads, firsts, _ = det._token_answers(set(text.split()))
        return leads or any(nxt in norm(text) for w in firsts for nxt in det.first_words[w])

    for key in det.entries:
        for text in (f"x {key}", f"({key}larım.", f"x-{key}'li y", f"X {key.upper()}"):
            assert may_hold(text.replace(" ", "  ") if " " in key else text), text
    assert not may_hold("sipariş kargo fatura iade срок доставки order shipping")
    assert det.find("Срок доставки вышел, заказ отменён.") == det.find("срок доставки") == []
    assert det._token_answers({"PARTİSİ"})[2] and not det._token_answers({"parti"})[2]  # a raw pattern's literal
