"""Build pipeline/resources/pii/names.json from Faker's tr_TR, en_US and ru_RU name lists, plus the de_DE, fr_FR,
it_IT and es_ES ones for the Latin-script list (customers and staff named Giuseppe or Brigitte write in English
too). bench/pii/generate.py draws its out-of-list names from locales not used here.

The gazetteer is committed as data, so the pipeline does not need Faker at run time:
    .venv/bin/python bench/pii/build_gazetteer.py
"""
from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "pipeline" / "resources" / "pii" / "names.json"

# First names that are also everyday words (Turkish and English), months, nationalities or places. Alone and
# without a context word they are not taken as names; "Deniz Yılmaz", "Sayın Deniz", "Mr. Will" still are. The
# de/fr/it/es additions were found by listing the new first names that occur in lower case in the peer_formats
# texts or as lower-case words in the Mistral tokenizer's vocabulary, and by the spans real_text.py showed.
AMBIGUOUS = """
Ada Ak Akın Alp Altın Anıl Arslan Aslan Ata Ay Aydın Ayna Bahar Bal Barış Başak Bayram Bilge Bora Bulut Can Cennet
Cihan Çelik Çiçek Dalga Demir Deniz Derya Devrim Dilek Doğa Doğan Doruk Dünya Ekin Elmas Er Erdem Fidan Gök Gönül
Gül Güneş Hayat Hilal Huzur Irmak Işık İnci Kader Kaya Kartal Kılıç Kurtuluş Mavi Melek Mutlu Nehir Nur Ozan Oya
Özgür Pınar Rüzgar Saadet Savaş Sevda Sevgi Sevinç Su Sultan Şahin Şeker Şen Tan Tarık Tuna Toprak Ufuk Umut Ümit
Yağmur Yaz Yıldız Yiğit Zafer Zeki Kral Bahtiyar Cesur Bey Dost Sonay Sabah Akşam Gündüz Bekir Hasret Emel Eda
Aurora Will May June April August Mark Bill Grant Hope Faith Rose Amber Summer Page Chase Lane Dawn Joy Sky Ray Art
Guy Max Jack Frank Rich Bob Pat Drew Gene Glen Dale Wade Miles Carol Ruby Crystal Jade Pearl Hunter Christian Major
Rusty Sandy Brook Brooke Cliff Forest River Stone King Prince Earl Duke Baron Don Sterling Star Destiny Harmony
Heather Holly Ivy Lily Daisy Violet Olive Hazel Iris Jasmine Autumn Winter Paris Victoria Virginia Georgia Austin
Dallas Jordan Kent Cameron Brandon Tyler Taylor Mason Cooper Carter Parker Porter Baker Fisher Walker Turner Tanner
Bishop Bruce Shane Neil Dean Reed Reid Cole Gray Grey Rowan Colt Tucker Stewart Lance Norman Price Ward Case Bradley
Angel Bob Nick Sue Ken Jean Gay Ali Sam Dan Tom Jim Joe Ben Al Ed Ted Lee Kim Jay Mack Mike Van Ron Rod Roy Sal
Oscar Troy Alexandria Chelsea Madison Sydney Dakota Savannah
Roman German Florence Carolina Orlando Valentine Alba Georgia Lorraine Normandie Paris Siena Verona Victoria Messina
Else Edit Till Harm Meta Peer Pastor Urban Marine Coral Cord Wolf Sole Sol Flora Aura Iris Alla Edu Maxim Salvador
Franca Thea Marion Michel Henri Baptist Christ Angelo Benedict Pius Noel Noël Constance Prudence Patience Mercedes
Dolores Consuelo Rosario Pilar Luz Paz Mar Amparo Milagros Gloria Bella Vita Gala Fortunato Ventura Bonifacio Jan
Santiago Marina Pier Curt Aria Ale Ante Brit Abril Pero Durante
""".split()

