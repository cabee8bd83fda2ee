"""Dump what the person-name side decides on bench/pii's sets, to compare two versions of the code byte for byte.

For the generated set (run.py's: `generate(1500, 7) + generate_names(300, 7)`) it writes the kept spans of
PiiStep.findings per record, and the raw hits of the name recognizers (Latin and Cyrillic gazetteers, the
natasha windows and natasha's hits in them) per content text; for heldout_names.py's texts the kept spans.
A change meant to keep results must leave the file identical:

    .venv/bin/python bench/pii/names_identity.py /tmp/before.json   # on the old code
    .venv/bin/python bench/pii/names_identity.py /tmp/after.json    # on the new code
    cmp /tmp/before.json /tmp/after.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--records", type=int, default=1500)
    ap.add_argument("--name-records", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    from generate import Generator, generate, generate_names
    from heldout_names import TEMPLATES
    from run import SALT, field_texts

    from pipeline.core.config import PiiConfig
    from pipeline.data.pii import PiiStep
    from pipeline.data.pii.engine import get_detector, resolve
    from pipeline.data.pii.latin_names import LatinNameRecognizer
    from pipeline.data.pii.ner_person import NatashaPersonRecognizer
    from pipeline.data.pii.ru_names import RussianNameGazetteer
    from pipeline.data.pii.text import TextContext

    rows = generate(args.records, args.seed) + generate_names(args.name_records, args.seed)
    records = [r["record"] for r in rows]
    step = PiiStep(PiiConfig(), salt=SALT)
    findings = step.findings(records)
    kept = [[lang, [[list(loc), [list(h) for h in k]] for loc, k, _ in per]] for lang, per in findings]

    latin = {lang: LatinNameRecognizer(lang) for lang in ("tr", "ru", "en")}
    cyr = {lang: RussianNameGazetteer(lang) for lang in ("tr", "ru", "en")}
    natasha = NatashaPersonRecognizer("ru")
    raw = []
    for rec, (lang, _) in zip(records, findings):
        for text in field_texts(rec):
            if not isinstance(text, str) or not text:
                raw.append(None)
                continue
            ctx = TextContext(text, lang)
            lat = latin[lang].find(ctx) if latin[lang].triggered(ctx) else []
            ru = cyr[lang].find(ctx) if cyr[lang].triggered(ctx) else []
            windows = cyr[lang].natasha_windows(ctx, lat + ru) if lang == "ru" else []
            nat = natasha.find_many([text[s:e] for s, e in windows])
            raw.append([[list(h) for h in lat], [list(h) for h in ru], [list(w) for w in windows],
                        [[list(h) for h in hs] for hs in nat]])

    gen = Generator(3)
    det = get_detector(("tr", "ru", "en"))
    heldout = []
    for lang, templates in TEMPLATES.items():
        for tpl in templates:
            for _ in range(40):
                name, _info = gen.v_person(lang, oov=True)
                text = tpl.format(v=name)
                heldout.append([lang, text, [list(h) for h in resolve(det.detect([(text, lang)])[0], 0.5)[0]]])
    Path(args.out).write_text(json.dumps({"kept": kept, "raw": raw, "heldout": heldout}, ensure_ascii=False),
                              encoding="utf-8")
    print(f"{len(kept)} records, {len(raw)} texts, {len(heldout)} held-out texts -> {args.out}")


if __name__ == "__main__":
    main()
