"""KVKK special categories (pipeline/data/pii/special.py): recall and precision per category and language (per
record: a category found or not) on a generated set (planted mentions about a person in support-chat filler, hard negatives with the same words as
products, places and topics, and paraphrases outside the lexicon that count against recall), and the
detector's cost per record as a ratio of the PII stage's (PiiStep.process) on the same records, one process.

    .venv/bin/python bench/pii/special.py              # writes bench/pii/special_last_run.txt
"""
from __future__ import annotations

import random
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pipeline.core.config import PiiConfig  # noqa: E402
from pipeline.data.pii import PiiStep  # noqa: E402
from pipeline.data.pii.special import CATEGORIES, get_special_detector  # noqa: E402

SUBJ = {"en": ["I", "My husband", "The customer", "My mother", "He", "She", "Our client", "The patient"],
        "tr": ["Müşteri", "Annem", "Eşim", "Kardeşim", "Hastamız", "Oğlum", "Çalışanımız", "Babam"],
        "ru": ["Клиент", "Моя мама", "Мой муж", "Он", "Она", "Пациент", "Мой брат", "Сотрудник"]}
# {s}: a subject from SUBJ
POS = {
    "en": {"health": ["{s} has diabetes.", "{s} was diagnosed with asthma last year.", "{s} takes insulin daily.",
                      "{s} is pregnant, please deliver upstairs.", "{s} suffers from epilepsy."],
           "religion": ["{s} is Muslim.", "{s} is a practicing Catholic.", "{s} is Jewish and keeps kosher."],
           "ethnicity": ["{s} is Kurdish.", "{s} is Armenian by origin.", "{s} is Hispanic."],
           "politics": ["{s} is a member of the Labour party.", "{s} is a Republican.", "{s} is a party member."],
           "union": ["{s} is a union member.", "{s} joined the trade union."],
           "sexual": ["{s} is gay.", "{s} is bisexual.", "{s} is transgender."],
           "criminal": ["{s} has a criminal record.", "{s} was convicted of fraud.", "{s} is on parole."],
           "biometric": ["{s} gave a fingerprint at the branch.", "{s} did a DNA test."]},
    "tr": {"health": ["{s} şeker hastası.", "{s} diyabetli, insülin kullanıyor.", "{s} kanser tedavisi görüyor, kemoterapi alıyor.",
                      "{s} hamile, lütfen kapıya bırakın.", "{s} astım hastası."],
           "religion": ["{s} Müslüman, domuz eti olmasın.", "{s} Alevi.", "{s} Hristiyan."],
           "ethnicity": ["{s} Kürt kökenli.", "{s} Ermeni.", "{s} Çerkez."],
           "politics": ["{s} CHP üyesi.", "{s} MHP'li.", "{s} parti üyesi olduğunu söyledi."],
           "union": ["{s} sendika üyesi.", "{s} sendikalı bir işçi."],
           "sexual": ["{s} eşcinsel olduğunu söyledi.", "{s} biseksüel."],
           "criminal": ["{s} sabıkalı.", "{s} hapis yattı.", "{s} denetimli serbestlikte."],
           "biometric": ["{s} parmak izi verdi.", "{s} DNA testi yaptırdı."]},
    "ru": {"health": ["{s} болеет диабетом.", "У него астма, ему нужен лифт.", "{s} принимает инсулин.",
                      "{s} беременна, доставьте до двери.", "{s} страдает эпилепсией."],
           "religion": ["{s} мусульманин.", "{s} православный и соблюдает пост.", "{s} атеист."],
           "ethnicity": ["{s} татарин.", "{s} по национальности армянин.", "{s} чеченец."],
           "politics": ["{s} член партии.", "{s} состоит в партии КПРФ.", "{s} голосовал за ЛДПР."],
           "union": ["{s} член профсоюза.", "{s} председатель профкома."],
           "sexual": ["{s} гей.", "{s} бисексуал."],
           "criminal": ["{s} судим.", "{s} отсидел три года.", "{s} под домашним арестом."],
           "biometric": ["{s} сдал отпечатки пальцев.", "{s} сдал тест ДНК."]},
}
# said of a person, but with no lexicon word: counted as planted, so they lower recall honestly
PARAPHRASE = {"en": [("health", "{s} has had sugar problems for years and needs shots every day."),
                     ("criminal", "{s} spent two years behind bars.")],
              "tr": [("health", "{s} şekerini ölçmeden yemek yiyemiyor, iğne vuruyor."),
                     ("religion", "{s} beş vakit namazında.")],
              "ru": [("health", "{s} сидит на уколах из-за сахара."), ("criminal", "{s} мотал срок на зоне.")]}