# Names in Faker's tr_TR list that are plain Turkish words ("Evde" at home, "Özel" private, "Kayıt" record, "Eşim"
# my spouse, "Adam" man): ambiguous in Turkish text only ("Adam called" in English is a name).
AMBIGUOUS_TR = """
Adam Ana Anne Baba Kara Kurt Canal Ortak Yeşil Değer Eşim Evde İmam Limon Döner Susam Kayıt Kayit Ülke Güven Uygun
Üstün Özel İkiz Seçme Verim İlgi İlim Nihai Kibar Enfes Över Amaç Besin Benek Diken Divan Oluş Siper Solma Topuz Toy
Ulu Uçan Yargı Yargi Ürper Oymak Kopan Çerçi Verde Elma Oda Adina
""".split()


# Faker's tr_TR lists miss the most frequent Turkish names (no Mehmet, Ayşe or Ahmet; 61 surnames):
# the commonest given names and surnames in Turkey are added by hand.
COMMON_TR_FIRST = """
Mehmet Mustafa Ahmet Ali Hüseyin Hasan İbrahim İsmail Osman Yusuf Murat Ömer Ramazan Halil Süleyman Abdullah
Mahmut Salih Kemal Recep Fatih Kadir Emre Hakan Adem Metin Orhan Yaşar Burak Serkan Cengiz Bayram Erkan Uğur
Volkan Gökhan Tuncay Sinan Yasin Onur Şükrü Selim Sedat Tolga Caner Cem Emin Eren Enes Furkan Emir Berk Baran
Kerem Arda Efe Alp Yiğit Mert Kaan Oğuz Oğuzhan Batuhan Berkay Barış Serdar Erdem Ercan Erhan Ertuğrul Levent
Tamer Tarkan Taner Tayfun Turgut Zafer Ziya Nihat Necati Nazım Musa İlhan İlker Hikmet Haydar Halit Hamza Harun
Fikret Ferhat Faruk Erol Engin Cihan Cevdet Bülent Bilal Birol Aydın Arif Alper Alperen Abdulkadir Abdurrahman
Bekir Cemal Celal Coşkun Doğan Ekrem Emrah Ersin Eyüp Gökay Güven Hakkı Hilmi Hüsnü İhsan İlyas İsa Kamil Kenan
Koray Kubilay Lütfi Mahir Melih Mesut Mithat Muhammed Muharrem Muammer Namık Nuri Okan Ozan Özcan Özgür Rıza
Rıdvan Sabri Sadık Sami Sefa Selahattin Semih Sercan Sezer Soner Şahin Şenol Şevket Tahsin Talha Tarık Tevfik
Tuncer Ufuk Umut Ünal Vedat Veli Yakup Yavuz Yunus Yüksel Zeki Deniz Can Ege Ata Poyraz Aras Eymen Çınar Miraç
Fatma Ayşe Emine Hatice Zeynep Elif Meryem Şerife Zehra Sultan Hanife Merve Havva Zeliha Esra Fadime Özlem
Yasemin Hacer Rabia Melek Büşra Leyla Gülsüm Ebru Derya Dilek Sevgi Songül Gül Hülya Aysel Filiz Sibel Tuğba
Kübra Esma Nurcan Gülşen Nur Aynur Sevim Serpil Sema Seda Gamze Gizem Burcu Pınar Aslı Ayla Aylin Ayten Belgin
Berna Betül Buse Canan Ceren Damla Defne Didem Duygu Ece Eda Elçin Emel Esin Feride Figen Gönül Gülay Gülcan
Güler Hande Hilal İlknur İrem Kader Lale Melike Meltem Mine Nazlı Neslihan Nermin Nesrin Nihal Nilüfer Oya Özge
Rukiye Saadet Selda Selin Selma Serap Sevda Sinem Şeyma Şule Tuba Tülay Ümran Yeliz Yıldız Zerrin Zübeyde Azra
Asel Ecrin Eylül Nehir Zümra Hiranur Asya Ela Mira Duru Beren Derin Yağmur Sude İpek Irmak Melisa Nisa Esila Hira
""".split()
COMMON_TR_LAST = """
Yılmaz Kaya Demir Şahin Çelik Yıldız Yıldırım Öztürk Aydın Özdemir Arslan Doğan Kılıç Aslan Çetin Kara Koç Kurt
Özkan Şimşek Polat Özcan Korkmaz Çakır Erdoğan Yavuz Can Acar Şen Aktaş Güler Yalçın Güneş Bozkurt Bulut Keskin
Ünal Turan Gül Özer Işık Kaplan Avcı Sarı Tekin Taş Köse Yüksel Ateş Aksoy Uçar Karataş Akın Erdem Ekinci Tunç
Türk Coşkun Tuncer Akbulut Sönmez Savaş Demirci Toprak Karakaya Kocabaş Uysal Çiftçi Güngör Kahraman Gündoğdu
Altun Yaman Başaran Çalışkan Akgül Altıntaş Bayram Karaca Önal Duman Durmaz Oral Karakuş Aydoğan Akyüz Bilgin
Yazıcı Eren Çınar Güven Kocaman Sezer Eroğlu Kılınç Yiğit Aksu Soylu Yücel Karaman Oğuz Demirel Akar Arıkan
Uzun Deniz Dinç Taşkın Ergün Turhan Ören Altay Sağlam Yazar Aktürk Alkan Baysal Cengiz Dalkılıç Erbaş Gezer
İnce Kalkan Metin Orhan Pehlivan Sevinç Varol Zengin Öztürkmen Kocabıyık Karadağ Akdağ Bozdağ Yurdakul
""".split()


