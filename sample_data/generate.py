"""Generate the sample dataset (deterministic): Alpaca, ShareGPT, OpenAI messages and plain text in
Turkish, Russian and English, with planted exact and near duplicates, personal data (synthetic, with
valid checksums) and broken lines. Run: python sample_data/generate.py"""
from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
rng = random.Random(20261202)


def tckn() -> str:
    d = [rng.randint(1, 9)] + [rng.randint(0, 9) for _ in range(8)]
    d.append(((d[0] + d[2] + d[4] + d[6] + d[8]) * 7 - (d[1] + d[3] + d[5] + d[7])) % 10)
    d.append(sum(d) % 10)
    return "".join(map(str, d))


def tr_iban() -> str:
    bban = "00061" + "0" + "".join(str(rng.randint(0, 9)) for _ in range(16))
    digits = "".join(str(int(c, 36)) for c in bban + "TR00")
    check = 98 - int(digits) % 97
    return f"TR{check:02d}{bban}"


def ru_inn12() -> str:
    d = [rng.randint(0, 9) for _ in range(10)]
    w1 = [7, 2, 4, 10, 3, 5, 9, 4, 6, 8]
    d.append(sum(a * b for a, b in zip(w1, d)) % 11 % 10)
    w2 = [3, 7, 2, 4, 10, 3, 5, 9, 4, 6, 8]
    d.append(sum(a * b for a, b in zip(w2, d)) % 11 % 10)
    return "".join(map(str, d))


def tr_phone() -> str:
    return f"+90 5{rng.randint(30, 59)} {rng.randint(100, 999)} {rng.randint(10, 99)} {rng.randint(10, 99)}"


def ru_phone() -> str:
    return f"+7 9{rng.randint(10, 99)} {rng.randint(100, 999)}-{rng.randint(10, 99)}-{rng.randint(10, 99)}"


TR_NAMES = ["Ayşe Yılmaz", "Mehmet Kaya", "Fatma Demir", "Ahmet Çelik", "Zeynep Şahin", "Mustafa Öztürk"]
RU_NAMES = ["Иван Петров", "Мария Смирнова", "Алексей Кузнецов", "Ольга Попова", "Дмитрий Соколов"]
EN_NAMES = ["John Smith", "Emily Johnson", "Michael Brown", "Sarah Davis", "David Wilson"]

TR_TOPICS = ["kargo takibi", "fatura itirazı", "şifre sıfırlama", "iade süreci", "abonelik iptali",
             "adres değişikliği", "kampanya koşulları", "taksit seçenekleri"]
RU_TOPICS = ["возврат товара", "смена тарифа", "восстановление пароля", "доставка заказа",
             "ошибка оплаты", "продление подписки", "бонусная программа"]
EN_TOPICS = ["refund request", "password reset", "shipping delay", "invoice correction",
             "plan upgrade", "account deletion", "API rate limits", "data export"]


TR_SENTENCES = [
    "Kayıtlarımızı kontrol ettik ve durumu netleştirdik.", "İşleminiz sırada bekliyor, gecikme için özür dileriz.",
    "Kargo firmasıyla görüşüp teslimat tarihini güncelledik.", "Ödemeniz bankanızdan onay bekliyor.",
    "Hesabınızdaki ayarları sizin için düzenledik.", "Talebinizi ilgili ekibe öncelikli olarak ilettik.",
    "Yeni şifre bağlantısı e-posta kutunuza gönderildi.", "İade tutarı kartınıza yansıdığında bildirim alacaksınız.",
    "Kampanya koşulları siparişiniz için geçerli görünüyor.", "Adres bilginizi sistemde güncelledik.",
    "Faturanızın düzeltilmiş hâli hazırlandı.", "Abonelik iptali dönem sonunda geçerli olacak.",
    "Taksit seçenekleri bankanıza göre değişebilir.", "Ürünü ücretsiz kargo ile geri gönderebilirsiniz.",
    "Sorun devam ederse bu yanıta yazmanız yeterli.", "Mağazalarımızdan da destek alabilirsiniz.",
]
TR_ASKS = ["Kısa ve nazik bir yanıt yaz.", "Müşteriyi bilgilendiren bir cevap hazırla.",
           "Resmi bir dille yanıtla.", "Sorunu çözen adımları anlat.", "Empati kurarak cevap ver."]


