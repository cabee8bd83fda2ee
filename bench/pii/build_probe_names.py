"""Build pipeline/resources/pii/probe_names.json: the real names that the run's residual-risk probe
(pipeline/data/pii/residual.py) plants into copies of the user's records.

Source: the names-dataset package (3.3.1, MIT; a `bench` extra, never imported by pipeline/; wordfreq for
the everyday-word filter), its first_names.pkl.gz and last_names.pkl.gz read directly (gzip + pickle: its
NameDataset class loads GBs). Only the EVALUATION half of its names is used: blake2b(name.casefold(),
digest_size=8)[0] & 1 == 1 for the name, its spelling without diacritics and, for a Russian surname, its
feminine form (the probe plants that too): the half that no recognizer list, context list or tuning may hold
(issue 29's disjoint-source rule), so the probe measures what the detectors do on names they were never given. Names in the shipped gazetteer
(pipeline/resources/pii/names.json, Russian case endings stripped) and words of the other PII lists (context,
address, fields) are left out too, and so are everyday words (wordfreq: Zipf >= WORD_ZIPF in the language
or in English; the source holds "Never", "Street", "Двери", "Sağlık" as names).

Per language (tr: TR+AZ, Latin; ru: RU+KZ, Cyrillic; en: US GB DE IN EG SA, Latin), first and last names
in three rank buckets (best rank over the language's countries: top 100, 100-1k, 1k-10k), letters only,
3-20 characters, capitalised; at most PER_BUCKET of each, drawn with a fixed seed. Russian first names are
split by gender (the probe writes a woman's surname in its feminine form).

    .venv/bin/python bench/pii/build_probe_names.py
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import pickle
import random
import re
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from pipeline.data.pii.residual import feminine_surname  # noqa: E402  (the form the probe writes)

OUT = ROOT / "pipeline" / "data" / "pii" / "probe_names.json"
GAZETTEER = ROOT / "pipeline" / "data" / "pii" / "names.json"

COUNTRIES = {"tr": ("TR", "AZ"), "ru": ("RU", "KZ"), "en": ("US", "GB", "DE", "IN", "EG", "SA")}
SCRIPT = {"tr": "LATIN", "ru": "CYRILLIC", "en": "LATIN"}
BUCKETS = (("top100", 1, 100), ("100-1k", 101, 1000), ("1k-10k", 1001, 10000))
PER_BUCKET = 200
# about 30 per million words: "Never", "Street", "Двери", "Olur" go; "Лена", "Josh", "Шевченко" (3.8-4.3) stay
WORD_ZIPF = 4.5
SEED = 29
# Russian case and gender endings the gazetteer strips before its look-up ("Абрамова" is "Абрамов" to it)
_RU_ENDINGS = ("ого", "ому", "ой", "ым", "ом", "ая", "ую", "а", "у", "е", "ы")


_LATIN_FOLD = str.maketrans({"ı": "i", "İ": "I", "ə": "e", "Ə": "E"})


def _half(name: str) -> int:
    return hashlib.blake2b(name.casefold().encode("utf-8"), digest_size=8).digest()[0] & 1


def spellings(name: str) -> set[str]:
    """The name and its spelling without diacritics ("Güler" and "Guler", "Алёна" and "Алена"): a recognizer
    that folds diacritics would find one through the other (the rule of bench/pii/realnames)."""
    if all("CYRILLIC" in unicodedata.name(ch, "") for ch in name):
        return {name, name.replace("ё", "е").replace("Ё", "Е")}  # not NFKD: it would make "й" an "и"
    bare = "".join(ch for ch in unicodedata.normalize("NFKD", name.translate(_LATIN_FOLD))
                   if not unicodedata.combining(ch))
    return {name, bare}


def evaluation_half(name: str, kind: str, lang: str) -> bool:
    """Every spelling of the name, and of a Russian surname's feminine form, is in the evaluation half."""
    forms = {name, feminine_surname(name)} if (kind, lang) == ("last", "ru") else {name}
    return all(_half(s) == 1 for form in forms for s in spellings(form))


_VOWELS = set("aeiouyıöüəâîûаеёиоуыэюяі")
_SURNAME_ENDINGS = ("ov", "ova", "ev", "eva", "ов", "ова", "ев", "ева", "ин", "ина")


