"""Real people's names per country from names-dataset 3.3.1 (MIT, the `bench` extra), split in two halves.

The package's wheel ships names_dataset/v3/{first,last}_names.pkl.gz: dict name -> {"country": shares,
"gender": shares, "rank": {ISO2: rank}}. They are read with gzip + pickle (its NameDataset class builds
indexes of several GB). A name's half is fixed by a hash of its case-folded form: half 1 is the EVALUATION
half (this benchmark and the residual-risk probe only), half 0 the one the recognizers may use. Nothing in
pipeline/ imports this module or the package.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import pickle
import re
import unicodedata
from importlib import metadata
from pathlib import Path

EVAL_HALF = 1
POOL_RULES = 2  # bumped when extract()'s filters change: names the cache
# countries per text language; Turkish text gets Turkish and Azerbaijani names (Latin), Russian text Russian
# and Kazakh names (Cyrillic), English text the others (Latin spellings only)
COUNTRIES = {"tr": ("TR", "AZ"), "ru": ("RU", "KZ"), "en": ("US", "GB", "DE", "IN", "EG", "SA")}
BUCKETS = (("top100", 1, 100), ("100-1k", 101, 1000), ("1k-10k", 1001, 10000))
_LATIN = re.compile(r"[A-ZÇĞİÖŞÜƏÂÎÛÄÉ][a-zçğıöşüəâîûäöüéèáíóúñ]{2,}")
_CYRILLIC = re.compile(r"[А-ЯЁ][а-яё]{2,}")
_TRIPLE = re.compile(r"(.)\1\1", re.I)  # "Ттт", "Aaa": placeholders typed into a form, not names
_SCRIPT = {"tr": _LATIN, "en": _LATIN, "ru": _CYRILLIC}


def half(name: str) -> int:
    """0 or 1: the half a name belongs to (issue 29's disjoint-source rule)."""
    return hashlib.blake2b(name.casefold().encode("utf-8"), digest_size=8).digest()[0] & 1


_LATIN_FOLD = str.maketrans({"ı": "i", "İ": "I", "ə": "e", "Ə": "E"})


def spellings(name: str) -> set[str]:
    """The name and the way it is typed without diacritics ("Güler" and "Guler", "Алёна" and "Алена"): a
    recognizer that folds diacritics would find one through the other, so the evaluation takes a name only
    when every spelling is in its half."""
    if _CYRILLIC.fullmatch(name):
        return {name, name.replace("ё", "е").replace("Ё", "Е")}  # not NFKD: it would make "й" an "и"
    bare = "".join(ch for ch in unicodedata.normalize("NFKD", name.translate(_LATIN_FOLD))
                   if not unicodedata.combining(ch))
    return {name, bare}


def in_half(name: str, which: int) -> bool:
    return all(half(s) == which for s in spellings(name))


def bucket_of(rank: int) -> str | None:
    for label, lo, hi in BUCKETS:
        if lo <= rank <= hi:
            return label
    return None


def _dataset_dir() -> Path:
    import names_dataset  # the `bench` extra; imported only here

    return Path(names_dataset.__file__).resolve().parent / "v3"


def _gender(entry: dict) -> str:
    g = entry.get("gender") or {}
    if not g:
        return "?"
    best = max(g, key=g.get)
    return best if g[best] >= 0.8 else "?"


def extract(which: int = EVAL_HALF) -> dict:
    """{lang: {country: {"first"|"last": {bucket: [[name, rank, gender], ...]}}}} of the names in half `which`
    (every spelling), in the script of the text language, three letters or more, ranks up to 10,000. Sorted:
    deterministic."""
    out: dict = {lang: {c: {"first": {}, "last": {}} for c in cs} for lang, cs in COUNTRIES.items()}
    for kind in ("first", "last"):
        with gzip.open(_dataset_dir() / f"{kind}_names.pkl.gz", "rb") as fh:
            table = pickle.load(fh)  # noqa: S301  (a file of the installed package)
        for name, entry in table.items():
            ranks = entry.get("rank") or {}
            for lang, countries in COUNTRIES.items():
                for country in countries:
                    rank = ranks.get(country)
                    bucket = bucket_of(rank) if rank else None
                    if bucket is None or not _SCRIPT[lang].fullmatch(name) or _TRIPLE.search(name) \
                            or not in_half(name, which):
                        continue
                    out[lang][country][kind].setdefault(bucket, []).append([name, rank, _gender(entry)])
        del table
    for countries in out.values():
        for kinds in countries.values():
            for buckets in kinds.values():
                for rows in buckets.values():
                    rows.sort(key=lambda r: (r[1], r[0]))
    return out


def load(cache_dir: Path | None = None, which: int = EVAL_HALF) -> dict:
    """Half `which` (default the evaluation half), cached as JSON under cache_dir (keyed by the package
    version and the half): the pickles take 5-15 s to read, the cache 0.1 s."""
    version = metadata.version("names-dataset")
    if cache_dir is not None:
        path = cache_dir / f"realnames_pool_{version}_half{which}_{POOL_RULES}.json"
        if path.exists():
            return json.loads(path.read_text(encoding="utf-8"))
    pool = extract(which)
    if cache_dir is not None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(pool, ensure_ascii=False), encoding="utf-8")
    return pool
