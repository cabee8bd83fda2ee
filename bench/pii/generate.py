"""Labelled evaluation set for the PII step: canonical records (chats and texts of about 700 characters in
Turkish, Russian and English) with personal data planted in realistic sentences, the exact span and type of
every planted value, and hard negatives that must stay (order and tracking numbers, dates, amounts,
product codes, versions, 11-digit numbers failing the TCKN checksum, IBAN-like strings with bad check
digits).

Values: Faker tr_TR / ru_RU / en_US for TCKN, TR IBAN, INN, SNILS, OGRN(IP), cards, e-mails, IPs; VKN from
python-stdnum's check digit; phones generated here and kept only when `phonenumbers` accepts them; plates,
Turkish addresses and secrets generated here. Person names come from the Faker lists (the gazetteer's
source: "in list") and, to measure what the gazetteer cannot know, from other locales (az_AZ names in
Turkish text, nl/sv/da/fi names in English text, uk_UA names in Russian text: "oov"; the gazetteer holds the
de/fr/it/es lists since 2026-12-03, which were the English "oov" names before).

    .venv/bin/python bench/pii/generate.py --records 2000 --out runs/bench_pii/eval.jsonl
"""
from __future__ import annotations

import argparse
import datetime
import json
import random
import string
import sys
from pathlib import Path

import phonenumbers
from faker import Faker
from stdnum.tr import vkn as std_vkn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pipeline.core.records import record_id  # noqa: E402
from pipeline.data.pii import checks  # noqa: E402  (only to reject accidental valid "bad" values)

_DOB_FROM, _DOB_TO = datetime.date(1940, 1, 1), datetime.date(2008, 1, 1)

LANGS = ("tr", "ru", "en")

# ------------------------------------------------------------------------------------------ templates
# "{v}" is the planted value. Templates without a context word are there on purpose.
TEMPLATES = {
    "tr": {
        "PERSON": ["Merhaba, ben {v}.", "Adım {v}, size dün yazmıştım.", "Müşterimiz {v} bugün tekrar aradı.",
                   "Sayın {v}, başvurunuz alınmıştır.", "Kargo {v} adına teslim edildi.",
                   "{v} ile görüştüm, iade talebini onayladı.", "Fatura {v} adına kesilecek.",
                   "Yetkili kişi: {v}", "Hesap sahibi {v} olarak görünüyor.", "Siparişi {v} teslim aldı.",
                   "İletişim kişisi {v}, akşam müsaitmiş.", "Saygılarımla, {v}"],
        "TCKN": ["TC kimlik numaram {v}.", "T.C. Kimlik No: {v}", "Kimlik numarası {v} olan müşteri kaydı bulundu.",
                 "TCKN {v} ile sorgulama yaptım.", "Bilgilerim şöyle: {v}, doğrulama yapar mısınız?",
                 "Nüfus cüzdanımdaki numara {v}."],
        "VKN": ["Vergi numaramız {v}.", "VKN: {v}", "Şirketin vergi kimlik numarası {v}, vergi dairesi Kadıköy.",
                "Fatura için vergi no {v} kullanılsın."],
        "IBAN": ["IBAN numaram {v}", "Ödemeyi {v} hesabına yapabilirsiniz.", "Havale için IBAN: {v}",
                 "Para iadesini {v} numaralı hesaba yaptık."],
        "CREDIT_CARD": ["Kart numaram {v}, son kullanma 09/27.", "{v} numaralı karttan çekim yapıldı.",
                        "Kredi kartı: {v}", "Ödemeyi {v} ile yapmak istiyorum."],
        "PHONE": ["Telefonum {v}.", "Bana {v} numarasından ulaşabilirsiniz.", "Cep: {v}",
                  "{v} numaralı hattım kapalı görünüyor.", "Whatsapp: {v}", "Numaram {v}, akşam arayabilirsiniz.",
                  "Lütfen {v} numarasını arayın."],
        "EMAIL": ["E-posta adresim {v}.", "Faturayı {v} adresine gönderin.", "{v} üzerinden yazabilirsiniz.",
                  "Mail: {v}"],
        "IP_ADDRESS": ["Giriş {v} IP adresinden yapılmış.", "Sunucu IP: {v}", "Şüpheli erişim {v} adresinden geldi."],
        "PASSPORT": ["Pasaport numaram {v}.", "Pasaport No: {v}", "Vize başvurusunda pasaport {v} kullanıldı."],
        "LICENSE_PLATE": ["Araç plakası {v}.", "{v} plakalı araç otoparkta bekliyor.", "Plaka: {v}",
                          "Aracım {v}, servis randevusu istiyorum."],
        "DATE_OF_BIRTH": ["Doğum tarihim {v}.", "Doğum tarihi: {v}", "{v} doğumluyum."],
        "ADDRESS": ["Adresim {v}.", "Teslimat adresi: {v}", "Ürünü {v} adresine gönderebilir misiniz?"],
        "SECRET": ["API anahtarı: {v}", "Token {v} ile deneyin.", "{v}"],
    },
    "ru": {
        "PERSON": ["Меня зовут {v}.", "Клиент {v} снова позвонил.", "Ответственный: {v}", "С уважением, {v}",
                   "Менеджер {v} обещал перезвонить.", "Договор подписал {v}.", "Получатель: {v}",
                   "Курьер {v} приедет завтра.", "Заявку оформил {v}, проверьте данные.",
                   "{v} оставил отзыв о доставке.", "Вопрос передан специалисту {v}."],
        "INN": ["ИНН {v}", "Мой ИНН: {v}", "ИНН организации {v}, КПП 773601001.", "Укажите ИНН {v} в платёжке."],
        "SNILS": ["СНИЛС {v}", "Номер СНИЛС: {v}", "Мой страховой номер {v}."],
        "OGRN": ["ОГРН {v}", "ОГРН: {v}, дата регистрации 12.03.2015."],
        "OGRNIP": ["ОГРНИП {v}", "Индивидуальный предприниматель, ОГРНИП: {v}"],
        "PASSPORT": ["Паспорт {v}, выдан ОВД района Хамовники.", "Серия и номер паспорта: {v}",
                     "Паспортные данные: {v}"],
        "PHONE": ["Мой телефон {v}.", "Звоните по номеру {v}.", "Тел.: {v}", "{v} — это мой рабочий номер.",
                  "Можно написать в WhatsApp на {v}."],
        "EMAIL": ["Почта: {v}", "Пишите на {v}.", "Электронная почта {v}"],
        "CREDIT_CARD": ["Номер карты {v}.", "Оплата прошла с карты {v}.", "Спишите с {v}, пожалуйста."],
        "IP_ADDRESS": ["IP-адрес {v}", "Вход с адреса {v} заблокирован."],
        "DATE_OF_BIRTH": ["Дата рождения: {v}", "Родился {v}.", "Дата рождения клиента {v}."],
        "ADDRESS": ["Адрес доставки: {v}", "Я живу по адресу {v}.", "Привезите на {v}."],
        "SECRET": ["Токен: {v}", "Ключ API {v}", "{v}"],
        "IBAN": ["IBAN для перевода из-за рубежа: {v}"],
    },
    "en": {
        "PERSON": ["Hi, this is {v}.", "My name is {v}.", "Customer {v} called again about the refund.",
                   "Dear {v},", "Please forward this to {v}.", "{v} approved the return yesterday.",
                   "Contact person: {v}", "I spoke with {v} from billing.", "Thanks, {v}",
                   "The parcel was signed for by {v}.", "Account holder: {v}"],
        "PHONE": ["My number is {v}.", "Call me at {v}.", "Phone: {v}", "You can reach me on {v} after 6pm.",
                  "Text {v} when the courier arrives."],
        "EMAIL": ["Email: {v}", "Send the invoice to {v}.", "You can write to {v} anytime."],
        "CREDIT_CARD": ["My card number is {v}.", "It was charged to card {v}.", "Please use {v} for the payment."],
        "IBAN": ["Please send it to IBAN {v}.", "Bank account (IBAN): {v}", "Refund to {v}, please."],
        "IP_ADDRESS": ["Login from {v} was blocked.", "The server IP is {v}.", "Requests came from {v} all night."],
        "PASSPORT": ["My passport number is {v}.", "Passport No. {v}"],
        "DATE_OF_BIRTH": ["Date of birth: {v}", "I was born on {v}.", "DOB {v}"],
        "ADDRESS": ["Ship it to {v}.", "My address is {v}.", "Billing address: {v}"],
        "SECRET": ["Here is my API key: {v}", "The token is {v}", "{v}"],
        "TCKN": ["My Turkish ID number is {v}.", "TC kimlik: {v}"],
    },
}

