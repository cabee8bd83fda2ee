"""The sentences of the real-names evaluation: written for it and kept here only (the recognizers' rules and
tests are not written against them).

Slots: {full} {first} {last}, {io} (Russian: first name and patronymic), {fio} (surname, first name,
patronymic), optionally with a form: ":gen" ":dat" ":acc" ":abl" ":loc" (Turkish, an apostrophe and a suffix
after the name), ":gen" ":dat" ":acc" ":ins" ":prep" (Russian, the name declined);
{a} is "а" after a woman's name in Russian past-tense verbs, "" after a man's; {mr} is Mr. or Ms.; {bh} is
Bey or Hanım (with a case: "Bey'e", "Hanım'ı"). {V} is an identifier.
[[...]] marks a hard negative (text that must stay).
"""
from __future__ import annotations

# ---------------------------------------------------------------------------------------------- names
# shape -> templates. "cue": a word says a name follows; "nocue": nothing does; "greeting", "signature";
# lower and caps reuse cue and nocue with the whole sentence re-cased.
NAMES = {
    "tr": {
        "cue": ["İsim soyisim: {full}", "Müşteri adı: {full}", "Bu hattı {full} kullanıyor.",
                "Ad Soyad: {full}", "Merhaba, ben {full}. Dün verdiğim sipariş hâlâ hazırlanıyor görünüyor.",
                "Adım {full}, geçen hafta sizinle yazışmıştık.", "Sipariş {full} adına oluşturulmuş.",
                "Alıcı: {full}, kapıda ödeme seçilmiş.", "Hat sahibi {full} olarak kayıtlı.",
                "Talep sahibi: {full}", "Kayıtlardaki isim {full} görünüyor, doğru mu?"],
        "nocue": ["{full} dün aradı.", "{full} dün aradı, faturadaki fazla ücreti sordu.",
                  "{full} bugün mağazaya gelip eski cihazı teslim etti.",
                  "Sabah {full} tekrar yazdı, kargo hâlâ dağıtıma çıkmamış.",
                  "{full} iade kodunun çalışmadığını söylüyor.",
                  "Az önce {full} ile konuştum, yarın şubeye uğrayacak.",
                  "Kuryenin getirdiği paketi {full} teslim almış.",
                  "{full} aboneliğini iptal etmek istiyor ama cayma bedeli soruyor."],
        "greeting": ["Merhaba {first} {bh}, talebinizi aldım.", "Merhaba {first} {bh}, nasıl yardımcı olabilirim?",
                     "Selam {first}, siparişin kargoya verildi.", "Günaydın {first} {bh}!",
                     "İyi akşamlar {first} {bh}, beklettiğim için kusura bakmayın.", "Tamamdır {first}, hallediyorum."],
        "signature": ["Saygılarımla,\n{full}", "İyi çalışmalar,\n{first}", "Teşekkürler,\n{full}\nMuhasebe birimi",
                      "Kolay gelsin.\n{full}"],
        # later mentions: the surname or the first name alone, plain, with Bey/Hanım, or with a suffix
        "later": ["{last} faturanın kopyasını istedi.", "Dosyayı {last} adına güncelledim.",
                  "{first} az önce tekrar yazdı.", "Not: {last} cuma gününe kadar bekleyebileceğini söyledi."],
        "bey_hanim": ["{last} {bh:dat} bilgi verdim.", "{last} {bh} tekrar aradı.", "{first} {bh:dat} dönüş yapılacak.",
                      "{last} {bh} iadeyi kabul etmedi.", "{first} {bh:gen} siparişi yolda.",
                      "Yarın {last} {bh:acc} arayacağım."],
        "suffix": ["{last:gen} talebi onaylandı.", "Kargoyu {last:dat} teslim ettik.", "{first:acc} aradım, açmadı.",
                   "Belgeleri {last:abl} aldım.", "Faturanın aslı {first:loc} kalmış.",
                   "{last:gen} hattı dün kapandı."],
    },
    "ru": {
        "cue": ["Меня зовут {full}.", "ФИО: {full}", "Клиент: {full}", "Получатель — {full}.",
                "Это {full}, пишу по поводу возврата.", "Здравствуйте, меня зовут {full}, заказ так и не пришёл.",
                "Заказчик: {full}, оплата картой.", "Договор оформлен на {full}.",
                "Контактное лицо: {full}", "Владелец номера — {full}.", "ФИО: {fio}",
                "Клиент: {fio}, договор от марта."],
        "nocue": ["{full} звонил{a} вчера насчёт возврата.", "{full} снова написал{a} в чат, ждёт ответа.",
                  "Вчера {full} забрал{a} посылку из пункта выдачи.", "{full} жалуется на задержку доставки.",
                  "Сегодня утром {full} оставил{a} отзыв на сайте.",
                  "Поговорили с {full:ins}, вопрос закрыт.", "{full} просит перенести доставку на субботу."],
        "greeting": ["Здравствуйте, {first}!", "Добрый день, {first}. Проверяю ваш заказ.", "Спасибо, {first}!",
                     "{first}, добрый вечер! Курьер уже выехал.", "Привет, {first}, всё получилось?",
                     "Хорошо, {first}, передам коллегам.", "Здравствуйте, {io}!", "{io}, добрый день!"],
        "signature": ["С уважением,\n{full}", "С уважением, {full}", "Спасибо!\n{first}",
                      "--\n{full}\nотдел продаж"],
        "later": ["{last} подтвердил{a} адрес.", "{first} перезвонит после обеда.", "Итог: {last} не против обмена.",
                  "{io} просил{a} перезвонить.",
                  "Уточнил у {last:gen}, оплата прошла."],
        # Russian cases: the full name or the surname declined
        "case": ["Передайте {full:dat}, что посылка пришла.", "У {last:gen} не проходит оплата.",
                 "Курьер не застал {full:acc} дома.", "Договорились с {last:ins} на пятницу.",
                 "Напомните {last:dat} про документы.", "Жду ответа от {full:gen}.",
                 "Отправил чек {first:dat} на почту.", "Вопрос о {full:prep} передан юристу.",
                 "Позвоните {first:dat} после шести."],
    },
    "en": {
        "cue": ["My name is {full}.", "Customer name: {full}", "Account holder: {full}", "Full name: {full}",
                "Hi, this is {full}, I ordered a kettle last week.", "Name on the order: {full}",
                "The line is registered to {full}.", "Ship to: {full}", "Caller: {full}, wants a callback."],
        "nocue": ["{full} called yesterday about the refund.", "{full} says the parcel never came.",
                  "{full} dropped by the store to pick up the order.",
                  "Yesterday {full} emailed twice about the invoice.", "This morning {full} asked for a replacement.",
                  "{full} wants the delivery moved to Saturday.", "Spoke to {full} just now, all sorted."],
        "greeting": ["Got it {first}", "Got it {first}, I'll check.", "Thanks {first}!", "Hi {first},",
                     "Hey {first}, quick question about the order.", "Sure thing {first}, one moment.",
                     "Good morning {first}!"],
        "signature": ["Best,\n{full}", "Cheers,\n{first}", "Kind regards,\n{full}\nAccounts Payable",
                      "Thanks,\n{full}"],
        "later": ["{last} confirmed the new address.", "{first} will call back after lunch.",
                  "{mr} {last} agreed to the exchange.", "{last}'s order is on hold until Monday.",
                  "{mr} {last} asked for a copy of the receipt.",
                  "Told {first} the parcel is on its way."],
    },
}

