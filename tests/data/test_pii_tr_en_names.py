"""Turkish and English person names beyond the name lists (issue 29, item 2): names no list holds, with and
without cues, in lower case and in capitals, Turkish suffixes and Bey/Hanım, later mentions in any casing; code
and URLs not searched for names; months, brands, firms and words that are also names kept.

The names are invented (none is in the gazetteer, its names-dataset extension or names-dataset at all) or
Faker-style common names; no name of the evaluation's half of names-dataset appears here."""
import json
import re

import pytest
from pii_names import step  # noqa: F401 (a fixture)

from pipeline.data.pii.name_signals import Rarity, code_spans
from pipeline.data.pii.names import LATIN_FIRST, LATIN_LAST, LISTED_EXT
from pipeline.data.pii.text import fold

pytestmark = pytest.mark.timeout(300)

INVENTED = ("Zorvak", "Brenwic", "Talmoor", "Tüzbay", "Kırpalı", "Oltaç", "Benziroğlu", "Dervel", "Ambrisk",
            "Elvaro", "Sarvil", "Mordecant", "Kıvılay", "Tezerman")


def chat(*contents):
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": c} for i, c in enumerate(contents)]
    return {"id": "x", "kind": "chat", "messages": msgs, "text": None, "source": {"file": "f", "line": 1},
            "meta": "{}"}


def contents(step, *texts) -> list[str]:
    return [m["content"] for m in step([chat(*texts)])[0]["messages"]]


def left(words, out: str) -> list[str]:
    """The words of `words` still in `out`, in any casing."""
    return [w for w in words if re.search(rf"(?<!\w){re.escape(w)}", out, re.I)]


def test_invented_names_are_in_no_list():
    for w in INVENTED:
        assert fold(w) not in LATIN_FIRST and fold(w) not in LATIN_LAST and fold(w) not in LISTED_EXT, w


UNLISTED = [
    # without a cue word: a calling verb, or two capitalized words rare as words
    ("Zorvak Talmoor called yesterday about the refund.", ["Zorvak", "Talmoor"]),
    ("Yesterday Brenwic Ambrisk complained about the delay.", ["Brenwic", "Ambrisk"]),
    ("I forwarded the ticket to Elvaro Mordecant this morning.", ["Elvaro", "Mordecant"]),
    ("Tüzbay Kırpalı dün aradı, iade istiyor.", ["Tüzbay", "Kırpalı"]),
    ("Dün akşam Oltaç Benziroğlu kargo için şikayet etti.", ["Oltaç", "Benziroğlu"]),
    # cues the stage did not know
    ("İsim soyisim: Kıvılay Tezerman\nAdres: Ankara", ["Kıvılay", "Tezerman"]),
    ("Müşteri adı: Sarvil Dervel, siparişi gecikti.", ["Sarvil", "Dervel"]),
    ("Bu hattı Oltaç Tezerman kullanıyor, numara değişmedi.", ["Oltaç", "Tezerman"]),
    ("Customer name: Zorvak Ambrisk, order delayed.", ["Zorvak", "Ambrisk"]),
    # a first name alone in a greeting
    ("Got it Brenwic, I'll check.", ["Brenwic"]),
    ("Zorvak called again, he is upset.", ["Zorvak"]),
]


@pytest.mark.parametrize("text,words", UNLISTED)
def test_names_outside_the_lists(step, text, words):
    out = contents(step, text)[0]
    assert not left(words, out), out


LOWER = [
    ("benim adım tüzbay kırpalı, kargom nerede", ["tüzbay", "kırpalı"]),
    ("merhaba ben oltaç benziroğlu, iade yapmak istiyorum", ["oltaç", "benziroğlu"]),
    ("hi my name is zorvak talmoor, where is my parcel", ["zorvak", "talmoor"]),
    ("my name is john smith and my order is late", ["john", "smith"]),
    # lower case after any cue, and before a calling verb
    ("müşteri adı: sarvil dervel, siparişi gecikti", ["sarvil", "dervel"]),
    ("i̇sim soyisim: kıvılay tezerman", ["kıvılay", "tezerman"]),
    ("tüzbay kırpalı dün aradı, iade istiyor", ["tüzbay", "kırpalı"]),
    ("zorvak talmoor says the parcel never came", ["zorvak", "talmoor"]),
]


@pytest.mark.parametrize("text,words", LOWER)
def test_lower_case_names_after_an_introduction(step, text, words):
    out = contents(step, text)[0]
    assert not left(words, out), out
    assert any(w in out for w in ("kargom nerede", "iade", "parcel", "order is late", "gecikti", "soyisim"))


CAPS = [
    ("ADA LOVELACE REQUESTED A REFUND", ["ADA", "LOVELACE"], "REQUESTED A REFUND"),
    ("ZORVAK TALMOOR REQUESTED A REFUND", ["ZORVAK", "TALMOOR"], "REQUESTED A REFUND"),
    ("TÜZBAY KIRPALI İADE İSTEDİ", ["TÜZBAY", "KIRPALI"], "İADE İSTEDİ"),
    ("MÜŞTERİ OLTAÇ BENZİROĞLU TEKRAR ARADI", ["OLTAÇ", "BENZİROĞLU"], "TEKRAR ARADI"),
]