# which entity types a record of each language draws from (weights)
MIX = {
    "tr": {"PERSON": 6, "TCKN": 3, "VKN": 1, "IBAN": 2, "CREDIT_CARD": 2, "PHONE": 4, "EMAIL": 3, "IP_ADDRESS": 1,
           "PASSPORT": 1, "LICENSE_PLATE": 2, "DATE_OF_BIRTH": 1, "ADDRESS": 2, "SECRET": 1},
    "ru": {"PERSON": 6, "INN": 2, "SNILS": 2, "OGRN": 1, "OGRNIP": 1, "PASSPORT": 2, "PHONE": 4, "EMAIL": 3,
           "CREDIT_CARD": 2, "IP_ADDRESS": 1, "DATE_OF_BIRTH": 1, "ADDRESS": 2, "SECRET": 1, "IBAN": 1},
    "en": {"PERSON": 6, "PHONE": 4, "EMAIL": 3, "CREDIT_CARD": 2, "IBAN": 2, "IP_ADDRESS": 1, "PASSPORT": 1,
           "DATE_OF_BIRTH": 1, "ADDRESS": 2, "SECRET": 2, "TCKN": 1},
}

FILLERS = {
    "tr": ["Siparişim hâlâ gelmedi, yardımcı olur musunuz?", "Kargonun durumu hakkında bilgi almak istiyorum.",
           "İade sürecini nasıl başlatabilirim?", "Ürün kutusu hasarlı geldi, fotoğraflarını ekledim.",
           "Teşekkür ederim, iyi günler dilerim.", "Sistemde bir sorun var gibi görünüyor.",
           "Talebinizi ilgili birime ilettim.", "En kısa sürede size dönüş yapacağız.",
           "İstanbul'daki depomuzdan çıkış yapıldı.", "Ankara şubemiz hafta sonu kapalı.",
           "Trendyol üzerinden sipariş verdim ama onay gelmedi.", "Yarın sabah tekrar kontrol edeceğim.",
           "Kampanya kodu sepette çalışmıyor.", "Ödeme sayfasında hata alıyorum.", "Anlayışınız için teşekkürler.",
           "Ürünün rengi sitedekinden farklı çıktı.", "Değişim için mağazaya gelebilir miyim?",
           "Ramazan Bayramı nedeniyle teslimatlar gecikebilir.", "Garanti belgesi kutunun içinde yoktu.",
           "Müşteri hizmetleri çok yardımcı oldu, memnun kaldım.", "Pazartesi günü Vodafone mağazasına gittim.",
           "Mart ayında Adana'ya taşındım, adres değişecek.", "Yurtiçi Kargo şubesine uğradım ama kapalıydı.",
           "Garanti BBVA uygulaması açılmıyor.", "Samsung Galaxy telefonum iki haftada bozuldu.",
           "Türk Telekom faturası bu ay yüksek geldi.", "Ziraat Bankası ATM'si kartımı yuttu.",
           "Aras Kargo hâlâ teslim etmedi.", "Hepsiburada kampanyası bitmiş, fiyat değişmiş.",
           "Migros Sanal Market siparişi eksik geldi.", "Deniz Bank şubesinde sıra çok uzundu.",
           "Umut Apartmanı'nın kapıcısına bıraktılar.", "Kurban Bayramı öncesi yoğunluk var."],
    "ru": ["Мой заказ до сих пор не пришёл, помогите, пожалуйста.", "Хочу узнать статус доставки.",
           "Как оформить возврат товара?", "Коробка пришла повреждённой, фото прикладываю.",
           "Спасибо, хорошего дня.", "Кажется, в системе какая-то ошибка.", "Мы передали ваш запрос в отдел.",
           "Ответим вам в ближайшее время.", "Посылка отправлена со склада в Москве.",
           "Офис в Санкт-Петербурге не работает в выходные.", "Заказывал через Яндекс Маркет, но подтверждения нет.",
           "Завтра утром проверю ещё раз.", "Промокод не применяется в корзине.", "На странице оплаты выходит ошибка.",
           "Спасибо за понимание.", "Цвет товара отличается от фотографии на сайте.", "Можно ли обменять товар в магазине?",
           "Из-за праздников доставка может задержаться.", "Гарантийного талона в коробке не было.",
           "Сбербанк подтвердил платёж, деньги списаны.", "В понедельник заходил в магазин М.Видео.",
           "Оплатил через Тинькофф, но чек не пришёл.", "Заказ с Wildberries пришёл без чека.",
           "Роман Толстого пришёл с порванной обложкой.", "Доставка в Казань обычно занимает три дня.",
           "Пункт выдачи Ozon на Ленинском проспекте закрыт.", "В МФЦ сказали обратиться к вам.",
           "Надежда на быструю доставку не оправдалась.", "Почта России потеряла посылку."],
    "en": ["My order still hasn't arrived, can you help?", "I'd like an update on the delivery status.",
           "How do I start a return?", "The box arrived damaged, photos attached.", "Thanks, have a nice day.",
           "There seems to be a problem with the system.", "I've forwarded your request to the right team.",
           "We will get back to you as soon as possible.", "The parcel left our warehouse in New York.",
           "Our London office is closed on weekends.", "I ordered through Amazon but got no confirmation.",
           "I'll check again tomorrow morning.", "The promo code doesn't work at checkout.",
           "I get an error on the payment page.", "Thanks for your patience.",
           "The colour is different from the website photo.", "Can I exchange it in the store?",
           "Deliveries may be late because of Christmas.", "There was no warranty card in the box.",
           "Customer Service was really helpful on Monday.", "I visited the Apple Store on Fifth Avenue.",
           "My Verizon bill doubled in March.", "Chase Bank blocked my card on Friday.",
           "Will you ship to Canada?", "May I change the delivery date?", "Hope you are well.",
           "The Jordan sneakers arrived in the wrong size.", "Amazon Prime Video keeps buffering.",
           "We moved from Austin to Dallas last June.", "Grant Park was closed for the marathon.",
           "Best Buy said the TV was out of stock."],
}

