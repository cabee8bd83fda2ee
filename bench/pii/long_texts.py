"""How the detector's time grows with the length of one text (records may hold up to max_record_bytes, 8 MB).

A document is one record, so anything that compares every name with every other, or searches the whole
text once per candidate, turns quadratic there while the ~700-character benchmark records never show it. This
times one detect() call on texts of n and 4n characters, for generated records joined per language and for
texts of a single shape (thousands of names, digits, dots), and prints the ratio: 4.0 is linear.

    .venv/bin/python bench/pii/long_texts.py [--chars 100000]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def texts(chars: int) -> dict[str, tuple[str, str]]:
    from generate import field_texts, generate

    rows = generate(max(300, chars // 200), seed=7)
    out = {}
    for lang in ("tr", "ru", "en"):
        joined = " ".join(" ".join(field_texts(r["record"])) for r in rows if r["lang"] == lang)
        out[f"generated {lang}"] = (lang, joined)
    out["Russian names only"] = ("ru", " ".join(["Иван Петров", "Мария", "Сергеевич"] * (chars // 10)))
    out["English names, lower case"] = ("en", " ".join(["my name is james", "thanks maria,"] * (chars // 20)))
    out["digits and spaces"] = ("en", " ".join(str(i % 10) for i in range(chars)))
    out["decimal points"] = ("en", "1." * chars)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chars", type=int, default=100_000, help="n: the shorter text's length")
    args = ap.parse_args()

    from pipeline.data.pii.engine import get_detector

    det = get_detector(("tr", "ru", "en"))
    det.detect([("Иван Петров, +90 532 123 45 67", "ru")])  # set-up and natasha's load outside the timer
    n = args.chars
    print(f"{'text':28s} {'n chars':>9s} {'s':>7s} {'4n chars':>9s} {'s':>7s}  ratio (4.0 = linear)")
    for name, (lang, text) in texts(4 * n).items():
        if len(text) < 4 * n:
            print(f"{name:28s} only {len(text):,} characters generated; raise the record count")
            continue
        times = []
        for size in (n, 4 * n):
            det.clear_cache()
            t0 = time.perf_counter()
            det.detect([(text[:size], lang)])
            times.append(time.perf_counter() - t0)
        print(f"{name:28s} {n:9,d} {times[0]:7.2f} {4 * n:9,d} {times[1]:7.2f}  {times[1] / times[0]:5.1f}")


if __name__ == "__main__":
    main()