@pytest.mark.parametrize("text,words,rest", CAPS)
def test_all_caps_names_whole(step, text, words, rest):
    """The whole name in capitals, not the surname alone; the words around it stay."""
    out = contents(step, text)[0]
    assert not left(words, out), out
    assert out.endswith(rest)


def test_turkish_suffixes_titles_and_later_mentions_in_any_casing(step):
    out = contents(step, "Müşteri Ahmet Çelik aradı.",
                   "Çelik'in talebi onaylandı, ÇELİK BEY tekrar aradı, çelik bey memnun.")
    assert not left(["Çelik"], out[1]), out
    assert "talebi onaylandı" in out[1] and "tekrar aradı" in out[1]
    out = contents(step, "Işık Hanım tekrar aradı.", "IŞIK HANIM ve ışık hanım aynı kişi.")
    assert not left(["Işık", "ışık"], " ".join(out)), out
    out = contents(step, "Akın Kaya Bey aradı.", "Akın Bey'e dönüş yapıldı.")
    assert not left(["Akın", "Kaya"], " ".join(out)), out
    out = contents(step, "I spoke with Zorvak Talmoor.", "Later Talmoor wrote again; TALMOOR is waiting.")
    assert not left(["Talmoor"], out[1]), out


def test_lower_case_word_that_a_name_shares_stays_a_word(step):
    """A later lower-case mention that is also an everyday word needs a title or suffix after it."""
    out = contents(step, "Müşteri Ahmet Çelik aradı.", "Kapı çelik mi, ahşap mı?")
    assert out[1] == "Kapı çelik mi, ahşap mı?"


CODE = [
    "SELECT Name, Continent FROM world WHERE population IN (SELECT MAX(population) FROM world GROUP BY Continent)",
    "```python\nclass UserProfile(Model):\n    owner = Field(default='Zorvak Talmoor')\n```",
    "Run `git commit --author 'Brenwic Ambrisk'` and push.",
    "See https://example.com/people/Zorvak/Talmoor for the page.",
]


@pytest.mark.parametrize("text", CODE)
def test_code_and_urls_are_not_searched_for_names(step, text):
    assert contents(step, text)[0] == text


def test_identifiers_in_code_are_still_found(step):
    text = "```\nSELECT Name FROM users WHERE email = 'zorvak.talmoor@example.com'\n```"
    out = contents(step, text)[0]
    assert "zorvak.talmoor@example.com" not in out and "SELECT Name FROM users" in out


def test_a_name_outside_the_code_is_still_found(step):
    out = contents(step, "Zorvak Talmoor called yesterday:\n```sql\nSELECT Name FROM t\n```")[0]
    assert not left(["Zorvak", "Talmoor"], out) and "SELECT Name FROM t" in out


NEGATIVES = [
    "We run Microsoft SQL Server 2019 on Windows.",
    "She won an Oscar statuette in March.",
    "Tommy Hilfiger and Calvin Klein jackets are on sale.",
    "Morgan Stanley published the report.",
    "Eylül ayında Kasım'a kadar indirim var.",
    "Kasım ayında İstanbul ve Ankara şubeleri kapalı.",
    "Tommy Hilfiger ve Calvin Klein ürünleri indirimde.",
    "Deniz kenarında yürüdük, umut var.",
    "The Rose garden opens in May.",
    "Siparişinizi Trendyol üzerinden verdiniz.",
    "siparişim dün geldi, teşekkürler",
    "the parcel says nothing about the sender",
    "ben de geliyorum, i am fine thanks",
]


@pytest.mark.parametrize("text", NEGATIVES)
def test_hard_negatives_are_kept(step, text):
    assert contents(step, text)[0] == text


def test_words_that_are_names_are_names_with_a_surname_or_cue(step):
    out = contents(step, "Deniz Yılmaz aradı, Umut Bey de aradı.")[0]
    assert not left(["Deniz", "Yılmaz", "Umut"], out), out


def test_rarity_signal():
    en, tr = Rarity("en"), Rarity("tr")
    assert en.rare("talmoor") and tr.rare(fold("Kırpalı"))
    assert not en.rare("refund") and not tr.rare(fold("şikayet")) and not tr.rare("customer")  # English in tr


def test_code_spans_leave_prose_alone():
    assert code_spans("The cat sat with John on the mat.") == []
    text = "Note:\n$ git clone repo\nthen call John."
    assert [text[s:e] for s, e in code_spans(text)] == ["$ git clone repo"]


def test_planted_names_never_leave_a_trace_in_json(step):
    """The record's JSON (all of it) holds no word of the names."""
    rec = step([chat("Zorvak Talmoor called yesterday.", "TÜZBAY KIRPALI İADE İSTEDİ")])[0]
    dumped = json.dumps(rec, ensure_ascii=False)
    assert not left(["Zorvak", "Talmoor", "TÜZBAY", "KIRPALI"], dumped)