# the tool call an assistant turn makes with the customer's name in its arguments
# the call's free-text note: half of the time it names the person too ("tool" shape, in a value under no
# person-named key)
TOOL_NOTES = {"tr": ["müşteri geri aranacak", "{last} {bh:dat} iade bilgisi verilecek", "{first} yarın aranacak"],
              "ru": ["перезвонить клиенту", "перезвонить {first:dat} завтра", "{last} ждёт возврат"],
              "en": ["call the customer back", "call {first} back tomorrow", "{last} waits for the refund"]}

# ---------------------------------------------------------------------------------------------- fillers
FILL_USER = {
    "tr": ["Siparişim üç gündür aynı depoda bekliyor.", "İade kodunu girdim ama hata veriyor.",
           "Faturada iki kez ücret alınmış gibi görünüyor.", "Ürün eksik geldi, kutuda şarj aleti yoktu.",
           "Kampanya bitmeden sipariş vermiştim.", "Kapıda ödeme seçeneği neden kalktı?",
           "Numara taşıma işlemi ne kadar sürer?", "Modem ışığı kırmızı yanıp sönüyor.",
           "Teşekkürler, bekliyorum.", "Yarın evde olmayacağım, komşuya bırakılabilir mi?",
           "Uygulamada sepetim boşalıyor.", "Kargo firması adresimi bulamamış."],
    "ru": ["Заказ третий день висит на складе.", "Ввожу промокод, а он не применяется.",
           "С карты списали деньги дважды.", "В коробке не оказалось зарядки.", "Почему пропала оплата при получении?",
           "Сколько занимает перенос номера?", "Роутер мигает красным.", "Спасибо, жду.",
           "Завтра меня не будет дома, можно оставить у соседей?", "Приложение само очищает корзину.",
           "Курьер не нашёл мой подъезд."],
    "en": ["My order has been stuck at the depot for three days.", "The return code gives me an error.",
           "It looks like I was charged twice.", "The charger was missing from the box.",
           "Why is cash on delivery gone?", "How long does porting my number take?",
           "The router light keeps blinking red.", "Thanks, I'll wait.",
           "I won't be home tomorrow, can you leave it with a neighbour?", "The app keeps emptying my cart.",
           "The courier couldn't find my building."],
}
FILL_AGENT = {
    "tr": ["Kontrol ediyorum, lütfen bekleyin.", "Talebinizi ilgili ekibe ilettim.",
           "Kargo firmasıyla görüşüp size dönüş yapacağım.", "İade tutarı 3-5 iş günü içinde hesabınızda olur.",
           "Başka bir konuda yardımcı olabilir miyim?", "Sistemde bir gecikme görünüyor, özür dileriz.",
           "Yeni bir gönderi oluşturdum.", "Bilgileriniz güncellendi."],
    "ru": ["Проверяю, минуту.", "Передал ваш запрос в отдел доставки.", "Свяжусь со службой доставки и вернусь к вам.",
           "Деньги вернутся в течение 3–5 рабочих дней.", "Могу ещё чем-то помочь?",
           "Вижу задержку в системе, приносим извинения.", "Оформил повторную отправку.", "Данные обновлены."],
    "en": ["Checking now, one moment please.", "I've passed this to the delivery team.",
           "I'll contact the carrier and get back to you.", "The refund will reach you in 3-5 business days.",
           "Anything else I can help with?", "I can see a delay in our system, sorry about that.",
           "I've created a new shipment.", "Your details are updated."],
}
FILL_NOTE = {
    "tr": ["Müşteri arandı, ulaşılamadı.", "İade süreci başlatıldı.", "Takip: perşembe tekrar aranacak.",
           "Şikayet kaydı kapatıldı.", "Ödeme onayı bekleniyor.", "Ürün servise gönderildi.",
           "Öncelik: yüksek.", "Sözleşme yenileme teklifi iletildi."],
    "ru": ["Клиенту звонили, не дозвонились.", "Запущен возврат.", "Контроль: перезвонить в четверг.",
           "Жалоба закрыта.", "Ждём подтверждения оплаты.", "Товар отправлен в сервис.", "Приоритет: высокий.",
           "Отправлено предложение о продлении договора."],
    "en": ["Called the customer, no answer.", "Return started.", "Follow-up: call again on Thursday.",
           "Complaint closed.", "Waiting for payment confirmation.", "Item sent for repair.", "Priority: high.",
           "Sent the renewal offer."],
}
NOTE_HEADS = {"tr": ["CRM notu", "Görüşme notu", "Arama kaydı"], "ru": ["Заметка CRM", "Запись звонка", "Комментарий"],
              "en": ["CRM note", "Call log", "Case note"]}