def alpaca_tr() -> list[dict]:
    rows = []
    for i in range(120):
        topic = rng.choice(TR_TOPICS)
        rows.append({
            "instruction": f"Müşteri {topic} hakkında yazıyor. {rng.choice(TR_ASKS)}",
            "input": f"Merhaba, {topic} konusunda {rng.choice(['yardım', 'bilgi', 'destek'])} rica ediyorum. "
                     f"{' '.join(rng.sample(TR_SENTENCES, 2))} Sipariş numaram {100000 + i}.",
            "output": f"Merhaba, {topic} talebinizi aldık. {' '.join(rng.sample(TR_SENTENCES, 4))} "
                      f"{rng.randint(1, 5)} iş günü içinde dönüş yapacağız.",
        })
    for i in range(12):  # personal data a support agent would see
        name = rng.choice(TR_NAMES)
        rows.append({
            "instruction": "Müşteri kaydını doğrula ve yanıtla.",
            "input": f"Ben {name}, T.C. kimlik numaram {tckn()}, telefonum {tr_phone()}. IBAN: {tr_iban()}",
            "output": f"Teşekkürler {name.split()[0]} Hanım/Bey, bilgileriniz doğrulandı ve iade IBAN'ınıza yapılacak.",
            "customer_name": name, "email": f"musteri{i}@ornek.com.tr",
        })
    rows += [dict(rows[3]), dict(rows[7])]  # exact duplicates
    near = dict(rows[10])
    near["output"] = near["output"] + " İyi günler dileriz."
    rows.append(near)  # near duplicate
    rows.append({"instruction": "", "input": "", "output": "boş talimat"})  # empty turn
    rows.append({"instruction": "Selam", "input": "", "output": ""})         # empty answer
    return rows


RU_SENTENCES = [
    "Мы проверили историю ваших заказов.", "Платёж прошёл, но банк ещё не подтвердил списание.",
    "Курьерская служба обещает доставку в ближайшие дни.", "Я передал обращение старшему специалисту.",
    "Бонусы будут начислены после закрытия заказа.", "Новый пароль можно задать по ссылке из письма.",
    "Тариф изменится с начала следующего месяца.", "Возврат средств занимает до десяти рабочих дней.",
    "Подписка продлевается автоматически, это можно отключить.", "Товар можно вернуть в любом пункте выдачи.",
    "Мы исправили ошибку в вашем личном кабинете.", "Скидка применяется только к товарам из акции.",
    "Номер отслеживания появится в приложении.", "Приносим извинения за доставленные неудобства.",
]


def sharegpt_ru() -> list[dict]:
    rows = []
    for i in range(100):
        topic = rng.choice(RU_TOPICS)
        rows.append({"conversations": [
            {"from": "human", "value": f"Здравствуйте! У меня вопрос про {topic}. {rng.choice(RU_SENTENCES)}"},
            {"from": "gpt", "value": f"Здравствуйте! По вопросу «{topic}»: {' '.join(rng.sample(RU_SENTENCES, 3))}"},
            {"from": "human", "value": rng.choice(["Спасибо, а можно ускорить?", "Что ещё нужно от меня?",
                                                   "Когда ждать ответа?", "А если не получится?"])},
            {"from": "gpt", "value": f"{' '.join(rng.sample(RU_SENTENCES, 2))} Ожидайте ответа в течение {rng.randint(2, 24)} часов."},
        ], "channel": rng.choice(["chat", "email", "phone"])})
    for i in range(10):
        name = rng.choice(RU_NAMES)
        rows.append({"conversations": [
            {"from": "human", "value": f"Меня зовут {name}, мой ИНН {ru_inn12()}, телефон {ru_phone()}. Проверьте заказ."},
            {"from": "gpt", "value": f"{name.split()[0]}, спасибо! Заказ найден, он будет доставлен завтра."},
        ]})
    rows.append({"conversations": [  # tool call in ShareGPT form
        {"from": "human", "value": "Какая погода в Казани?"},
        {"from": "function_call", "value": json.dumps({"name": "get_weather", "arguments": {"city": "Казань"}}, ensure_ascii=False)},
        {"from": "observation", "value": json.dumps({"temp_c": -3, "sky": "снег"}, ensure_ascii=False)},
        {"from": "gpt", "value": "В Казани сейчас −3 °C и идёт снег."},
    ], "tools": json.dumps([{"name": "get_weather", "parameters": {"city": {"type": "string"}}}])})
    rows.append(rows[5])  # exact duplicate
    rows.append({"conversations": [{"from": "gpt", "value": "Ответ без вопроса."}]})           # wrong role order
    rows.append({"conversations": [{"from": "human", "value": "Вопрос"}, {"from": "robot", "value": "?"}]})  # unknown role
    return rows


