"""Benchmark of pipeline.data.decontam on a generated contamination set, and its cost at scale.

    .venv/bin/python bench/decontam/run.py                 # the full run (about two minutes on 2 cores)
    .venv/bin/python bench/decontam/run.py --quick         # smaller scale part
    .venv/bin/python bench/decontam/run.py --save          # also write bench/decontam/last_run.txt

Contamination set. Eval items, written as eval files in four input formats and indexed through the readers:
  alpaca   LLaMA-Factory's alpaca_en_demo.json items of 8+ words (../shared/peer_formats), Alpaca JSON
  c4       the first 40-120 words of half of c4_demo.jsonl's documents, JSON lines {"text"}
  wiki     paragraphs of about 80 words of wiki_demo.txt, plain text lines
  tr, ru   Turkish sentences from sample_data's vocabulary, Russian Faker sentences, ShareGPT conversations
Training records made from them, one of each kind per eval item:
  exact        the item as a chat (Alpaca, ShareGPT) or text record
  paraphrased  sentences reordered, about one word in seven swapped with its neighbour or replaced by another
  truncated    its first half, or its last half, of words (alternating)
  retemplated  inside an instruction wrapper or a chat template (a system prompt and markup around it)
  case_folded  upper case with Turkish rules (tr), ё written е (ru), upper case (others)
and clean negatives, which should be kept:
  topic        the item's words shuffled, with Faker sentences: the same topic words, no long n-gram
  other        the other half of c4's documents, alpaca items not taken as eval items (nor equal to one), Faker
               paragraphs
Printed per n-gram window (8, 13, 20): recall per kind, precision over all removals, and the removals per reason.

Scale. 10k and 100k generated eval items (about 60 words each): index build time, index memory (the n-gram
array and the MinHash part), and the step's cost per training record (20k records, a tenth of them copies).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from tempfile import TemporaryDirectory

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PEER = ROOT.parent / "shared" / "peer_formats"
sys.path.insert(0, str(ROOT))

from faker import Faker  # noqa: E402

from pipeline.core.config import PrepareConfig  # noqa: E402
from pipeline.data.decontam import DecontamStep, EvalIndex  # noqa: E402

KINDS = ("exact", "paraphrased", "truncated", "retemplated", "case_folded")
NEGATIVES = ("topic", "other")
NO_PII = PrepareConfig(pii={"enabled": False})  # eval file names are not personal data here
SYNONYMS = {"big": "large", "small": "little", "quick": "fast", "use": "employ", "help": "assist", "show": "display",
            "important": "significant", "often": "frequently", "buy": "purchase", "start": "begin", "end": "finish",
            "make": "create", "get": "obtain", "many": "numerous", "good": "fine", "people": "persons"}
WRAPPERS = ("Below is an instruction that describes a task. Write a response that appropriately completes the "
            "request.\n\n### Instruction:\n{q}\n\n### Response:\n{a}",
            "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n{q}<|im_end|>\n"
            "<|im_start|>assistant\n{a}<|im_end|>",
            "[INST] <<SYS>>\nAnswer briefly.\n<</SYS>>\n\n{q} [/INST] {a} </s>")


# ------------------------------------------------------------------------------------------------ eval items

def eval_items(rng: random.Random) -> tuple[list[dict], list[str]]:
    """(eval items {source, q, a}, clean 'other' texts from the same sources)."""
    items, other = [], []
    alpaca = json.loads((PEER / "alpaca_en_demo.json").read_text(encoding="utf-8"))
    for i, r in enumerate(alpaca):
        q, a = " ".join(x for x in (r["instruction"], r["input"]) if x), r["output"]
        if len(f"{q} {a}".split()) >= 8:
            (items.append({"source": "alpaca", "q": q, "a": a}) if i % 3 == 0 else other.append(f"{q}\n{a}"))
    docs = [json.loads(line)["text"] for line in (PEER / "c4_demo.jsonl").read_text(encoding="utf-8").splitlines()]
    for i, doc in enumerate(docs):
        words = doc.split()
        if i % 2 == 0 and len(words) >= 40:
            items.append({"source": "c4", "q": " ".join(words[:rng.randint(40, 120)]), "a": ""})
        elif i % 2:
            other.append(doc)
    for line in (PEER / "wiki_demo.txt").read_text(encoding="utf-8").splitlines():
        words = line.split()
        items += [{"source": "wiki", "q": " ".join(words[k:k + 80]), "a": ""}
                  for k in range(0, min(len(words), 1600) - 40, 400)]
    tr_vocab = sorted({w for r in json.loads((ROOT / "sample_data" / "support_tr_alpaca.json").read_text("utf-8"))
                       for v in r.values() for w in v.replace(".", " ").replace(",", " ").split() if w.isalpha()})
    for _ in range(100):
        sentence = lambda k: " ".join(rng.choices(tr_vocab, k=k)).capitalize() + "."  # noqa: E731
        items.append({"source": "tr", "q": sentence(rng.randint(8, 14)), "a": " ".join(sentence(10) for _ in range(2))})
    fake_ru = Faker("ru_RU")
    fake_ru.seed_instance(rng.randint(0, 1 << 30))
    for _ in range(100):
        items.append({"source": "ru", "q": fake_ru.sentence(nb_words=10), "a": fake_ru.paragraph(nb_sentences=3)})
    fake = Faker("en_US")
    fake.seed_instance(rng.randint(0, 1 << 30))
    seen = {f"{it['q']}\n{it['a']}" for it in items}
    other = [t for t in other if t not in seen]  # alpaca_en_demo.json holds a few items twice
    other += [fake.paragraph(nb_sentences=5) for _ in range(300)]
    other += [fake_ru.paragraph(nb_sentences=4) for _ in range(100)]
    return items, other


def write_eval_files(items: list[dict], folder: Path) -> None:
    by = defaultdict(list)
    for it in items:
        by[it["source"]].append(it)
    (folder / "alpaca.json").write_text(json.dumps(
        [{"instruction": it["q"], "input": "", "output": it["a"]} for it in by["alpaca"]], ensure_ascii=False), "utf-8")
    (folder / "c4.jsonl").write_text("".join(json.dumps({"text": it["q"]}) + "\n" for it in by["c4"]), "utf-8")
    (folder / "wiki.txt").write_text("".join(it["q"] + "\n" for it in by["wiki"]), "utf-8")
    (folder / "chats.jsonl").write_text("".join(json.dumps({"conversations": [
        {"from": "human", "value": it["q"]}, {"from": "gpt", "value": it["a"]}]}, ensure_ascii=False) + "\n"
        for it in by["tr"] + by["ru"]), "utf-8")


# ------------------------------------------------------------------------------------------ training records

def tr_upper(text: str) -> str:
    return text.replace("i", "İ").replace("ı", "I").upper()


def paraphrase(text: str, rng: random.Random, vocab: list[str]) -> str:
    """Clauses reordered, then about one word in seven swapped with its neighbour or replaced."""
    clauses = [c.strip() for c in text.replace(";", ".").split(".") if c.strip()]
    rng.shuffle(clauses)
    words = ". ".join(clauses).split()
    i = 0
    while i < len(words):
        roll = rng.random()
        if roll < 0.07 and i + 1 < len(words):
            words[i], words[i + 1] = words[i + 1], words[i]
            i += 1
        elif roll < 0.14:
            words[i] = SYNONYMS.get(words[i].lower(), rng.choice(vocab))
        i += 1
    return " ".join(words)


def training_records(items: list[dict], other: list[str], rng: random.Random) -> list[tuple[dict, str]]:
    """(record, kind) pairs: every kind once per eval item, the negatives."""
    fake = Faker("en_US")
    fake.seed_instance(rng.randint(0, 1 << 30))
    vocab = fake.get_words_list()
    out: list[tuple[dict, str]] = []

    def add(kind: str, text: str | None = None, q: str = "", a: str = "") -> None:
        n = len(out)
        rec = {"id": f"t{n}", "_order": n, "source": {"file": "train.jsonl", "line": n + 1}}
        if text is None:
            rec.update(kind="chat", messages=[{"role": "user", "content": q}, {"role": "assistant", "content": a}])
        else:
            rec.update(kind="text", text=text)
        out.append((rec, kind))

    for i, it in enumerate(items):
        q, a = it["q"], it["a"]
        whole = f"{q}\n{a}" if a else q
        add("exact", q=q, a=a) if a else add("exact", q)
        add("paraphrased", paraphrase(whole, rng, vocab))
        words = whole.split()
        add("truncated", " ".join(words[:len(words) // 2] if i % 2 else words[len(words) // 2:]))
        add("retemplated", WRAPPERS[i % len(WRAPPERS)].format(q=q, a=a or "Summarize the passage above."))
        folded = tr_upper(whole) if it["source"] == "tr" else \
            whole.replace("ё", "е").replace("Ё", "Е") if it["source"] == "ru" else whole.upper()
        add("case_folded", folded)
        topic = re.findall(r"\w+", whole)  # words, not whitespace tokens: "a-file-name.jpg" is five words
        rng.shuffle(topic)
        add("topic", " ".join(topic) + " " + fake.paragraph(nb_sentences=2))
    for text in other:
        add("other", text)
    return out


# ---------------------------------------------------------------------------------------------------- parts

def contamination(ns: list[int], rng: random.Random, log) -> None:
    items, other = eval_items(rng)
    pairs = training_records(items, other, rng)
    counts = Counter(kind for _, kind in pairs)
    log(f"eval items {len(items)} ({dict(Counter(it['source'] for it in items))}); training records {len(pairs)} "
        f"({dict(counts)})")
    with TemporaryDirectory() as tmp:
        write_eval_files(items, Path(tmp))
        for n in ns:
            index = EvalIndex.from_files([tmp], ngram=n, cfg=NO_PII)
            step = DecontamStep(index)
            kept = {r["id"] for r in step([dict(r) for r, _ in pairs])}
            found = Counter(kind for r, kind in pairs if r["id"] not in kept)
            contaminated = sum(found[k] for k in KINDS)
            removed = sum(found.values())
            log(f"\nn = {n}: {len(index.refs)} eval records, {len(index.hashes):,} n-grams, short lengths "
                f"{list(index.short_lengths)}; removed {removed} ({dict(step.stats.dropped)})")
            for kind in KINDS:
                log(f"  recall    {kind:<12} {found[kind] / counts[kind]:.3f}  ({found[kind]}/{counts[kind]})")
            for kind in NEGATIVES:
                log(f"  removed   {kind:<12} {found[kind]:>5}  of {counts[kind]} clean")
            log(f"  precision {contaminated / max(removed, 1):.4f}  ({contaminated}/{removed})")


def generated_items(count: int, rng: random.Random) -> list[dict]:
    fake = Faker("en_US")
    vocab = fake.get_words_list() + Faker("ru_RU").get_words_list()
    return [{"id": f"e{i}", "text": " ".join(rng.choices(vocab, k=rng.randint(40, 80))),
             "source": {"file": "eval.jsonl", "line": i + 1}} for i in range(count)]


def scale(sizes: list[int], train: int, rng: random.Random, log) -> None:
    log("\nscale (n = 13; generated eval items of 40-80 words):")
    for size in sizes:
        items = generated_items(size, rng)
        t = time.perf_counter()
        index = EvalIndex.from_records(items)
        built = time.perf_counter() - t
        fake = Faker("en_US")
        fake.seed_instance(size)
        records = [{"id": f"t{i}", "_order": i, "kind": "text",
                    "text": items[rng.randrange(size)]["text"] if i % 10 == 0 else fake.paragraph(nb_sentences=6)}
                   for i in range(train)]
        step = DecontamStep(index)
        t = time.perf_counter()
        for lo in range(0, train, 2000):  # the run's batch size
            step(records[lo:lo + 2000])
        per = (time.perf_counter() - t) / train * 1e6
        mib = 1 << 20
        log(f"  {size:>7,} eval items: index {index.nbytes / mib:6.1f} MiB (n-grams {len(index.hashes):,}, "
            f"{(index.hashes.nbytes + index.owners.nbytes) / mib:.1f} MiB; MinHash {index.near.nbytes / mib:.1f} MiB), "
            f"built in {built:.1f} s; {per:.0f} us per training record ({train:,} records, "
            f"{sum(step.stats.dropped.values())} removed of {train // 10} copies)")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="scale part at 2k and 10k eval items")
    ap.add_argument("--save", action="store_true", help=f"write the output to {HERE / 'last_run.txt'}")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    lines: list[str] = []

    def log(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    log(f"bench/decontam/run.py --seed {args.seed}: {os.cpu_count()} CPU cores (times are wall clock, one process; "
        "on a shared machine they vary by 2x between runs)\n")
    rng = random.Random(args.seed)
    contamination([8, 13, 20], rng, log)
    scale([2_000, 10_000] if args.quick else [10_000, 100_000], 20_000, rng, log)
    if args.save:
        (HERE / "last_run.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