# ---------------------------------------------------------------------------------------------- hard negatives
NEGATIVES = {
    "tr": {
        "month_weekday": ["[[Eylül]] ayından beri fatura yüksek geliyor.", "[[Kasım]] kampanyası bitti mi?",
                          "[[Pazartesi]] kurye gelmedi.", "Teslimat [[Cuma]] gününe kaldı.",
                          "[[Ağustos]] sonunda taşınıyorum.", "Faturam [[Ocak]] ayında kesilmiş."],
        "city": ["Paket [[Denizli]] aktarma merkezinde.", "[[Manisa]] şubesi kapalıydı.",
                 "Ürün [[Mersin]] deposundan çıkacak.", "Adresim [[Ordu]] merkezde.",
                 "[[Batman]] için teslimat süresi ne?",
                 "[[Aydın]] şubesine yönlendirildim."],
        "brand_firm": ["[[Tommy Hilfiger]] ceketin bedeni küçük geldi.", "[[Calvin Klein]] parfüm kutusu ezik.",
                       "[[Arçelik]] servisi randevu vermedi.", "[[LC Waikiki]] mağazasından değişim yaptım.",
                       "[[Morgan Stanley]] raporundan bahsettiler.", "[[Hugo Boss]] gömleği iade edeceğim."],
        "product": ["[[iPhone 15]] ekranı çizik geldi.", "[[Galaxy S23]] kılıfı uymadı.",
                    "[[PlayStation 5]] kolu çalışmıyor.", "[[Renault Clio]] için lastik siparişi verdim."],
        "name_word": ["[[Deniz]] kenarındaki şubeye gidebilir miyim?", "[[Umut]] ediyorum bu sefer doğru gelir.",
                      "[[Güneş]] enerjili lamba arızalı.", "Bu sefer [[umut]] kesildi artık.",
                      "[[Barış]] içinde çözelim lütfen."],
        "url": ["Takip linki: [[https://kargo.example.com.tr/takip?no=TRK48213]]",
                "Formu [[https://destek.example.com/iade/form]] adresinden doldurdum."],
    },
    "ru": {
        "month_weekday": ["[[Май]] выдался тяжёлым для доставки.", "[[Март]] закрыли без долгов.",
                          "В [[понедельник]] курьер не приехал.", "[[Август]] у нас без скидок.",
                          "Заказ ждём к [[пятнице]]."],
        "city": ["Посылка в [[Королёв]] идёт неделю.", "[[Владимир]] — сортировочный центр, там задержка.",
                 "Отправили из [[Пушкино]].", "Склад в [[Кирове]] переполнен.", "Доставка в [[Ярославль]] бесплатная."],
        "brand_firm": ["Купил куртку [[Tommy Hilfiger]], размер не подошёл.",
                       "Духи [[Calvin Klein]] пришли без плёнки.",
                       "Отчёт [[Morgan Stanley]] обсуждали на встрече.", "Крем [[Ив Роше]] протёк.",
                       "Чек из [[Пятёрочки]] не пробился."],
        "product": ["[[Лада Веста]] на гарантии.", "[[iPhone 15]] пришёл с царапиной.",
                    "Чехол для [[Galaxy S23]] не подошёл."],
        "name_word": ["[[Роза]] в букете завяла за день.", "[[Надежда]] на возврат ещё есть.",
                      "[[Вера]] в вашу службу пропала.", "Купил сорт [[Любовь]] для сада."],
        "url": ["Трек: [[https://track.example.ru/status?id=RU4821]]",
                "Форма тут: [[https://help.example.ru/vozvrat]]"],
    },
    "en": {
        "month_weekday": ["[[May]] was a busy month for deliveries.", "Since [[April]] the price doubled.",
                          "The courier skipped [[Monday]] again.", "[[June]] invoices are attached.",
                          "See you [[Friday]]."],
        "city": ["The parcel is stuck in [[Jackson]].", "Shipped from [[Austin]] on Tuesday.",
                 "Our [[Lincoln]] branch is closed.", "It went to the [[Chester]] depot by mistake.",
                 "Can you deliver to [[Florence]], Alabama?"],
        "brand_firm": ["The [[Tommy Hilfiger]] jacket runs small.", "My [[Calvin Klein]] order came without a box.",
                       "I work at [[Morgan Stanley]], so deliveries go to reception.",
                       "The [[Ralph Lauren]] shirt has a stain.", "[[Johnson & Johnson]] recalled that batch."],
        "product": ["The [[iPhone 15]] screen is scratched.", "The [[Galaxy S23]] case doesn't fit.",
                    "[[PlayStation 5]] controller won't pair.", "Tyres for a [[Ford Focus]], please."],
        "name_word": ["The [[rose]] gold version is sold out.", "[[Bill]] me at the end of the month.",
                      "[[Mark]] it as urgent please.", "[[Grace]] period ends Friday?",
                      "I [[will]] wait for the courier."],
        "url": ["Tracking: [[https://track.example.com/status?id=US48213]]",
                "Filled in the form at [[https://help.example.com/returns/new]]"],
    },
}
# code: in fences and inline, the same in every language
CODE_FENCES = [
    "```sql\nSELECT Name, Continent FROM world WHERE Population > 200000000 ORDER BY Name;\n```",
    "```sql\nSELECT name, continent FROM world WHERE gdp IN (SELECT MAX(gdp) FROM world GROUP BY continent);\n```",
    "```python\ndef total(order):\n    return sum(Line.price * Line.qty for Line in order.lines)\n```",
    "```bash\ngrep -R \"Timeout\" /var/log/Courier/ | tail -n 20\n```",
    "```python\nclass Customer(Base):\n    __tablename__ = \"customers\"\n    Email = Column(String)\n```",
    "```\nERROR Carrier Gateway: Connection Reset by Peer (retry 3)\n```",
]
CODE_INLINE = ["Run `[[SELECT Name FROM Customers]]` and send me the output.", "The log says `[[KeyError: 'Region']]`.",
               "Try `[[pip install --upgrade Pillow]]` first.", "Set `[[Order.Status = Shipped]]` by hand.",
               "`[[git checkout Release/Summer]]` fails."]