EN_SENTENCES = [
    "I checked the order history on your account.", "The payment went through but is still pending at your bank.",
    "The carrier expects to deliver within two business days.", "I escalated this to our billing specialists.",
    "Your plan change takes effect at the next billing cycle.", "A reset link is on its way to your inbox.",
    "Refunds usually appear on your statement within a week.", "You can export your data from the settings page.",
    "The rate limit resets every sixty seconds.", "I corrected the address on the invoice.",
    "Deleting the account also removes saved payment methods.", "We waived the late fee as a courtesy.",
    "The tracking number is now visible in the app.", "Sorry for the trouble this has caused.",
]


def openai_en() -> list[dict]:
    rows = []
    for i in range(100):
        topic = rng.choice(EN_TOPICS)
        rows.append({"messages": [
            {"role": "system", "content": "You are a concise, friendly support agent."},
            {"role": "user", "content": f"Hi, I need help with a {topic}. {rng.choice(EN_SENTENCES)}"},
            {"role": "assistant", "content": [
                {"type": "text", "text": f"Thanks for reaching out about your {topic}. "
                                         f"{' '.join(rng.sample(EN_SENTENCES, 4))}"}]},
        ]})
    for i in range(10):
        name = rng.choice(EN_NAMES)
        rows.append({"messages": [
            {"role": "user", "content": f"This is {name}, email {name.split()[0].lower()}.{i}@example.com, "
                                        f"card 4111 1111 1111 1111, from IP 203.0.113.{i + 1}. Please update my billing."},
            {"role": "assistant", "content": "Done: your billing details are updated. Anything else?"},
        ], "user_id": f"u-{9000 + i}"})
    base = rows[20]["messages"][2]["content"][0]["text"]
    rows.append({"messages": [rows[20]["messages"][0], rows[20]["messages"][1],
                              {"role": "assistant", "content": base + " Have a nice day!"}]})  # near dup
    rows.append({"messages": [{"role": "user", "content": 42}, {"role": "assistant", "content": "x"}]})  # non-string
    return rows


def plain_text() -> list[str]:
    docs = []
    for i in range(40):
        topic = rng.choice(EN_TOPICS)
        docs.append(f"Knowledge base article {i}: {topic}. " + " ".join(rng.sample(EN_SENTENCES, 6)))
    docs.append(docs[0])  # exact duplicate
    docs.append("ok")     # too short
    docs.append(f"Contact our DPO at dpo@example.org or +90 212 555 01 {rng.randint(10, 99)} for data requests.")
    return docs


def main() -> None:
    (HERE / "support_tr_alpaca.json").write_text(json.dumps(alpaca_tr(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    with open(HERE / "support_ru_sharegpt.jsonl", "w", encoding="utf-8") as fh:
        for row in sharegpt_ru():
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        fh.write('{"conversations": [{"from": "human", "value": "обрезанная строка\n')  # broken JSON line
    with open(HERE / "support_en_openai.jsonl", "w", encoding="utf-8") as fh:
        for row in openai_en():
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        fh.write("this line is not JSON\n")
    (HERE / "kb_articles.txt").write_text("\n".join(plain_text()) + "\n", encoding="utf-8")
    # Russian notes saved as Windows-1251, as exported by an old CRM: detected, decoded, warned about.
    notes = ["Заметка менеджера: клиент просит перезвонить после обеда по поводу возврата товара.",
             "Заметка менеджера: клиент доволен скоростью доставки и оставил положительный отзыв."]
    (HERE / "crm_notes_ru_cp1251.txt").write_bytes(("\n".join(notes) + "\n").encode("cp1251"))


if __name__ == "__main__":
    main()