NEG = {
    "en": ["Our health insurance plan covers the whole family.", "Christmas sale: 30% off everything.",
           "Meet us at Union Square.", "The party pack has 20 balloons.", "Political news: the budget passed.",
           "Diabetes awareness month: glucose monitors on sale.", "New phone with a fingerprint sensor.",
           "The Armenian restaurant has great food.", "Christian Dior perfume is back in store.",
           "Criminal record check policy for landlords.", "The gay bar hosts a pride parade.",
           "Insulin pens discount for pharmacies.", "Read our blog post on cancer research statistics."],
    "tr": ["Sağlık sigortası planımız tüm aileyi kapsar.", "Kurban Bayramı kampanyası başladı.",
           "Diyabet hastaları için yeni glukometre cihazımız %20 indirimde.", "Parmak izi okuyuculu kilit.",
           "Dünya Diyabet Günü etkinliği.", "Ermeni mutfağı tarifleri kitabı çıktı.", "Sendika haberleri sayfası.",
           "Adli sicil kaydı belgesi e-Devlet'ten alınır, haberi okuyun.", "Kanser sigortası poliçesi fiyatları.",
           "Parti malzemeleri mağazamızda."],
    "ru": ["Страховой полис для всей семьи.", "Скидка на тест-полоски для диабетиков.",
           "Татарская кухня: рецепт эчпочмака.", "Сканер отпечатков пальцев купить.", "Новости политики.",
           "Справка о несудимости: как получить.", "Православный храм на площади.", "Ракета стартовала вовремя.",
           "Фильм о геях вышел в прокат.", "Статья о профсоюзе и истории движения."],
}
FILLER = {"en": ["Hello, my order has not arrived yet.", "Can you check the tracking number?", "Thanks for the help."],
          "tr": ["Merhaba, siparişim hâlâ gelmedi.", "Kargo takip numarası çalışmıyor.", "Yardımınız için teşekkürler."],
          "ru": ["Здравствуйте, заказ ещё не пришёл.", "Проверьте, пожалуйста, трек-номер.", "Спасибо за помощь."]}


def generate(n_per_lang: int, seed: int = 11):
    """Records of ~3-6 sentences: (text, lang, planted categories, is_paraphrase)."""
    rnd = random.Random(seed)
    out = []
    for lang in ("tr", "ru", "en"):
        for i in range(n_per_lang):
            parts = rnd.sample(FILLER[lang], 2)
            planted = []
            kind = i % 4  # positive, hard negative, filler only, paraphrase (every 8th of the positives)
            if kind == 0:
                cat = CATEGORIES[(i // 4) % len(CATEGORIES)]
                parts.insert(1, rnd.choice(POS[lang][cat]).format(s=rnd.choice(SUBJ[lang])))
                planted.append(cat)
            elif kind == 1:
                parts.insert(1, rnd.choice(NEG[lang]))
            elif kind == 3 and i % 24 == 3:
                cat, tpl = rnd.choice(PARAPHRASE[lang])
                parts.insert(1, tpl.format(s=rnd.choice(SUBJ[lang])))
                planted.append(cat)
            out.append((" ".join(parts), lang, planted))
    return out


def main() -> None:
    det = get_special_detector(("tr", "ru", "en"))
    data = generate(400)
    tp, fp, fn = Counter(), Counter(), Counter()
    for text, lang, planted in data:
        found = Counter({c for _, _, c in det.find(text)})  # per record: the policy acts per record
        want = Counter(planted)
        for c in set(found) | set(want):
            hit = min(found[c], want[c])
            tp[(c, lang)] += hit
            fp[(c, lang)] += found[c] - hit
            fn[(c, lang)] += want[c] - hit
    lines = ["KVKK special categories: generated set, "
             f"{len(data)} records ({sum(1 for _, _, p in data if p)} with a planted mention, "
             f"{sum(1 for t, _, p in data if not p and any(t.find(n) >= 0 for n in NEG['en'] + NEG['tr'] + NEG['ru']))}"
             " with a hard negative)", "",
             f"{'category':<10} {'lang':<4} {'planted':>7} {'found':>6} {'recall':>7} {'precision':>9}"]
    for c in CATEGORIES:
        for lang in ("tr", "ru", "en"):
            k = (c, lang)
            planted, found = tp[k] + fn[k], tp[k] + fp[k]
            rec = tp[k] / planted if planted else float("nan")
            prec = tp[k] / found if found else float("nan")
            lines.append(f"{c:<10} {lang:<4} {planted:>7} {found:>6} {rec:>7.3f} {prec:>9.3f}")
    T, P, N = sum(tp.values()), sum(fp.values()), sum(fn.values())
    lines += ["", f"all: recall {T / (T + N):.3f}, precision {T / (T + P):.3f} "
                  f"(paraphrases outside the lexicon are planted on purpose: the recall ceiling of a lexicon)"]

    # cost: the detector per record against the PII stage per record, same records, same process
    records = [{"id": str(i), "kind": "chat", "text": None, "source": {"file": "f", "line": i}, "meta": "{}",
                "messages": [{"role": "user", "content": (t + " ") * 5},
                             {"role": "assistant", "content": FILLER[lang][2] * 4}]}
               for i, (t, lang, _) in enumerate(data[::4][:240])]
    step = PiiStep(PiiConfig(), salt=b"bench")
    step(records[:5])  # engines built outside the timers
    t0 = time.perf_counter()
    step(records)
    stage = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(5):
        for r in records:
            det.count(m["content"] for m in r["messages"])
    special = (time.perf_counter() - t0) / 5
    chars = sum(len(m["content"]) for r in records for m in r["messages"]) / len(records)
    lines += ["", f"cost on {len(records)} records of ~{chars:.0f} characters: detector "
                  f"{special / len(records) * 1e6:.0f} us/record, PII stage (special included) "
                  f"{stage / len(records) * 1e3:.2f} ms/record; ratio {special / stage:.3f}"]
    text = "\n".join(lines)
    print(text)
    (Path(__file__).resolve().parent / "special_last_run.txt").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
