"""Which PERSON hits the gazetteer rules make on real English text (a spot check for false positives).

The peer_formats files (../shared/peer_formats: alpaca, c4, wiki, glaive) are public texts without labels, so
this prints no recall or precision: it lists the most frequent PERSON spans at or above the score threshold,
with a snippet each, for a person to judge ("US", "San Francisco", "Prime Minister ..." were found this way).
    .venv/bin/python bench/pii/real_names.py [--top 40] [--peer ../shared/peer_formats]
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def peer_texts(peer: Path) -> list[str]:
    texts: list[str] = []
    for row in json.loads((peer / "alpaca_en_demo.json").read_text(encoding="utf-8")):
        texts += [row.get("instruction", ""), row.get("input", ""), row.get("output", "")]
    with (peer / "c4_demo.jsonl").open(encoding="utf-8") as fh:
        texts += [json.loads(line)["text"] for line in fh]
    texts += (peer / "wiki_demo.txt").read_text(encoding="utf-8").split("\n")
    for row in json.loads((peer / "glaive_toolcall_en_demo.json").read_text(encoding="utf-8")):
        texts += [turn.get("value", "") for turn in row.get("conversations", [])]
    return [t for t in texts if t]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer", default=str(ROOT.parent / "shared" / "peer_formats"))
    ap.add_argument("--top", type=int, default=25, help="spans listed per entity type")
    ap.add_argument("--entity", help="only this entity type (PERSON, PHONE, ...)")
    ap.add_argument("--threshold", type=float, default=0.5)
    args = ap.parse_args()
    from pipeline.pii.engine import get_detector, resolve
    from pipeline.pii.lang import detect_language

    texts = peer_texts(Path(args.peer))
    detector = get_detector(("tr", "ru", "en"))
    items = [(t, detect_language(t)) for t in texts]
    counts: dict[str, Counter] = defaultdict(Counter)
    snippet: dict[tuple[str, str], str] = {}
    for (text, _), hits in zip(items, detector.detect(items)):
        kept, _ = resolve(hits, args.threshold)
        for h in kept:
            if args.entity and h.entity != args.entity:
                continue
            span = text[h.start:h.end]
            counts[h.entity][span] += 1
            snippet.setdefault((h.entity, span), text[max(0, h.start - 35):h.end + 25].replace("\n", " "))
    print(f"{len(texts)} texts ({dict(Counter(lang for _, lang in items))}), spans at >= {args.threshold}:")
    for entity, spans in sorted(counts.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"\n{entity}: {sum(spans.values())} spans, {len(spans)} distinct")
        for span, n in spans.most_common(args.top):
            print(f"{n:5d}  {span!r:36.36}  ...{snippet[(entity, span)]}...")

if __name__ == "__main__":
    main()