NEGATIVES = {
    "tr": ["Sipariş numaranız {order}.", "Sipariş no: {order}", "Kargo takip numarası {track}.",
           "{date} tarihinde teslim edilecek.", "Toplam tutar {amount_tr} TL.", "Ürün kodu {code}.",
           "Fatura no {order}, tutar {amount_tr} TL.", "Referans kodu {bad_tckn} sistemde bulunamadı.",
           "TC kimlik numarası olarak {bad_tckn} yazılmış ama geçersiz.",
           "IBAN olarak {bad_iban} yazmışsınız, hatalı görünüyor.", "Uygulama sürümü {version} yüklendi.",
           "Talep numarası {order} ile kayıt açıldı.", "Saat {time} gibi kurye gelecek."],
    "ru": ["Номер заказа {order}.", "Заказ № {order} оформлен.", "Трек-номер {track}.", "Доставка {date}.",
           "Сумма {amount_ru} ₽.", "Артикул {code}.", "Счёт № {order} на сумму {amount_ru} руб.",
           "Номер обращения {order}.", "IBAN {bad_iban} не прошёл проверку.", "Версия приложения {version}.",
           "Курьер приедет к {time}.", "Код товара {bad_tckn} не найден."],
    "en": ["Your order number is {order}.", "Order #{order} has shipped.", "Tracking number {track}.",
           "Delivery on {date}.", "Total: ${amount_en}.", "SKU {code}.", "Invoice {order} for ${amount_en}.",
           "Ticket {order} was opened.", "The IBAN {bad_iban} was rejected.", "App version {version} installed.",
           "The courier comes at {time}.", "Reference {bad_tckn} was not found."],
}

TR_CITIES = [("Kadıköy", "İstanbul"), ("Çankaya", "Ankara"), ("Karşıyaka", "İzmir"), ("Nilüfer", "Bursa"),
             ("Muratpaşa", "Antalya"), ("Seyhan", "Adana"), ("Selçuklu", "Konya"), ("Tepebaşı", "Eskişehir"),
             ("Beşiktaş", "İstanbul"), ("Üsküdar", "İstanbul"), ("Keçiören", "Ankara"), ("Bornova", "İzmir")]
TR_NEIGHBOURHOODS = ["Atatürk", "Cumhuriyet", "Fatih", "Yenişehir", "Bahçelievler", "Fenerbahçe", "Kızılay",
                     "Gazi", "Mimar Sinan", "Yıldırım Beyazıt", "Barbaros", "Esentepe", "Zafer", "Hürriyet"]
TR_STREETS = ["Gül", "Lale", "Menekşe", "Bağdat", "İnönü", "Atatürk", "Kazım Karabekir", "Şehit Ali", "Karanfil",
              "Çamlık", "Papatya", "Istiklal", "Millet", "Fevzi Çakmak", "Ahmet Rasim", "Yavuz Selim"]