CODE_INTRO = {"tr": ["Sorguyu şöyle yazdım:", "Hata şu:", "Log çıktısı:"],
              "ru": ["Запрос такой:", "Ошибка вот такая:", "Вывод лога:"],
              "en": ["Here is my query:", "The error:", "Log output:"]}

# ---------------------------------------------------------------------------------------------- identifiers
IDENTIFIERS = {
    "tr": {
        "PHONE": ["Telefonum {V}.", "Bana {V} numarasından ulaşın.", "Cep: {V}", "{V} numaralı hattım kapalı.",
                  "Yeni numaram {V}", "Eşimin numarası {V}, ona da haber verin."],
        "TCKN": ["TC kimlik no: {V}", "Kimlik numaram {V}.", "{V} numaralı TC ile kayıt var mı?"],
        "IBAN": ["IBAN: {V}", "İadeyi {V} hesabına yapın.", "Hesap numaram {V}"],
        "CARD": ["Kart numaram {V}.", "{V} ile ödeme yaptım.", "Kredi kartı: {V}"],
        "EMAIL": ["Mailim {V}", "Faturayı {V} adresine atın.", "E-posta: {V}"],
        "PLATE_TR": ["Araç plakası {V}.", "{V} plakalı araç otoparkta.", "Plaka: {V}"],
        "ADDRESS": ["Adresim {V}.", "Teslimat adresi: {V}", "Ürünü {V} adresine bırakın."],
    },
    "ru": {
        "PHONE": ["Мой телефон {V}.", "Номер жены {V}", "Звоните на {V}.", "Тел.: {V}", "{V} — рабочий номер."],
        "INN": ["ИНН {V}", "Мой ИНН: {V}"],
        "SNILS": ["СНИЛС {V}", "Номер СНИЛС: {V}"],
        "PASSPORT_RU": ["Паспорт {V}, выдан в 2015 году.", "Серия и номер паспорта: {V}", "Паспортные данные {V}."],
        "PLATE_RU": ["Машина {V}, серая.", "Госномер {V}.", "Заехал на {V} к складу."],
        "CARD": ["Номер карты {V}.", "Оплатил картой {V}."],
        "EMAIL": ["Почта: {V}", "Пишите на {V}."],
        "ADDRESS": ["Адрес доставки: {V}", "Живу по адресу {V}."],
    },
    "en": {
        "PHONE": ["Best number: {V}", "Call me at {V}.", "Phone: {V}", "You can text {V} after 6pm.",
                  "My wife's number is {V}."],
        "IBAN": ["IBAN: {V}", "Refund to {V}, please."],
        "CARD": ["Card number {V}.", "It was charged to {V}."],
        "EMAIL": ["Email: {V}", "Send it to {V}."],
        "ADDRESS": ["Ship to {V}.", "My address is {V}."],
        "TCKN": ["My Turkish ID number is {V}."],
    },
}
# which identifier kinds each language draws (phones by country, IBANs by country; the rest by name)
ID_KINDS = {
    "tr": ["PHONE_TR", "PHONE_TR", "PHONE_DE", "TCKN", "IBAN_TR", "IBAN_DE", "CARD", "EMAIL", "PLATE_TR", "ADDRESS"],
    "ru": ["PHONE_RU", "PHONE_RU", "INN", "SNILS", "PASSPORT_RU", "PLATE_RU", "CARD", "EMAIL", "ADDRESS"],
    "en": ["PHONE_US", "PHONE_GB", "PHONE_DE", "PHONE_IN", "IBAN_GB", "IBAN_DE", "CARD", "EMAIL", "ADDRESS", "TCKN"],
}
