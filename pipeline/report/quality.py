"""The quality checks in the report: their table, stripped threads and canned answers (hashes and ids, never text)."""
from __future__ import annotations

from pipeline.core.markdown import table

CHECK_TITLES = {"mojibake": "mojibake (ftfy)", "repetitive": "repeated n-grams", "quoted_thread": "quoted e-mail thread",
                "signature": "signature", "no_words": "symbol/URL-only turn"}


def check_rows(q: dict) -> list[list]:
    return [[CHECK_TITLES.get(name, name), c["setting"], c["records"], ", ".join(c["example_ids"][:3])]
            for name, c in (q.get("checks") or {}).items()]


def canned_rows(q: dict) -> list[list]:
    return [[t["answer_hash"], t["records"], t.get("chars"), ", ".join(t.get("example_ids", [])[:3])]
            for t in (q.get("canned") or {}).get("top", [])]


def canned_line(c: dict) -> str:
    line = (f"{c['answers']} canned answer(s) (given in at least {c['min_count']} records each) in "
            f"{c['records']} records")
    return line + (f"; {c['capped']} records past the cap of {c['cap']} dropped" if c.get("mode") == "cap" else "")


def render_quality_markdown(q: dict) -> str:
    out = [table(["check", "setting", "records", "example ids"], check_rows(q))]
    if q.get("stripped"):
        out += ["", f"{q['stripped']} records had a quoted thread or signature stripped."]
    if q.get("canned"):
        out += ["", canned_line(q["canned"]) + "."]
        if q["canned"].get("top"):
            out += ["", table(["answer hash", "records", "chars", "example ids"], canned_rows(q))]
    return "\n".join(out)
