"""bench/pii/realnames: the evaluation set is the same for the same seed, and every planted name is from the
evaluation half of names-dataset, which nothing in pipeline/ reads (issue 29's disjoint-source rule)."""
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "pii"))

from pii_names import half
from realnames import pool as name_pool  # noqa: E402
from realnames.build import build, field_texts  # noqa: E402


@pytest.fixture(scope="module")
def pool():
    pytest.importorskip("names_dataset")  # the `bench` extra; `make test` installs it
    return name_pool.extract(name_pool.EVAL_HALF)  # from the package's files, no cache (5-15 s)


@pytest.mark.slow
def test_pool_holds_only_the_evaluation_half(pool):
    names = [row[0] for countries in pool.values() for kinds in countries.values() for buckets in kinds.values()
             for rows in buckets.values() for row in rows]
    assert len(names) > 50_000
    assert all(half(n) == 1 for n in names)
    # typed without diacritics, too: a recognizer folding them cannot reach an evaluation name from a listed one
    assert all(half(s) == 1 for n in names for s in name_pool.spellings(n))
    assert name_pool.spellings("Güler") == {"Güler", "Guler"} and name_pool.spellings("Алёна") == {"Алёна", "Алена"}
    assert name_pool.spellings("Андрей") == {"Андрей"} and name_pool.spellings("Məmmədov") == {"Məmmədov", "Memmedov"}
    assert {half(n) for n in ("Ayşe", "Алёна", "Siddik", "Çelik", "Трофимова", "Smith")} == {0, 1}


@pytest.mark.slow
def test_the_set_is_deterministic_and_plants_only_evaluation_names(pool):
    rows = build(pool, 45, seed=5)
    again = build(pool, 45, seed=5)
    assert json.dumps(rows, ensure_ascii=False) == json.dumps(again, ensure_ascii=False)
    assert json.dumps(build(pool, 45, seed=6), ensure_ascii=False) != json.dumps(rows, ensure_ascii=False)
    names = [lab for row in rows for lab in row["labels"] if lab["kind"] == "name"]
    assert len({lab["shape"] for lab in names}) >= 6
    for row in rows:
        fields = field_texts(row["record"])
        for lab in row["labels"]:
            assert fields[lab["field"]][lab["start"]:lab["end"]] == lab["value"]
            if lab["kind"] == "name":
                assert all(half(s) == 1 for w in lab["drawn"] for s in name_pool.spellings(w))


def test_pipeline_never_reads_the_name_source():
    imports = re.compile(r"^\s*(?:import|from)\s+names_dataset\b|import_module\(.names_dataset", re.M)
    for path in (ROOT / "pipeline").rglob("*.py"):
        assert not imports.search(path.read_text(encoding="utf-8")), path
