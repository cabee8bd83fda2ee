"""The language step (pipeline/data/lang.py LanguageStep) against its previous implementation, in one process.

    .venv/bin/python bench/langid/step_speed.py              # writes bench/langid/step_speed.txt
    .venv/bin/python bench/langid/step_speed.py --records 20000 --rounds 5

1. Speed: LanguageStep.process on bench/e2e/corpus.py records (the four formats, read through
   pipeline.data.formats.to_record as prepare reads them), old and new back to back on each chunk of the same records
   (the machine is shared: the ratio of the two on the same chunks is the figure, not either alone).
2. Same results on those records: meta.lang, meta.lang_turns and the stage counters, record by record; every
   record whose label changes is listed with what each side and the whole text were judged.
3. Accuracy on bench/langid/labelled.jsonl: (a) the detector on each labelled text (old and new cleaning of
   the text), (b) chat records made of two labelled texts of one language (prompt, answer; five shuffles),
   meta.lang against the label per language, (c) chat records whose prompt and answer are in two different
   languages: their meta.lang_turns.

The previous implementation lives only here (OldLanguageStep): the step judged every record on its whole text
(1000 characters) and, where both sides had 20 letters, the prompt and the answer apart (300 characters each),
after a regex pass over each text and a letter count over each side.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE.parent / "e2e"))

from corpus import write_corpus  # noqa: E402

from pipeline.core.config import FiltersConfig  # noqa: E402
from pipeline.core.stats import StageStats  # noqa: E402
from pipeline.data.formats import Invalid, to_record  # noqa: E402
from pipeline.data.lang import _LID, MAX_CHARS, SIDE_CHARS, LanguageStep, _sides  # noqa: E402

# ------------------------------------------------------------------ the previous implementation (baseline)

_OLD_SPACE = re.compile(r"\s+")


def old_predict_many(texts: list[str], max_chars: int | None = None) -> list[tuple[str, float]]:
    limit = max_chars or MAX_CHARS
    out: list[tuple[str, float] | None] = [None] * len(texts)
    todo, idx = [], []
    for i, t in enumerate(texts):
        t = _OLD_SPACE.sub(" ", t[:limit]).strip()
        if not any(ch.isalpha() for ch in t):
            out[i] = ("und", 0.0)
        else:
            todo.append(t)
            idx.append(i)
    if todo:
        predict = _LID.model.f.predict
        for i, t in zip(idx, todo):
            found = predict(t + "\n", 1, 0.0, "replace")
            out[i] = (found[0][1].removeprefix("__label__"), float(found[0][0])) if found else ("und", 0.0)
    return out  # type: ignore[return-value]


def _old_letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text[:MAX_CHARS])


class OldLanguageStep(LanguageStep):
    def judge(self, sides):
        cfg = self.cfg
        whole = old_predict_many([(p + "\n" + a).strip() for p, a in sides])
        pairs = [i for i, (p, a) in enumerate(sides) if a and _old_letters(p) >= cfg.lang_min_letters
                 and _old_letters(a) >= cfg.lang_min_letters]
        judged = old_predict_many([sides[i][0] for i in pairs] + [sides[i][1] for i in pairs], SIDE_CHARS)
        mismatch = {}
        for n, i in enumerate(pairs):
            (pl, pp), (al, ap) = judged[n], judged[n + len(pairs)]
            if pl != al and min(pp, ap) >= cfg.lang_min_confidence:
                mismatch[i] = (pl, al)
        return [lang for lang, _p in whole], mismatch


# ------------------------------------------------------------------------------------------------ inputs

def e2e_records(n: int) -> list[dict]:
    recs = []
    with tempfile.TemporaryDirectory(prefix="langspeed-") as folder:
        for path in write_corpus(Path(folder), n):
            fmt = "text" if path.suffix == ".txt" else path.stem
            for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                try:
                    row = line if fmt == "text" else json.loads(line)
                    recs.append(to_record(row, fmt, {}, {"file": path.name, "line": line_no}))
                except (Invalid, ValueError):
                    pass  # the corpus's broken lines
    return recs


def chat(prompt: str, answer: str, rid: str) -> dict:
    return {"id": rid, "kind": "chat", "text": None, "meta": None, "source": {"file": "labelled", "line": 1},
            "messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]}


def decided_by_sides(recs: list[dict]) -> list[bool]:
    """Per record: whether the new step took its language from agreeing sides (no whole-text judge)."""
    step = LanguageStep(FiltersConfig())
    sides = [_sides(r) for r in recs]
    langs, _ = step.judge(sides)
    out = []
    for (p, a), lang in zip(sides, langs):
        judged = bool(a) and min(sum(ch.isalpha() for ch in x[:MAX_CHARS]) for x in (p, a)) >= step.cfg.lang_min_letters
        out.append(judged and {c for c, _p in _LID.predict_many([p, a], SIDE_CHARS)} == {lang})
    return out


def run_step(step: LanguageStep, recs: list[dict]) -> tuple[list[dict], dict, float]:
    batch = [dict(r) for r in recs]  # set_meta replaces meta: a shallow copy keeps the inputs as they were
    step.stats = StageStats(step.name)
    t0 = time.perf_counter()
    out = step.process(batch)
    return out, step.stats.to_dict(), time.perf_counter() - t0


# ------------------------------------------------------------------------------------------------- parts

def speed(recs: list[dict], rounds: int, lines: list[str], chunk: int = 500) -> None:
    old, new = OldLanguageStep(FiltersConfig()), LanguageStep(FiltersConfig())
    run_step(old, recs[:200])  # model load
    # old and new back to back on each chunk of records of one kind, in turn first: load on the shared
    # machine changes slower than a chunk takes; CPU time of this process, not wall time
    groups = {"chat": [r for r in recs if r["messages"]], "text": [r for r in recs if not r["messages"]]}
    cpu = {(name, kind): 0.0 for name in ("old", "new") for kind in groups}
    ratios = []
    for r in range(rounds):
        for kind, group in groups.items():
            for k in range(0, len(group), chunk):
                part, took = group[k:k + chunk], {}
                order = (("old", old), ("new", new)) if (r + k // chunk) % 2 == 0 else (("new", new), ("old", old))
                for name, step in order:
                    batch = [dict(x) for x in part]
                    step.stats = StageStats(step.name)
                    t0 = time.process_time()
                    step.process(batch)
                    took[name] = time.process_time() - t0
                    cpu[name, kind] += took[name]
                ratios.append(took["old"] / max(took["new"], 1e-9))
    ratios.sort()
    kinds = Counter(r["source"]["file"] for r in recs)
    lines += [f"## speed: LanguageStep.process on {len(recs):,} bench/e2e records ({dict(kinds)}), {rounds} rounds, "
              f"old and new alternated per {chunk} records (CPU time)", "",
              "| implementation | us per chat record (alpaca, sharegpt, openai) | us per text record "
              "| us per record (all) | CPU-s per 1M records |",
              "|---|---|---|---|---|"]
    for name in ("old", "new"):
        per = {kind: cpu[name, kind] / (len(g) * rounds) * 1e6 for kind, g in groups.items()}
        total = sum(cpu[name, kind] for kind in groups) / (len(recs) * rounds) * 1e6
        lines.append(f"| {name} | {per['chat']:.1f} | {per['text']:.1f} | {total:.1f} | {total:.0f} |")
    q = len(ratios) // 4
    lines += ["", f"old / new over {len(ratios)} chunks: median {ratios[len(ratios) // 2]:.2f} "
              f"(quartiles {ratios[q]:.2f} - {ratios[-q - 1]:.2f})", ""]


def same_results(recs: list[dict], lines: list[str]) -> None:
    old_out, old_st, _ = run_step(OldLanguageStep(FiltersConfig()), recs)
    new_out, new_st, _ = run_step(LanguageStep(FiltersConfig()), recs)
    changed = [(r, a, b) for r, a, b in zip(recs, old_out, new_out)
               if a["meta"] != b["meta"] or a["_lang"] != b["_lang"]]
    lines += [f"## same results on the {len(recs):,} bench/e2e records", "",
              f"records whose meta.lang / meta.lang_turns differ: {len(changed)}",
              f"stage counters equal: {old_st['counters'] == new_st['counters']} "
              f"(langs {new_st['counters'].get('langs')}, lang_mismatch {new_st['counters'].get('lang_mismatch', 0)})"]
    for rec, a, b in changed[:20]:
        p, ans = _sides(rec)
        (pl, pp), (al, ap) = old_predict_many([p, ans], SIDE_CHARS)
        wl, wp = old_predict_many([(p + "\n" + ans).strip()])[0]
        lines.append(f"- {rec['source']['file']}:{rec['source']['line']}: old {json.loads(a['meta']).get('lang')} "
                     f"new {json.loads(b['meta']).get('lang')}; prompt {pl} {pp:.2f}, answer {al} {ap:.2f}, "
                     f"whole {wl} {wp:.2f}")
    lines.append("")


def accuracy(lines: list[str]) -> None:
    rows = [json.loads(x) for x in (HERE / "labelled.jsonl").read_text(encoding="utf-8").splitlines()]
    texts = [r["text"] for r in rows]
    same = sum(a == b for a, b in zip(old_predict_many(texts), _LID.predict_many(texts)))
    lines += ["## accuracy on bench/langid/labelled.jsonl", "",
              f"(a) detector on each of the {len(rows)} labelled texts: old and new give the same (code, probability) "
              f"on {same} of {len(rows)}", ""]
    by_lang = defaultdict(list)
    for r in rows:
        by_lang[r["lang"]].append(r["text"])
    recs, truth = [], []
    for seed in range(5):
        rnd = random.Random(seed)
        for lang, items in sorted(by_lang.items()):
            items = items[:]
            rnd.shuffle(items)
            for k in range(0, len(items) - 1, 2):
                recs.append(chat(items[k], items[k + 1], f"{lang}-{seed}-{k}"))
                truth.append(lang)
    old_out, _, _ = run_step(OldLanguageStep(FiltersConfig()), recs)
    new_out, _, _ = run_step(LanguageStep(FiltersConfig()), recs)
    lines += ["(b) chat records of two labelled texts of one language (prompt, answer), five shuffles: meta.lang "
              "right (%); 'by sides' = records the new step decided by agreeing sides, without the whole text", "",
              "| lang | records | by sides | old | new | new right, old wrong | old right, new wrong |",
              "|---|---|---|---|---|---|---|"]
    cells = defaultdict(lambda: [0, 0, 0, 0, 0, 0])
    for lang, a, b, by_sides in zip(truth, old_out, new_out, decided_by_sides(recs)):
        for key in (lang, "all"):
            c = cells[key]
            c[0] += 1
            c[5] += by_sides
            c[1] += a["_lang"] == lang
            c[2] += b["_lang"] == lang
            c[3] += b["_lang"] == lang != a["_lang"]
            c[4] += a["_lang"] == lang != b["_lang"]
    for lang in sorted(k for k in cells if k != "all") + ["all"]:
        n, o, w, gain, loss, by_sides = cells[lang]
        lines.append(f"| {lang} | {n} | {by_sides} | {100 * o / n:.1f} | {100 * w / n:.1f} | {gain} | {loss} |")
    mixed = []
    langs = sorted(by_lang)
    rnd = random.Random(7)
    for a_lang in langs:
        for b_lang in langs:
            if a_lang != b_lang:
                for k in range(10):
                    mixed.append(chat(rnd.choice(by_lang[a_lang]), rnd.choice(by_lang[b_lang]), f"{a_lang}{b_lang}{k}"))
    old_out, old_st, _ = run_step(OldLanguageStep(FiltersConfig()), mixed)
    new_out, new_st, _ = run_step(LanguageStep(FiltersConfig()), mixed)
    same = sum(a["meta"] == b["meta"] for a, b in zip(old_out, new_out))
    lines += ["", f"(c) {len(mixed)} chat records with prompt and answer in two different languages: meta (lang and "
              f"lang_turns) the same on {same}; lang_mismatch old {old_st['counters'].get('lang_mismatch', 0)}, "
              f"new {new_st['counters'].get('lang_mismatch', 0)}", ""]
    docs, truth = [], []
    for seed in range(5):
        rnd = random.Random(seed)
        for lang, items in sorted(by_lang.items()):
            items = items[:]
            rnd.shuffle(items)
            doc = ""
            for t in items:
                doc = (doc + "\n" + t).strip()
                if len(doc) > MAX_CHARS:
                    docs.append(doc)
                    truth.append(lang)
                    doc = ""
    limits = (200, 300, 500, MAX_CHARS)
    got = {lim: _LID.predict_many(docs, lim) for lim in limits}
    lines += [f"(d) the whole-text judge on shorter prefixes: {len(docs)} texts of over {MAX_CHARS} characters, "
              "labelled texts of one language joined, five shuffles: right (%) judged on the first N characters", "",
              "| lang | texts | " + " | ".join(f"N = {lim}" for lim in limits) + " |",
              "|---|---|" + "---|" * len(limits)]
    for lang in sorted(set(truth)):
        idx = [i for i, t in enumerate(truth) if t == lang]
        lines.append(f"| {lang} | {len(idx)} | " + " | ".join(
            f"{100 * sum(got[lim][i][0] == lang for i in idx) / len(idx):.1f}" for lim in limits) + " |")
    lines.append("")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    recs = e2e_records(args.records)
    lines: list[str] = []
    speed(recs, args.rounds, lines)
    same_results(recs, lines)
    accuracy(lines)
    out = "\n".join(lines)
    print(out)
    (HERE / "step_speed.txt").write_text(out + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
