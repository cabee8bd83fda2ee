"""What the detector replaces in real English text, per entity type, and how fast (a spot check).

The peer_formats files (../shared/peer_formats: alpaca, c4, wiki, glaive) are public texts without labels, so
this prints no recall or precision: it lists the most frequent spans of each entity type at or above the
score threshold, with a snippet each, for a person to judge ("US", "San Francisco", "Prime Minister ..." as
names were found this way). --speed times the PII stage and the plain baselines of run.py on these records
(alpaca and glaive as chats, c4 and wiki as texts): real text holds far less personal data than the
generated set, so the prefilters skip more of it.
    .venv/bin/python bench/pii/real_text.py [--top 25] [--entity PERSON] [--peer ../shared/peer_formats]
    .venv/bin/python bench/pii/real_text.py --speed [--chars 700]
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


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


def _pieces(t: str, chars: int) -> list[str]:
    """`t` cut at spaces into pieces of about `chars` characters (one piece, maybe empty, if short)."""
    if len(t) <= chars * 1.3:
        return [t]
    out, k = [], 0
    while k < len(t):
        end = len(t) if len(t) - k <= chars * 1.3 else (t.rfind(" ", k, k + chars) + 1 or k + chars)
        out.append(t[k:end])
        k = end
    return out


def peer_records(peer: Path, chars: int | None = None) -> list[dict]:
    """Canonical records (as run.py's rows, without labels) from the peer files."""
    def chat(contents):
        msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": c} for i, c in enumerate(contents) if c]
        return {"kind": "chat", "messages": msgs, "text": None}

    def text(t):
        return {"kind": "text", "messages": None, "text": t}

    records = [chat(["\n\n".join(x for x in (row.get("instruction"), row.get("input")) if x), row.get("output")])
               for row in json.loads((peer / "alpaca_en_demo.json").read_text(encoding="utf-8"))]
    records += [chat([turn.get("value", "") for turn in row.get("conversations", [])])
                for row in json.loads((peer / "glaive_toolcall_en_demo.json").read_text(encoding="utf-8"))]
    with (peer / "c4_demo.jsonl").open(encoding="utf-8") as fh:
        records += [text(json.loads(line)["text"]) for line in fh]
    records += [text(t) for t in (peer / "wiki_demo.txt").read_text(encoding="utf-8").split("\n") if t.strip()]
    if chars:  # long documents as several records of about `chars` characters, cut at spaces
        records = [part for rec in records
                   for part in ([text(p) for p in _pieces(rec["text"], chars)] if rec["kind"] == "text" else [rec])]
    rows = []
    for k, rec in enumerate(records):
        if rec["kind"] == "chat" and not rec["messages"]:
            continue
        rec.update(source={"file": "peer_formats", "line": k + 1}, meta="{}", id=str(k))
        rows.append({"record": rec, "labels": [], "lang": "en"})
    return rows


def speed(peer: Path, chars: int | None) -> None:
    from run import _in_child, field_texts, measure_baseline, measure_stage, plain_model_installed

    rows = peer_records(peer, chars)
    chars = sum(sum(len(x) for x in field_texts(r["record"])) for r in rows) / len(rows)
    print(f"{len(rows)} records from {peer.name} ({chars:.0f} chars on average); each side in a fresh process, "
          "engine set-up included (wall clock | CPU time):")
    stage = _in_child(measure_stage, rows, 500)
    sides = {"PII stage, PiiStep.process": stage,
             "base1 (1 analyze/record)": _in_child(measure_baseline, rows, "detected"),
             "base3 (1 analyze/record/language)": _in_child(measure_baseline, rows, "all")}
    if plain_model_installed():  # these records are English: Presidio's default set-up fits them
        sides["plain Presidio (1 analyze/message)"] = _in_child(measure_baseline, rows, "plain", True)
    for name, m in sides.items():
        print(f"  {name:36} {len(rows) / m['seconds']:8.1f} | {len(rows) / m['cpu_seconds']:8.1f} records/s")
    for name in ("base1", "base3", "plain"):
        m = next((v for k, v in sides.items() if k.startswith(name)), None)
        if m is None:
            print("  plain Presidio: not measured, spaCy's model is not installed (pip install -e '.[bench]')")
            continue
        print(f"  speedup vs {name:<24}{m['seconds'] / stage['seconds']:6.1f}x | "
              f"{m['cpu_seconds'] / stage['cpu_seconds']:6.1f}x")
    print(f"  texts scanned {stage['counters'].get('texts_scanned', 0)}, skipped by the prefilter "
          f"{stage['counters'].get('texts_skipped', 0)}, answered from the cache {stage['counters'].get('texts_cached', 0)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peer", default=str(ROOT.parent / "shared" / "peer_formats"))
    ap.add_argument("--top", type=int, default=25, help="spans listed per entity type")
    ap.add_argument("--entity", help="only this entity type (PERSON, PHONE, ...)")
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--speed", action="store_true", help="time the stage and the baselines on these records")
    ap.add_argument("--chars", type=int, help="with --speed: cut documents into records of about this many characters")
    args = ap.parse_args()
    if args.speed:
        speed(Path(args.peer), args.chars)
        return
    from pipeline.data.pii.engine import get_detector, resolve
    from pipeline.data.pii.lang import detect_language

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
