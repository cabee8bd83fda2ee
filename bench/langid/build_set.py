"""Builds bench/langid/labelled.jsonl: {"lang", "text", "source"} rows from text available offline.

Sources (the `source` column names which one each row came from):
  sample_data/*           - this repo's support chats (tr, ru, en; generated but real sentences) and CRM notes
  peer_formats/*          - /work/shared/peer_formats (LLaMA-Factory demo data: English wiki, c4, alpaca)
  faker.lorem/<locale>    - Faker's per-locale lorem word lists (real words, random order: ar, az, ru, uk, en,
                            de, fr, pl)
  faker.<provider>/<loc>  - Faker's job / company phrases (tr_TR)
  humanize.po/<locale>    - humanize's translated messages (tr, ru, uk, ar, uz)
  pycountry.kk            - pycountry's Kazakh country names (those with a Kazakh-only letter)
  handwritten             - sentences written for this set (marked so; chat-turn style, all 7 core languages)

Short = at most 60 characters (a chat turn), long = more. Deterministic (fixed seeds); re-run to rebuild.
"""
from __future__ import annotations

import gettext
import glob
import json
import os
import random
import re
from pathlib import Path

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
PEER = Path("/work/shared/peer_formats")
PER_BUCKET = 40  # rows per language and length bucket and source, at most
_SENT = re.compile(r"(?<=[.!?])\s+")

HANDWRITTEN = {
    "tr": ["Merhaba, siparişim nerede?", "Kargom hâlâ gelmedi.", "Şifremi unuttum, yardım eder misiniz?",
           "Teşekkürler, sorun çözüldü.", "Faturamı e-posta ile alabilir miyim?", "İade süreci ne kadar sürüyor?",
           "Hesabımı nasıl kapatırım?", "Ürün kırık geldi, değişim istiyorum.",
           "Dün akşam verdiğim siparişin durumu hakkında bilgi almak istiyorum, çünkü kargo takip numarası "
           "hâlâ sistemde görünmüyor ve müşteri hizmetlerine ulaşamadım."],
    "ru": ["Здравствуйте, где мой заказ?", "Посылка до сих пор не пришла.", "Не могу войти в личный кабинет.",
           "Спасибо, всё работает.", "Как вернуть товар?", "Можно изменить адрес доставки?",
           "Оплата прошла, а заказ не оформлен.", "Пришлите, пожалуйста, счёт на почту.",
           "Я оформил заказ три дня назад, деньги списали с карты, но в приложении статус до сих пор "
           "«ожидает оплаты», и никто не отвечает в чате поддержки."],
    "en": ["Where is my order?", "My package still hasn't arrived.", "I forgot my password.",
           "Thanks, that fixed it.", "Can I change the delivery address?", "How long does a refund take?",
           "Please send the invoice by email.", "The app crashes when I log in.",
           "I placed an order three days ago and the money was taken from my card, but the app still says "
           "the payment is pending and nobody answers in the support chat."],
    "az": ["Salam, sifarişim haradadır?", "Bağlama hələ də gəlməyib.", "Şifrəmi unutmuşam, kömək edin.",
           "Təşəkkür edirəm, problem həll olundu.", "Ödənişi necə geri ala bilərəm?",
           "Çatdırılma ünvanını dəyişmək olar?", "Hesabıma daxil ola bilmirəm.", "Məhsul sınıq gəldi.",
           "Üç gün əvvəl sifariş vermişəm, pul kartımdan çıxılıb, amma tətbiqdə status hələ də ödəniş "
           "gözlənilir kimi görünür və dəstək xidməti cavab vermir."],
    "kk": ["Сәлеметсіз бе, тапсырысым қайда?", "Сәлемдеме әлі келген жоқ.", "Құпия сөзімді ұмытып қалдым.",
           "Рақмет, мәселе шешілді.", "Тауарды қалай қайтаруға болады?", "Жеткізу мекенжайын өзгертуге бола ма?",
           "Жеке кабинетке кіре алмай жүрмін.", "Шотты поштаға жіберіңізші.",
           "Мен үш күн бұрын тапсырыс бердім, ақша картадан шешілді, бірақ қосымшада мәртебе әлі де төлем "
           "күтілуде деп тұр және қолдау қызметі жауап бермейді.",
           "Сәлеметсіз бе! Өткен аптада сатып алған ноутбугым екі күннен кейін қосылмай қалды, кепілдік "
           "бойынша жөндеуге немесе ақшаны қайтаруға өтініш қалдырғым келеді.",
           "Құрметті клиент, сіздің өтінішіңіз қабылданды. Біздің маман бір жұмыс күні ішінде сізбен "
           "хабарласады, ал тауарды жақын жердегі бөлімшеге тапсыруға болады.",
           "Қосымшаны жаңартқаннан кейін жеке кабинетке кіру мүмкін болмай қалды: құпия сөзді дұрыс "
           "енгізсем де, жүйе қате деп көрсетеді. Көмектесе аласыздар ма?",
           "Жеткізу мерзімі туралы айтсақ, Алматы мен Астана бойынша тапсырыстар әдетте екі күн ішінде, ал "
           "басқа қалаларға бес жұмыс күніне дейін жеткізіледі.",
           "Рақмет, мәселе толығымен шешілді. Қызмет көрсету сапасына өте ризамын, келесі жолы да сіздердің "
           "дүкендеріңізден сатып аламын деп ойлаймын."],
    "uk": ["Добрий день, де моє замовлення?", "Посилка досі не прийшла.", "Не можу увійти в особистий кабінет.",
           "Дякую, усе працює.", "Як повернути товар?", "Чи можна змінити адресу доставки?",
           "Оплата пройшла, але замовлення не оформлене.", "Надішліть, будь ласка, рахунок на пошту.",
           "Я оформив замовлення три дні тому, гроші списали з картки, але в застосунку статус досі "
           "«очікує оплати», і ніхто не відповідає в чаті підтримки."],
    "ar": ["مرحبا، أين طلبي؟", "لم يصل الطرد بعد.", "نسيت كلمة المرور.", "شكرا، تم حل المشكلة.",
           "كيف يمكنني استرداد المبلغ؟", "هل يمكن تغيير عنوان التوصيل؟", "لا أستطيع الدخول إلى حسابي.",
           "أرسل لي الفاتورة بالبريد من فضلك.",
           "لقد طلبت منذ ثلاثة أيام وتم خصم المبلغ من بطاقتي، لكن التطبيق ما زال يقول إن الدفع قيد "
           "الانتظار ولا أحد يرد في دردشة الدعم."],
}