# Months and weekdays: capitalised in the middle of a sentence like names, never a person alone (kept ambiguous even
# where no name list holds them, so a cue word is still needed: "Sayın Eylül" is a person)
CALENDAR_EN = "January February March June July September October November December Monday Tuesday Wednesday " \
              "Thursday Friday Saturday Sunday".split()
CALENDAR_TR = "Ocak Şubat Mart Nisan Mayıs Haziran Temmuz Ağustos Eylül Ekim Kasım Aralık Pazartesi Salı Çarşamba " \
              "Perşembe Cuma Cumartesi Pazar".split()


# Latin-script locales beside tr_TR and en_US; generate.py's out-of-list English names come from others (nl, sv, da, fi)
EUROPEAN = ("de_DE", "fr_FR", "it_IT", "es_ES")


def main() -> None:
    from faker import Faker

    def prov(locale):
        return Faker(locale).provider("faker.providers.person")

    tr, en, ru = prov("tr_TR"), prov("en_US"), prov("ru_RU")
    latin_first = set(tr.first_names_male) | set(tr.first_names_female) | set(COMMON_TR_FIRST)
    latin_first |= set(en.first_names_male) | set(en.first_names_female) | set(getattr(en, "first_names_nonbinary", ()))
    latin_last = set(tr.last_names) | set(en.last_names) | set(COMMON_TR_LAST)
    for locale in EUROPEAN:
        p = prov(locale)
        latin_first |= {n for n in set(p.first_names_male) | set(p.first_names_female) if " " not in n}
        latin_last |= {n for n in p.last_names if " " not in n}  # "Da Silva": its words alone are no surname
    data = {
        "_source": "Faker tr_TR, en_US, de_DE, fr_FR, it_IT, es_ES, ru_RU person providers plus the commonest "
                   "Turkish names (bench/pii/build_gazetteer.py)",
        "latin_first": sorted(latin_first),
        "latin_last": sorted(latin_last - latin_first),
        "latin_ambiguous": sorted({n for n in AMBIGUOUS if n in latin_first or n in latin_last} | set(CALENDAR_EN)),
        "latin_ambiguous_tr": sorted(({n for n in AMBIGUOUS_TR if n in latin_first or n in latin_last} | set(CALENDAR_TR))
                                    - set(AMBIGUOUS)),
        "ru_first": sorted(set(ru.first_names_male) | set(ru.first_names_female)),
        "ru_middle": sorted(set(ru.middle_names_male) | set(ru.middle_names_female)),
        "ru_last": sorted(set(ru.last_names_male) | set(ru.last_names_female)),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(OUT, {k: len(v) for k, v in data.items() if isinstance(v, list)})


if __name__ == "__main__":
    main()