def plausible(name: str, script: str) -> bool:
    """Letters only, 3-20 of them, capitalised, every letter of the language's script, a vowel in it and
    no letter three times in a row (the source holds "Ааа" and "Afg")."""
    low = name.casefold()
    return (3 <= len(name) <= 20 and name.isalpha() and name[0].isupper() and name[1:].islower()
            and all(script in unicodedata.name(ch, "") for ch in name)
            and any(ch in _VOWELS for ch in low) and not any(a == b == c for a, b, c in zip(low, low[1:], low[2:])))


def first_name_shaped(name: str) -> bool:
    """Not a surname given as a first name ("Abbasov")."""
    return not name.casefold().endswith(_SURNAME_ENDINGS)


def _ru_stem(word: str) -> str:
    w = word.casefold()
    for end in _RU_ENDINGS:
        if w.endswith(end) and len(w) - len(end) >= 3:
            return w[: -len(end)]
    return w


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def gazetteer_words() -> tuple[set[str], set[str]]:
    """Every word of the shipped PII lists, folded, and the stems of the gazetteer's Russian names."""
    data = json.loads(GAZETTEER.read_text(encoding="utf-8"))
    words = {w.casefold() for key, values in data.items() if not key.startswith("_") for w in values}
    for other in ("context.json", "address.json", "fields.json"):
        lists = json.loads((GAZETTEER.parent / other).read_text(encoding="utf-8"))
        words |= {w.casefold() for text in _strings(lists) for w in re.findall(r"\w+", text)}
    stems = {_ru_stem(w) for key in ("ru_first", "ru_middle", "ru_last") for w in data[key]}
    return words, stems


def everyday_word(name: str, lang: str) -> bool:
    from wordfreq import zipf_frequency

    word = name.lower()
    return max(zipf_frequency(word, lang), zipf_frequency(word, "en")) >= WORD_ZIPF


def load(kind: str) -> dict:
    import names_dataset

    path = Path(os.path.dirname(names_dataset.__file__)) / "v3" / f"{kind}_names.pkl.gz"
    with gzip.open(path) as f:
        return pickle.load(f)


def best_rank(entry: dict, countries: tuple[str, ...]) -> int | None:
    ranks = [r for c, r in (entry.get("rank") or {}).items() if c in countries and r]
    return min(ranks) if ranks else None


def pick(table: dict, kind: str, lang: str, known: set[str], stems: set[str], rng: random.Random,
         keep=lambda entry: True) -> dict[str, list[str]]:
    countries, script = COUNTRIES[lang], SCRIPT[lang]
    by_bucket: dict[str, list[str]] = {b: [] for b, _, _ in BUCKETS}
    for name, entry in table.items():
        if kind == "first" and not first_name_shaped(name):
            continue
        rank = best_rank(entry, countries)
        if rank is None or rank > BUCKETS[-1][2] or not plausible(name, script):
            continue
        if not evaluation_half(name, kind, lang):
            continue
        if name.casefold() in known or (lang == "ru" and _ru_stem(name) in stems) or not keep(entry):
            continue
        if everyday_word(name, lang):
            continue
        bucket = next(b for b, lo, hi in BUCKETS if lo <= rank <= hi)
        by_bucket[bucket].append(name)
    out = {}
    for bucket, names in by_bucket.items():
        names.sort()
        out[bucket] = sorted(rng.sample(names, min(PER_BUCKET, len(names))))
    return out


def _gender(entry: dict) -> str:
    g = entry.get("gender") or {}
    return "F" if g.get("F", 0) > g.get("M", 0) else "M"


def build() -> dict:
    first, last = load("first"), load("last")
    known, stems = gazetteer_words()
    rng = random.Random(SEED)
    out: dict = {"_source": "names-dataset 3.3.1 (MIT), evaluation half (blake2b(casefold)[0] & 1 == 1), names not "
                            "in names.json; built by bench/pii/build_probe_names.py",
                 "_buckets": [b for b, _, _ in BUCKETS]}
    for lang in COUNTRIES:
        entry = {"last": pick(last, "last", lang, known, stems, rng)}
        if lang == "ru":
            entry["first_m"] = pick(first, "first", lang, known, stems, rng, lambda e: _gender(e) == "M")
            entry["first_f"] = pick(first, "first", lang, known, stems, rng, lambda e: _gender(e) == "F")
        else:
            entry["first"] = pick(first, "first", lang, known, stems, rng)
        out[lang] = entry
    return out


def main() -> None:
    data = build()
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    for lang in COUNTRIES:
        sizes = {kind: {b: len(v) for b, v in buckets.items()} for kind, buckets in data[lang].items()}
        print(lang, sizes)
    print(f"{OUT.relative_to(ROOT)}: {OUT.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
