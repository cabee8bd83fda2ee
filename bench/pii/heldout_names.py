"""Recall of person names outside the gazetteer in phrasings the name rules were NOT tuned on.

run.py's sentence templates are also where the context phrases of pipeline/resources/pii/context.json were
checked, so its out-of-vocabulary figure (az_AZ names in Turkish, nl/sv/da/fi names in English, uk_UA
names in Russian) flatters the rules. The templates below were written once, before any rule was changed
against them, and are not to be tuned on: this prints how a name the lists lack fares in unseen phrasing,
per template, so the figure in a note can be read against run.py's.

SEEN lists the templates a rule was later written knowing of (their phrasing is no longer unseen); the
last lines give the recall without them too.

    .venv/bin/python bench/pii/heldout_names.py [--per-template 40] [--natasha whole]
    .venv/bin/python bench/pii/heldout_names.py --natasha-compare   # -> natasha_last_run.txt

natasha sees only windows of Russian text that the cheap pass picks (RussianNameGazetteer.natasha_windows:
capitalized Cyrillic words the gazetteer did not explain; one it does not know only next to a gazetteer word
or a name cue, or in a run of two or three capitalized words). `--natasha whole` hands it every Russian text
whole instead; `--natasha-compare` measures both ways, each in a fresh process: the recall here, PERSON ru
recall and precision on run.py's generated set, and the time of the PII stage and of natasha's share of it.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TEMPLATES = {
    "tr": ["{v} dün mağazaya uğradı.", "Müşteri temsilcisi {v} çok yardımcı oldu.", "Bu hat {v} üzerine kayıtlı.",
           "{v} Bey sizi aradı.", "Paketi {v} imzaladı.", "Lütfen {v} ile iletişime geçin.",
           "Teslimatı {v} karşıladı.", "Şikayeti {v} iletti, kontrol eder misiniz?"],
    "en": ["{v} called about the invoice.", "Ask for {v} at the front desk.", "Your agent {v} was great.",
           "The order was placed by {v}.", "Regards, {v}", "Mr. {v} will visit on Monday.",
           "I emailed {v} last week.", "{v} from the warehouse confirmed the pickup."],
    "ru": ["{v} звонил вчера вечером.", "Спросите {v} на складе.", "Заказ оформлен на {v}.",
           "Передайте {v}, что посылка пришла.", "С уважением, {v}", "Оператор {v} был вежлив."],
}
# 2026-12-03: job words before a name (context.json name_roles) were added knowing that these two use them
SEEN = {"Müşteri temsilcisi {v} çok yardımcı oldu.", "Your agent {v} was great."}


def natasha_everywhere() -> None:
    """This process's natasha tags each Russian text whole, not the cheap pass's windows (the comparison)."""
    from pipeline.data.pii.ru_names import RussianNameGazetteer

    RussianNameGazetteer.natasha_windows = lambda self, ctx, covered, words=2: [(0, len(ctx.text))]


def heldout(n_per_template: int, seed: int, whole: bool = False) -> dict:
    """(lang, template) -> [names found, names] over names outside the lists."""
    from generate import Generator

    from pipeline.data.pii.engine import get_detector, resolve

    if whole:
        natasha_everywhere()
    gen = Generator(seed)
    det = get_detector(("tr", "ru", "en"))
    per_template: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for lang, templates in TEMPLATES.items():
        for tpl in templates:
            for _ in range(n_per_template):
                name, _info = gen.v_person(lang, oov=True)
                text = tpl.format(v=name)
                s = text.index(name)
                kept, _ = resolve(det.detect([(text, lang)])[0], 0.5)
                chars = [k for k in range(s, s + len(name)) if text[k].isalnum()]
                covered = sum(1 for k in chars if any(h.start <= k < h.end and h.entity == "PERSON" for h in kept))
                per_template[(lang, tpl)][1] += 1
                per_template[(lang, tpl)][0] += covered >= 0.9 * len(chars)
    return dict(per_template)


def totals(per_template: dict) -> dict:
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # all ok, n; unseen ok, n
    for (lang, tpl), (ok, n) in per_template.items():
        out[lang][0] += ok
        out[lang][1] += n
        if tpl not in SEEN:
            out[lang][2] += ok
            out[lang][3] += n
    return dict(out)


def stage_side(whole: bool, records: int, name_records: int, seed: int) -> dict:
    """run.py's set through PiiStep.process in this (fresh) process, engine set-up included, with natasha's
    calls timed; then the PERSON ru recall and precision of the kept spans."""
    import time

    from generate import generate, generate_names
    from run import SALT, score

    import pipeline.data.pii.engine  # noqa: F401  imports outside the timer
    from pipeline.core.config import PiiConfig
    from pipeline.data.pii import PiiStep
    from pipeline.data.pii.ner_person import NatashaPersonRecognizer

    if whole:
        natasha_everywhere()
    rows = generate(records, seed) + generate_names(name_records, seed)
    spent = {"seconds": 0.0, "cpu": 0.0, "texts": 0, "chars": 0}
    tag = NatashaPersonRecognizer.find_many

    def timed(self, texts):
        t, c = time.perf_counter(), time.process_time()
        try:
            return tag(self, texts)
        finally:
            spent["seconds"] += time.perf_counter() - t
            spent["cpu"] += time.process_time() - c
            spent["texts"] += len(texts)
            spent["chars"] += sum(map(len, texts))

    NatashaPersonRecognizer.find_many = timed
    records_in = [r["record"] for r in rows]
    t, c = time.perf_counter(), time.process_time()
    step = PiiStep(PiiConfig(), salt=SALT)
    for i in range(0, len(records_in), 500):
        step(records_in[i:i + 500])
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    natasha = dict(spent)
    NatashaPersonRecognizer.find_many = tag
    findings = step.findings([r["record"] for r in rows])
    kept = [[(loc[1] if loc[0] == "messages" else 0, [(h.start, h.end, h.entity) for h in k]) for loc, k, _ in per]
            for _, per in findings]
    sc = score(rows, kept)
    return {"records": len(rows), "wall": wall, "cpu": cpu, "natasha": natasha,
            "recall": sc["recall"].get(("PERSON", "ru")), "precision": sc["precision"].get(("PERSON", "ru"))}


def _in_child(fn, *args):
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args)


def compare(args) -> None:
    lines = ["natasha on the cheap pass's windows vs on every Russian text whole (bench/pii/heldout_names.py "
             "--natasha-compare); each side in a fresh process, engine set-up included, machine shared", ""]
    for rep in range(args.repeats):
        for whole in (False, True):
            side = "whole " if whole else "windows"
            st = _in_child(stage_side, whole, args.records, args.name_records, 7)
            ho = totals(_in_child(heldout, args.per_template, args.seed, whole))
            ok, n, ok_u, n_u = ho["ru"]
            nat = st["natasha"]
            lines.append(
                f"{side}  run {rep + 1}: PII stage {st['records']} records {st['wall']:.2f} s wall {st['cpu']:.2f} s CPU "
                f"({st['records'] / st['wall']:.0f} records/s); natasha {nat['seconds']:.2f} s wall {nat['cpu']:.2f} s "
                f"CPU over {nat['texts']} texts, {nat['chars']} chars ({nat['cpu'] / st['cpu']:.0%} of the stage's CPU)")
            lines.append(
                f"{side}  run {rep + 1}: PERSON ru on run.py's set recall {st['recall'][0] / st['recall'][1]:.3f} "
                f"({st['recall'][0]} of {st['recall'][1]}), precision {st['precision'][0] / st['precision'][1]:.3f} "
                f"({st['precision'][0]} of {st['precision'][1]}); held-out ru names outside the lists "
                f"{ok / n:.3f} ({ok} of {n}), unseen templates {ok_u / n_u:.3f} ({ok_u} of {n_u})")
            print(lines[-2], lines[-1], sep="\n", flush=True)
    out = Path(__file__).resolve().parent / "natasha_last_run.txt"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"-> {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-template", type=int, default=40)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--natasha", choices=("windows", "whole"), default="windows",
                    help="what natasha sees of a Russian text: the cheap pass's windows, or all of it")
    ap.add_argument("--natasha-compare", action="store_true", help="measure both ways -> natasha_last_run.txt")
    ap.add_argument("--records", type=int, default=1500, help="--natasha-compare: run.py's set size")
    ap.add_argument("--name-records", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=2, help="--natasha-compare: alternated runs of each side")
    args = ap.parse_args()
    if args.natasha_compare:
        compare(args)
        return
    per_template = heldout(args.per_template, args.seed, args.natasha == "whole")
    for (lang, tpl), (ok, n) in per_template.items():
        print(f"{lang}  {ok / n:5.3f}  {tpl}{'   (seen)' if tpl in SEEN else ''}")
    print()
    for lang, (ok, n, ok_unseen, n_unseen) in totals(per_template).items():
        print(f"recall, names outside the lists, {lang}: {ok / n:.3f} ({ok} of {n}); "
              f"in the templates no rule was written for: {ok_unseen / n_unseen:.3f} ({ok_unseen} of {n_unseen})")


if __name__ == "__main__":
    main()