def bucket(text: str) -> str:
    return "short" if len(text) <= 60 else "long"


def texts_of(path: Path):
    """Every message / field text of a support file, in order."""
    raw = path.read_text(encoding="utf-8")
    rows = json.loads(raw) if path.suffix == ".json" else raw.splitlines()
    for row in rows:
        if isinstance(row, str):  # a JSONL line; the sample files plant broken ones on purpose
            try:
                row = json.loads(row)
            except ValueError:
                continue
        if not isinstance(row, dict):
            continue
        if "instruction" in row:
            for k in ("instruction", "input", "output"):
                if row.get(k):
                    yield row[k]
        for m in row.get("conversations") or []:
            yield m["value"]
        for m in row.get("messages") or []:
            c = m.get("content")
            if isinstance(c, list):
                c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            if c:
                yield c
        if isinstance(row.get("text"), str):
            yield row["text"]


def from_texts(lang, source, texts, rng):
    """Long rows: whole texts; short rows: their sentences of at most 60 characters (distinct)."""
    texts = list(dict.fromkeys(t.strip() for t in texts if isinstance(t, str) and t.strip()))
    rng.shuffle(texts)
    longs = [t[:2000] for t in texts if len(t) > 60][:PER_BUCKET]
    shorts = list(dict.fromkeys(s for t in texts for s in _SENT.split(t) if 8 <= len(s) <= 60))[:PER_BUCKET]
    return [{"lang": lang, "text": t, "source": source} for t in longs + shorts]