class Generator:
    def __init__(self, seed: int = 7):
        self.rng = random.Random(seed)
        self.fk = {}
        for i, loc in enumerate(("tr_TR", "ru_RU", "en_US", "en_GB", "de_DE", "fr_FR", "az_AZ", "uk_UA", "nl_NL",
                                 "sv_SE", "da_DK", "fi_FI")):
            f = Faker(loc)
            f.seed_instance(seed * 100 + i)
            self.fk[loc] = f
        from build_gazetteer import COMMON_TR_FIRST, COMMON_TR_LAST

        self.tr_first = list(COMMON_TR_FIRST)
        self.tr_last = list(COMMON_TR_LAST)
        names = json.loads((ROOT / "pipeline/resources/pii/names.json").read_text(encoding="utf-8"))
        self.latin_known = {n.lower() for n in names["latin_first"]}
        self.ru_known = {n.lower() for n in names["ru_first"] + names["ru_last"] + names["ru_middle"]}

    # ---------------------------------------------------------------- values
    def digits(self, n: int, first_nonzero: bool = True) -> str:
        s = "".join(self.rng.choice(string.digits) for _ in range(n))
        if first_nonzero and s[0] == "0":
            s = str(self.rng.randint(1, 9)) + s[1:]
        return s

    def value(self, ent: str, lang: str) -> tuple[str, dict]:
        return getattr(self, "v_" + ent.lower())(lang)

    def v_tckn(self, lang):
        return self.fk["tr_TR"].ssn(), {}

    def v_vkn(self, lang):
        body = self.digits(9, first_nonzero=False)
        return body + std_vkn.calc_check_digit(body), {}

    def v_iban(self, lang):
        if lang == "tr":
            iban = self.fk["tr_TR"].iban()
        else:
            iban = self.rng.choice([self.fk["en_GB"], self.fk["de_DE"], self.fk["fr_FR"], self.fk["tr_TR"]]).iban()
        if self.rng.random() < 0.6:
            iban = " ".join(iban[i:i + 4] for i in range(0, len(iban), 4))
        return iban, {}

    def v_credit_card(self, lang):
        kind = self.rng.choice(["visa16", "mastercard", "amex", "discover", "jcb16", "visa16", "mastercard"])
        num = self.fk["en_US"].credit_card_number(kind)
        style = self.rng.random()
        if style < 0.5:
            if len(num) == 15:
                num = f"{num[:4]} {num[4:10]} {num[10:]}"
            else:
                num = " ".join(num[i:i + 4] for i in range(0, len(num), 4))
        elif style < 0.7:
            num = "-".join(num[i:i + 4] for i in range(0, len(num), 4))
        return num, {}

    def v_phone(self, lang):
        region = {"tr": "TR", "ru": "RU", "en": self.rng.choice(["US", "GB", "US"])}[lang]
        if self.rng.random() < 0.1:
            region = self.rng.choice(["TR", "RU", "US", "GB", "DE"])
        for _ in range(200):
            if region == "TR":
                nsn = self.rng.choice(["5" + self.rng.choice("0345") + self.digits(8, False),
                                       self.rng.choice(["212", "216", "312", "232"]) + self.digits(7, False)])
            elif region == "RU":
                nsn = self.rng.choice(["9" + self.digits(9, False), self.rng.choice(["495", "499", "812"]) + self.digits(7, False)])
            elif region == "US":
                nsn = str(self.rng.randint(201, 989)) + str(self.rng.randint(200, 999)) + self.digits(4, False)
            elif region == "GB":
                nsn = "7" + self.digits(9, False)
            else:
                nsn = "15" + self.digits(9, False)
            cc = phonenumbers.country_code_for_region(region)
            try:
                num = phonenumbers.parse(f"+{cc}{nsn}")
            except phonenumbers.NumberParseException:
                continue
            if phonenumbers.is_valid_number(num):
                break
        else:
            raise RuntimeError("no valid phone generated")
        style = self.rng.random()
        home = region == {"tr": "TR", "ru": "RU"}.get(lang) or (lang == "en" and region in ("US", "GB"))
        if not home:  # another country's number is written with its country code
            style = self.rng.choice([0.0, 0.8])
        if style < 0.35:
            out = phonenumbers.format_number(num, phonenumbers.PhoneNumberFormat.INTERNATIONAL)
        elif style < 0.75:
            out = phonenumbers.format_number(num, phonenumbers.PhoneNumberFormat.NATIONAL)
            if region == "TR" and self.rng.random() < 0.5:
                n = str(num.national_number)
                out = f"0{n[:3]} {n[3:6]} {n[6:8]} {n[8:]}"
        elif style < 0.9:
            out = phonenumbers.format_number(num, phonenumbers.PhoneNumberFormat.E164)
        else:
            n = str(num.national_number)
            out = {"TR": "0" + n, "RU": "8" + n}.get(region, n)
        return out, {}

    def v_email(self, lang):
        loc = {"tr": "tr_TR", "ru": "ru_RU", "en": "en_US"}[lang]
        return self.fk[loc].email(), {}

    def v_ip_address(self, lang):
        if self.rng.random() < 0.8:
            return self.fk["en_US"].ipv4_public(), {}
        return self.fk["en_US"].ipv6(), {}

    def v_inn(self, lang):
        f = self.fk["ru_RU"]
        return (f.individuals_inn() if self.rng.random() < 0.5 else f.businesses_inn()), {}

    def v_snils(self, lang):
        while True:
            s = self.fk["ru_RU"].snils()
            if int(s[:9]) > 1001998:
                break
        if self.rng.random() < 0.7:
            s = f"{s[:3]}-{s[3:6]}-{s[6:9]} {s[9:]}"
        return s, {}

    def v_ogrn(self, lang):
        return self.fk["ru_RU"].businesses_ogrn(), {}

    def v_ogrnip(self, lang):
        return self.fk["ru_RU"].individuals_ogrn(), {}

    def v_passport(self, lang):
        if lang == "ru":
            p = self.fk["ru_RU"].passport_number().replace(" ", "")
            style = self.rng.random()
            return (f"{p[:2]} {p[2:4]} {p[4:]}" if style < 0.5 else f"{p[:4]} {p[4:]}" if style < 0.9 else p), {}
        if lang == "tr":
            return self.rng.choice("UPSZ") + self.digits(8, False), {}
        return self.fk["en_US"].passport_number(), {}

    def v_license_plate(self, lang):
        prov = f"{self.rng.randint(1, 81):02d}"
        letters = "ABCDEFGHJKLMNPRSTUVYZ"
        nl = self.rng.choice([1, 2, 3])
        nd = {1: self.rng.choice([4, 5]), 2: self.rng.choice([3, 4]), 3: self.rng.choice([2, 3])}[nl]
        lt = "".join(self.rng.choice(letters) for _ in range(nl))
        num = self.digits(nd)
        return (f"{prov} {lt} {num}" if self.rng.random() < 0.8 else f"{prov}{lt}{num}"), {}

    def v_date_of_birth(self, lang):
        # Faker's date_of_birth counts back from today: the set would change at midnight. The same draw between
        # fixed dates (18 to 85 years before 2026-01-01) keeps it the same on every day.
        d = self.fk["en_US"].date_time_ad(start_datetime=_DOB_FROM, end_datetime=_DOB_TO).date()
        style = self.rng.random()
        tr_m = ["Ocak", "Şubat", "Mart", "Nisan", "Mayıs", "Haziran", "Temmuz", "Ağustos", "Eylül", "Ekim", "Kasım", "Aralık"]
        ru_m = ["января", "февраля", "марта", "апреля", "мая", "июня", "июля", "августа", "сентября", "октября",
                "ноября", "декабря"]
        if style < 0.5:
            sep = "/" if lang == "en" and self.rng.random() < 0.5 else "."
            if lang == "en" and sep == "/":
                return f"{d.month:02d}/{d.day:02d}/{d.year}", {}
            return f"{d.day:02d}{sep}{d.month:02d}{sep}{d.year}", {}
        if style < 0.65:
            return d.isoformat(), {}
        if lang == "tr":
            return f"{d.day} {tr_m[d.month - 1]} {d.year}", {}
        if lang == "ru":
            return f"{d.day} {ru_m[d.month - 1]} {d.year} г.", {}
        return d.strftime("%B %d, %Y").replace(" 0", " "), {}

    def v_address(self, lang):
        if lang == "tr":
            district, city = self.rng.choice(TR_CITIES)
            parts = [f"{self.rng.choice(TR_NEIGHBOURHOODS)} {self.rng.choice(['Mah.', 'Mahallesi'])}",
                     f"{self.rng.choice(TR_STREETS)} {self.rng.choice(['Sok.', 'Sokak', 'Cad.', 'Caddesi'])}",
                     f"No: {self.rng.randint(1, 180)}"]
            if self.rng.random() < 0.6:
                parts.append(f"Daire: {self.rng.randint(1, 30)}")
            return " ".join(parts) + f" {district}/{city}", {}
        if lang == "ru":
            addr = self.fk["ru_RU"].street_address()
            if self.rng.random() < 0.5:
                addr += f", кв. {self.rng.randint(1, 300)}"
            if self.rng.random() < 0.4:
                addr = f"г. {self.fk['ru_RU'].city_name()}, " + addr
            return addr, {}
        addr = self.fk["en_US"].street_address()
        if self.rng.random() < 0.5:
            f = self.fk["en_US"]
            addr += f", {f.city()}, {f.state_abbr()} {f.zipcode()}"
        return addr, {}

    def v_secret(self, lang):
        kind = self.rng.choice(["aws", "github", "sk", "jwt", "password", "url", "slack", "private_key", "bearer"])
        alnum = string.ascii_letters + string.digits
        rnd = lambda n, chars=alnum: "".join(self.rng.choice(chars) for _ in range(n))  # noqa: E731
        if kind == "aws":
            return "AKIA" + rnd(16, string.ascii_uppercase + string.digits), {}
        if kind == "github":
            return "ghp_" + rnd(36), {}
        if kind == "sk":
            return "sk-proj-" + rnd(40, alnum + "_-"), {}
        if kind == "slack":
            return f"xoxb-{self.digits(11)}-{self.digits(12)}-{rnd(24)}", {}
        if kind == "jwt":
            return f"eyJhbGciOiJIUzI1NiJ9.eyJ{rnd(30)}.{rnd(43, alnum + '_-')}", {}
        if kind == "private_key":
            body = "\n".join(rnd(64, alnum + "+/") for _ in range(4))
            return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----", {}
        pw = rnd(3, string.ascii_uppercase) + rnd(5, string.ascii_lowercase) + self.digits(3) + self.rng.choice("!?#")
        if kind == "password":
            key = {"tr": self.rng.choice(["şifre", "Şifrem", "parola"]), "ru": "пароль",
                   "en": self.rng.choice(["password", "pwd"])}[lang]
            return pw, {"prefix": f"{key}: "}
        if kind == "bearer":
            return rnd(32, alnum + "._-"), {"prefix": "Authorization: Bearer "}
        user = self.rng.choice(["admin", "app", "svc_backup", "deploy"])
        return f"{user}:{pw}", {"prefix": "postgres://", "suffix": "@db.internal.example.com:5432/app"}

    def v_person(self, lang, oov: bool | None = None):
        if oov is None:
            oov = self.rng.random() < 0.25
        if lang == "tr":
            if oov:
                f = self.fk["az_AZ"]
                for _ in range(50):
                    first, last = f.first_name(), f.last_name()
                    if first.lower() not in self.latin_known:
                        break
                return f"{first} {last}", {"oov": True, "first": first}
            f = self.fk["tr_TR"]
            if self.rng.random() < 0.6:
                first, last = self.rng.choice(self.tr_first), self.rng.choice(self.tr_last + list(f.provider("faker.providers.person").last_names))
            else:
                first, last = f.first_name(), f.last_name()
            return f"{first} {last}", {"first": first}
        if lang == "ru":
            if oov:
                f = self.fk["uk_UA"]
                for _ in range(50):
                    first, last = f.first_name(), f.last_name()
                    if first.lower() not in self.ru_known and not any(c in first + last for c in "іїєґІЇЄҐ'"):
                        break
                return f"{first} {last}", {"oov": True, "first": first}
            f = self.fk["ru_RU"]
            style = self.rng.random()
            if style < 0.4:
                return f"{f.last_name_male()} {f.first_name_male()} {f.middle_name_male()}", {}
            if style < 0.6:
                return f"{f.first_name_female()} {f.last_name_female()}", {"first": None}
            if style < 0.8:
                return f"{f.first_name_male()} {f.last_name_male()}", {}
            return f"{f.first_name_male()} {f.middle_name_male()}", {}
        if oov:
            f = self.fk[self.rng.choice(["nl_NL", "sv_SE", "da_DK", "fi_FI"])]
            for _ in range(50):
                first, last = f.first_name(), f.last_name()
                if first.lower() not in self.latin_known and " " not in first:
                    break
            return f"{first} {last}", {"oov": True, "first": first}
        f = self.fk["en_US"]
        first, last = f.first_name(), f.last_name()
        return f"{first} {last}", {"first": first}

    # ---------------------------------------------------------------- negatives
    def negative(self, lang: str) -> str:
        tpl = self.rng.choice(NEGATIVES[lang])
        d = self.fk["en_US"].date_between("-2y", "+30d")
        bad_tckn = self.digits(11)
        while checks.tckn_valid(bad_tckn):
            bad_tckn = self.digits(11)
        iban = self.fk["tr_TR"].iban() if lang != "en" else self.fk["en_GB"].iban()
        while True:
            bad = iban[:2] + f"{self.rng.randint(2, 98):02d}" + iban[4:]
            if not checks.iban_valid(bad):
                break
        if self.rng.random() < 0.6:
            bad = " ".join(bad[i:i + 4] for i in range(0, len(bad), 4))
        fields = {
            "order": self.digits(self.rng.choice([6, 8, 9, 10, 11, 12])),
            "track": self.digits(self.rng.choice([12, 13, 14])),
            "date": self.rng.choice([d.strftime("%d.%m.%Y"), d.isoformat(), d.strftime("%d/%m/%Y")]),
            "amount_tr": f"{self.rng.randint(1, 99)}.{self.rng.randint(100, 999)},{self.rng.randint(10, 99)}",
            "amount_ru": f"{self.rng.randint(1, 99)} {self.rng.randint(100, 999)}",
            "amount_en": f"{self.rng.randint(1, 9)},{self.rng.randint(100, 999)}.{self.rng.randint(10, 99)}",
            "code": self.rng.choice([f"{''.join(self.rng.choice('ABCDEFGHKLMNPRSTXZ') for _ in range(2))}-{self.digits(5)}",
                                     f"{self.digits(4)}-XL-{self.digits(2)}", f"{self.digits(3)}-{self.digits(3)}-{self.digits(3)}"]),
            "bad_tckn": bad_tckn,
            "bad_iban": bad,
            "version": f"{self.rng.randint(1, 9)}.{self.rng.randint(0, 20)}.{self.rng.randint(0, 9)}.{self.rng.randint(0, 200)}",
            "time": f"{self.rng.randint(8, 20)}:{self.rng.choice(['00', '15', '30', '45'])}",
        }
        return tpl.format(**fields)

    # ---------------------------------------------------------------- records
    def sentence(self, lang: str, ent: str) -> tuple[list, dict]:
        """[(text, label-or-None)] segments of one sentence planting one value of `ent`."""
        value, info = self.value(ent, lang)
        tpl = self.rng.choice(TEMPLATES[lang][ent])
        before, after = tpl.split("{v}")
        if ent == "SECRET" and tpl == "{v}" and "prefix" not in info:
            before = {"tr": "Anahtar: ", "ru": "Ключ: ", "en": "Key: "}[lang]
        before += info.get("prefix", "")
        after = info.get("suffix", "") + after
        label = {"entity": ent, "oov": bool(info.get("oov"))}
        return [(before, None), (value, label), (after, None)], info

    def record(self, idx: int) -> dict:
        rng = self.rng
        lang = LANGS[idx % 3]
        mix = MIX[lang]
        ents = list(mix)
        weights = [mix[e] for e in ents]
        n_ent = rng.choice([0, 1, 2, 2, 3, 3, 4, 5])
        sentences = []
        person_first, person_oov = None, False
        for ent in rng.choices(ents, weights, k=n_ent):
            segs, info = self.sentence(lang, ent)
            sentences.append(segs)
            if ent == "PERSON" and info.get("first"):
                person_first = info["first"]
                person_oov = bool(info.get("oov"))  # the first name of an out-of-list name is out of the lists too
        for _ in range(rng.choice([0, 1, 1, 2])):
            sentences.append([(self.negative(lang), None)])
        if person_first and lang in ("tr", "en") and rng.random() < 0.5:
            pre, post = (("Teşekkürler ", " Hanım, kaydınızı güncelledim.") if lang == "tr"
                         else ("Thanks ", ", I've updated your details."))
            if lang == "tr" and rng.random() < 0.5:
                post = " Bey, kaydınızı güncelledim."
            sentences.append([(pre, None), (person_first, {"entity": "PERSON", "oov": person_oov}), (post, None)])
        rng.shuffle(sentences)
        target = rng.randint(620, 780)
        kind = "chat" if rng.random() < 0.6 else "text"
        total = sum(len(t) for s in sentences for t, _ in s)
        fillers = rng.sample(FILLERS[lang], len(FILLERS[lang]))
        while total < target:
            f = fillers.pop() if fillers else rng.choice(FILLERS[lang])
            sentences.insert(rng.randint(0, len(sentences)), [(f, None)])
            total += len(f) + 1
        labels = []
        if kind == "text":
            fields = [sentences]
        else:
            n_msg = max(2, min(6, len(sentences) // 2 + 1))
            fields = [[] for _ in range(n_msg)]
            for i, s in enumerate(sentences):
                fields[min(n_msg - 1, i * n_msg // len(sentences))].append(s)
            fields = [f for f in fields if f]
        contents = []
        for fi, sents in enumerate(fields):
            text = ""
            for si, segs in enumerate(sents):
                if si:
                    text += " "
                for seg, label in segs:
                    if label is not None:
                        labels.append({**label, "field": fi, "start": len(text), "end": len(text) + len(seg),
                                       "value": seg})
                    text += seg
            contents.append(text)
        if kind == "text":
            rec = {"kind": "text", "messages": None, "text": contents[0]}
        else:
            msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": c} for i, c in enumerate(contents)]
            rec = {"kind": "chat", "messages": msgs, "text": None}
        rec["source"] = {"file": "bench/pii/eval.jsonl", "line": idx + 1}
        rec["meta"] = "{}"
        rec["id"] = record_id(rec)
        return {"lang": lang, "record": rec, "labels": labels}


# ------------------------------------------------------------------------------------------ name shapes
# Issue 19: whole names (initials, middle names, particles, patronymics), later mentions of the same person by
# surname or first name alone, the name and an e-mail in tool-call arguments, and titles of works, trophies,
# teams and institutions that must stay. Lists below are the planted shapes; Faker gives the names.
EN_PARTICLES = ["van", "de", "von", "van der", "da", "bin", "al-"]
EN_PARTICLE_LAST = ["Berg", "Gaulle", "Trapp", "Meer", "Silva", "Salman", "Bashir", "Dijk", "Rossi", "Hassan"]
RU_LATIN = {"first": ["Ivan", "Sergei", "Dmitry", "Alexei", "Olga", "Natalia", "Mikhail", "Pavel"],
            "middle_m": ["Petrovich", "Ivanovich", "Sergeevich", "Mikhailovich", "Nikolaevich"],
            "middle_f": ["Petrovna", "Ivanovna", "Andreevna", "Nikolaevna"],
            "last_m": ["Sidorov", "Ivanov", "Kuznetsov", "Volkov", "Sokolov"],
            "last_f": ["Sidorova", "Smirnova", "Popova", "Volkova"]}
_RU_LATIN_FEMALE = ("Olga", "Natalia")
TITLES = {
    "en": ["The Selfish Gene", "Stanley Cup", "Tampa Bay Lightning", "Orlando Magic", "Charlotte Hornets",
           "Vince Lombardi Trophy", "The Great Gatsby", "Johns Hopkins University", "Lincoln Memorial", "Davis Cup",
           "Ryder Cup", "Nobel Prize", "Dallas Mavericks", "Carolina Hurricanes", "Houston Rockets", "Grey Cup",
           "The Old Man and the Sea", "Harry Potter", "Morgan Stanley", "Jackson Hole"],
    "tr": ["Türkiye Kupası", "Sabiha Gökçen Havalimanı", "Fenerbahçe Spor Kulübü", "Altın Portakal Ödülü",
           "Orhan Kemal Roman Ödülü", "Hababam Sınıfı", "Atatürk Kültür Merkezi", "Ali Sami Yen Stadyumu",
           "Barış Manço Müzesi", "Kemal Sunal Parkı", "Ahmet Hamdi Tanpınar Lisesi", "Süper Lig", "Kuyucaklı Yusuf"],
    "ru": ["Кубок Стэнли", "«Анна Каренина»", "«Евгений Онегин»", "«Мастер и Маргарита»", "Аэропорт Шереметьево",
           "Большой театр", "«Война и мир»", "Кубок Гагарина", "Премия Андрея Белого", "Музей Пушкина",
           "Театр Ленсовета", "улица Ленина"],
}
TITLE_TEMPLATES = {
    "en": ["By the way, have you heard about {t} lately?", "My son talks about {t} all the time.",
           "Unrelated, but {t} was on the news again."],
    "tr": ["Bu arada {t} hakkında ne düşünüyorsunuz?", "Oğlum sürekli {t} konuşuyor.", "Haberlerde yine {t} vardı."],
    "ru": ["Кстати, что вы думаете про {t} сейчас?", "Сын всё время говорит про {t} и больше ни о чём.",
           "В новостях опять показывали {t} вчера."],
}
NAME_INTROS = {
    "en": ["Hi, this is {v}, I have a question about my order.", "I spoke with {v} yesterday about the refund.",
           "The parcel was signed for by {v}.", "Please forward this to {v} in accounting."],
    "tr": ["Merhaba, ben {v}, siparişim hakkında yazıyorum.", "Dün {v} ile görüştüm, iade onaylandı.",
           "Kargo {v} adına teslim edildi.", "Hesap sahibi {v} olarak görünüyor."],
    "ru": ["Здравствуйте, меня зовут {v}, вопрос по заказу.", "Договор подписал {v} вчера вечером.",
           "Получатель: {v}", "Заявку оформил {v}, проверьте данные."],
}
# later mentions: {last} / {first} alone (nominative; a Turkish suffix after an apostrophe)
LATER = {
    "en": [("Thank you, Mr. {last}, I have updated the ticket.", "last"), ("{last} confirmed the address today.", "last"),
           ("I told {first} that the parcel is on its way.", "first"), ("Sure, {first}. Anything else?", "first")],
    "tr": [("{last} Bey, kaydınızı güncelledim.", "last"), ("Teşekkürler {first} Hanım, iade yapıldı.", "first"),
           ("{first}'in siparişi yarın yola çıkacak.", "first"), ("Dosyayı {last} adına açtım.", "last")],
    "ru": [("{last} подтвердил адрес доставки.", "last"), ("Спасибо, {first}, заявка обновлена.", "first"),
           ("Курьер передаст посылку, {last} в курсе.", "last")],
}


class NameShapes(Generator):
    """Chats of one planted person each (see the section's comment). Labels as generate()'s, plus "shape";
    rows also carry "titles" (negatives: field, start, end, value) and "tool_values" (values planted in the
    tool-call arguments and the tools column, with the key they are under)."""

    def full_name(self, lang: str) -> tuple[str, str, str, str]:
        """(full name, shape, first, last)."""
        rng = self.rng
        up = "ABCDEFGHJKLMNPRSTW"
        if lang == "en":
            f = self.fk["en_US"]
            first, last = f.first_name(), f.last_name()
            shape = rng.choice(["initial", "middle", "particle", "leading_initial", "patronymic"])
            if shape == "initial":
                return f"{first} {rng.choice(up)}. {last}", shape, first, last
            if shape == "middle":
                return f"{first} {f.first_name()} {last}", shape, first, last
            if shape == "particle":
                p, last = rng.choice(EN_PARTICLES), rng.choice(EN_PARTICLE_LAST)
                return (f"{first} {p}{last}" if p.endswith("-") else f"{first} {p} {last}"), shape, first, last
            if shape == "leading_initial":
                return f"{rng.choice(up)}. {first} {last}", shape, first, last
            first = rng.choice(RU_LATIN["first"])
            g = "f" if first in _RU_LATIN_FEMALE else "m"
            last = rng.choice(RU_LATIN["last_" + g])
            return f"{first} {rng.choice(RU_LATIN['middle_' + g])} {last}", shape, first, last
        if lang == "tr":
            f = self.fk["tr_TR"]
            first, last = rng.choice(self.tr_first), rng.choice(self.tr_last)
            shape = rng.choice(["two_first", "initial", "patronymic", "three"])
            if shape == "two_first":
                return f"{first} {rng.choice(self.tr_first)} {last}", shape, first, last
            if shape == "initial":
                return f"{first} {rng.choice(up)}. {last}", shape, first, last
            if shape == "patronymic":
                fa = self.fk["az_AZ"]
                first, last = fa.first_name_male(), fa.last_name()
                return f"{first} {fa.first_name_male()} oğlu {last}", shape, first, last
            return f"{first} {f.first_name()} {last}", shape, first, last
        f = self.fk["ru_RU"]
        first, middle, last = f.first_name_male(), f.middle_name_male(), f.last_name_male()
        shape = rng.choice(["fio", "surname_first", "initials_after", "initials_before"])
        if shape == "fio":
            return f"{first} {middle} {last}", shape, first, last
        if shape == "surname_first":
            return f"{last} {first} {middle}", shape, first, last
        if shape == "initials_after":
            return f"{last} {first[0]}. {middle[0]}.", shape, None, last
        return f"{first[0]}. {middle[0]}. {last}", shape, None, last

    def name_record(self, idx: int) -> dict:
        rng = self.rng
        lang = LANGS[idx % 3]
        full, shape, first, last = self.full_name(lang)
        turns: list[list] = []  # per turn, segments (text, label or None)
        label = {"entity": "PERSON", "oov": shape == "patronymic" and lang == "tr", "shape": shape}
        intro = rng.choice(NAME_INTROS[lang])
        a, b = intro.split("{v}")
        turns.append([(a, None), (full, label), (b, None)])
        later = [(t, k) for t, k in LATER[lang] if k == "last" or first]
        tpl, key = rng.choice(later)
        value = last if key == "last" else first
        a, b = tpl.split("{" + key + "}")
        turns.append([(a, None), (value, {**label, "shape": f"later_{key}"}), (b, None)])
        title = rng.choice(TITLES[lang])
        a, b = rng.choice(TITLE_TEMPLATES[lang]).split("{t}")
        turns.append([(a, None), (title, "TITLE"), (b, None)])
        email = self.fk["en_US"].email()
        turns.append([({"en": "Done, the confirmation is on its way.", "tr": "Tamamdır, onay yolda.",
                        "ru": "Готово, подтверждение отправлено."}[lang], None)])
        labels, titles, contents = [], [], []
        for fi, segs in enumerate(turns):
            text = ""
            for seg, lab in segs:
                if lab == "TITLE":
                    titles.append({"field": fi, "start": len(text), "end": len(text) + len(seg), "value": seg})
                elif lab is not None:
                    labels.append({**lab, "field": fi, "start": len(text), "end": len(text) + len(seg), "value": seg})
                text += seg
            contents.append(text)
        msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": c} for i, c in enumerate(contents)]
        args = {"customer_name": full, "recipient": email,
                "note": {"en": f"call back {value}", "tr": f"{value} geri aranacak", "ru": f"перезвонить: {value}"}[lang]}
        call = {"type": "function", "function": {"name": "create_ticket",
                                                   "arguments": args if idx % 2 else json.dumps(args, ensure_ascii=False)}}
        msgs[1]["tool_calls"] = [call]
        tools = [{"type": "function", "function": {"name": "create_ticket",
                                                   "description": f"Opens a ticket; escalations go to {full}."}}]
        rec = {"kind": "chat", "messages": msgs, "tools": tools, "text": None,
               "source": {"file": "bench/pii/names.jsonl", "line": idx + 1}, "meta": "{}"}
        rec["id"] = record_id(rec)
        tool_values = [{"key": "customer_name", "value": full, "entity": "PERSON"},
                       {"key": "recipient", "value": email, "entity": "EMAIL"},
                       {"key": "note", "value": value, "entity": "PERSON"},
                       {"key": "tools", "value": full, "entity": "PERSON"}]
        return {"lang": lang, "record": rec, "labels": labels, "titles": titles, "tool_values": tool_values,
                "name_set": True}


def generate_names(n: int, seed: int = 7) -> list[dict]:
    """The name-shape chats (NameShapes), their own random stream: generate()'s records stay what they were."""
    gen = NameShapes(seed + 1000)
    return [gen.name_record(i) for i in range(n)]


def field_texts(rec: dict) -> list[str]:
    """The content fields of a record in label order ("field" indexes into this list)."""
    if rec.get("messages") is not None:
        return [m["content"] for m in rec["messages"]]
    return [rec["text"]]


def generate(n: int, seed: int = 7) -> list[dict]:
    gen = Generator(seed)
    return [gen.record(i) for i in range(n)]


def long_chats(rows: list[dict], turns: int = 6) -> list[dict]:
    """The same planted values as long support chats: `turns` records of one language become one chat, each
    record's content (its fields joined by a blank line, ~700 characters) one turn; labels move with their
    text. Records with titles or tool values (the name-shape chats) are left out, and so is a remainder of
    fewer than `turns` records of a language."""
    by_lang: dict[str, list[dict]] = {}
    for row in rows:
        if not row.get("name_set"):
            by_lang.setdefault(row["lang"], []).append(row)
    chats = []
    for lang in LANGS:
        group = by_lang.get(lang, [])
        for g in range(0, len(group) - turns + 1, turns):
            contents, labels = [], []
            for k, row in enumerate(group[g:g + turns]):
                fields = field_texts(row["record"])
                offsets = [sum(len(f) + 2 for f in fields[:i]) for i in range(len(fields))]
                contents.append("\n\n".join(fields))
                labels += [{**lab, "field": k, "start": offsets[lab["field"]] + lab["start"],
                            "end": offsets[lab["field"]] + lab["end"]} for lab in row["labels"]]
            msgs = [{"role": "user" if k % 2 == 0 else "assistant", "content": c} for k, c in enumerate(contents)]
            rec = {"kind": "chat", "messages": msgs, "tools": None, "text": None,
                   "source": {"file": "bench/pii/long_chats.jsonl", "line": len(chats) + 1}, "meta": "{}"}
            rec["id"] = record_id(rec)
            chats.append({"lang": lang, "record": rec, "labels": labels})
    return chats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default="runs/bench_pii/eval.jsonl")
    args = ap.parse_args()
    rows = generate(args.records, args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    n_labels = sum(len(r["labels"]) for r in rows)
    print(f"{len(rows)} records, {n_labels} planted values -> {out}")


if __name__ == "__main__":
    main()
