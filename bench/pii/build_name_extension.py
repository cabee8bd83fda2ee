"""Build pipeline/resources/pii/names_ext.json: first names and surnames from names-dataset 3.3.1 (MIT; real-world
frequencies per country), the ALLOWED half only (issue 29's disjoint-source rule: half 0 of
blake2b(name.casefold()); half 1 is the evaluation's and never enters a recognizer; a key that a half-1 name
folds to as well is left out).

Countries: TR, AZ (Turkish text), US, GB, DE, IN, EG, SA (English text); ranks up to 10,000 in one of them.
A name that is an everyday word (wordfreq Zipf >= 4.3 in Turkish or English: "Master", "Florida") is left
out; the recognizer uses these names only beside another name-like word ("Hulusi Işıldar", "MÜJDAT AKBURAK"),
never alone. names-dataset is a bench extra; the pipeline reads the committed JSON.
    .venv/bin/python bench/pii/build_name_extension.py
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import pickle
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "pipeline" / "resources" / "pii" / "names_ext.json"
COUNTRIES = ("TR", "AZ", "US", "GB", "DE", "IN", "EG", "SA")
MAX_RANK = 10000
_LATIN = re.compile(r"[^\W\d_]{3,}")


def half(name: str) -> int:
    return hashlib.blake2b(name.casefold().encode("utf-8"), digest_size=8).digest()[0] & 1


def main() -> None:
    import names_dataset

    from pipeline.data.pii.name_signals import EVERYDAY_ZIPF, common_words
    from pipeline.data.pii.text import fold

    everyday = common_words("tr", EVERYDAY_ZIPF) | common_words("en", EVERYDAY_ZIPF)
    src = Path(os.path.dirname(names_dataset.__file__)) / "v3"
    out = {"_source": "names-dataset 3.3.1 (MIT), half 0 of blake2b(casefold) only, countries "
                      f"{' '.join(COUNTRIES)}, rank <= {MAX_RANK}, everyday words left out "
                      "(bench/pii/build_name_extension.py)"}
    tables = {kind: pickle.load(gzip.open(src / f"{kind}_names.pkl.gz")) for kind in ("first", "last")}
    # every key any half-1 name folds to, of either kind, any rank or country: a surname of the evaluation
    # folds to the key of an allowed first name as well ("Akinci"), and the stage folds before it looks up
    evaluation = {fold(name) for names in tables.values() for name in names if half(name) == 1}
    for kind, names in tables.items():
        keep = set()
        for name, info in names.items():
            rank = info.get("rank") or {}
            if not any(rank.get(c, MAX_RANK + 1) <= MAX_RANK for c in COUNTRIES):
                continue
            if not _LATIN.fullmatch(name) or not all(ord(c) < 0x370 for c in name):
                continue
            if half(name) == 0:
                keep.add(fold(name))
        out[f"latin_{kind}"] = sorted(keep - evaluation - everyday)
    OUT.write_text(json.dumps(out, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print({k: len(v) for k, v in out.items() if k != "_source"}, OUT.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