def faker_rows(rng):
    from faker import Faker

    rows = []
    for lang, loc in (("ar", "ar_AA"), ("az", "az_AZ"), ("ru", "ru_RU"), ("uk", "uk_UA"), ("en", "en_US"),
                      ("de", "de_DE"), ("fr", "fr_FR"), ("pl", "pl_PL")):
        fake = Faker(loc)
        fake.seed_instance(7)
        short = [fake.sentence(nb_words=rng.randint(3, 6)) for _ in range(PER_BUCKET)]
        long = [fake.paragraph(nb_sentences=4) for _ in range(PER_BUCKET)]
        rows += [{"lang": lang, "text": t, "source": f"faker.lorem/{loc}"} for t in short if len(t) <= 60]
        rows += [{"lang": lang, "text": t, "source": f"faker.lorem/{loc}"} for t in long if len(t) > 60]
    fake = Faker("tr_TR")
    fake.seed_instance(7)
    jobs = list(dict.fromkeys(fake.job() for _ in range(400)))
    rows += [{"lang": "tr", "text": j, "source": "faker.job/tr_TR"} for j in jobs if len(j) >= 12][:PER_BUCKET]
    return rows


def humanize_rows():
    import humanize

    base = Path(humanize.__file__).parent / "locale"
    rows = []
    for lang, loc in (("tr", "tr_TR"), ("ru", "ru_RU"), ("uk", "uk_UA"), ("ar", "ar"), ("uz", "uz")):
        mo = base / loc / "LC_MESSAGES" / "humanize.mo"
        if not mo.exists():
            continue
        with open(mo, "rb") as f:
            cat = gettext.GNUTranslations(f)._catalog
        vals = []
        for v in cat.values():
            v = re.sub(r"%\(?\w*\)?[sd]|%[sd]|\{[^}]*\}", "", v).strip(" ,.")
            if len(v) >= 8 and sum(ch.isalpha() for ch in v) >= 6:
                vals.append(v)
        rows += [{"lang": lang, "text": v, "source": f"humanize.po/{loc}"}
                 for v in sorted(set(vals))[:PER_BUCKET]]
    return rows


def pycountry_kk():
    import pycountry

    mo = Path(pycountry.__file__).parent / "locales" / "kk" / "LC_MESSAGES" / "iso3166-1.mo"
    with open(mo, "rb") as f:
        cat = gettext.GNUTranslations(f)._catalog
    names = sorted({v for k, v in cat.items() if k and v != k and re.search("[әғқңөұүһі]", v.lower())})
    return [{"lang": "kk", "text": v, "source": "pycountry.kk"} for v in names[:PER_BUCKET]]


def main():
    rng = random.Random(11)
    rows = []
    sd = ROOT / "sample_data"
    rows += from_texts("tr", "sample_data/support_tr_alpaca.json", texts_of(sd / "support_tr_alpaca.json"), rng)
    rows += from_texts("ru", "sample_data/support_ru_sharegpt.jsonl", texts_of(sd / "support_ru_sharegpt.jsonl"), rng)
    rows += from_texts("ru", "sample_data/crm_notes_ru_cp1251.txt",
                       (sd / "crm_notes_ru_cp1251.txt").read_bytes().decode("cp1251").splitlines(), rng)
    rows += from_texts("en", "sample_data/support_en_openai.jsonl", texts_of(sd / "support_en_openai.jsonl"), rng)
    if PEER.exists():
        rows += from_texts("en", "peer_formats/wiki_demo.txt",
                           (PEER / "wiki_demo.txt").read_text(encoding="utf-8").splitlines()[:200], rng)
        rows += from_texts("en", "peer_formats/alpaca_en_demo.json", texts_of(PEER / "alpaca_en_demo.json"), rng)
    rows += faker_rows(rng)
    rows += humanize_rows()
    rows += pycountry_kk()
    for lang, texts in HANDWRITTEN.items():
        rows += [{"lang": lang, "text": t, "source": "handwritten"} for t in texts]
    seen, out = set(), []
    for r in rows:
        if (r["lang"], r["text"]) not in seen:
            seen.add((r["lang"], r["text"]))
            out.append(r)
    with open(HERE / "labelled.jsonl", "w", encoding="utf-8") as f:
        for r in out:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    from collections import Counter
    print(len(out), "rows;", dict(Counter((r["lang"], bucket(r["text"])) for r in out)))


if __name__ == "__main__":
    main()
