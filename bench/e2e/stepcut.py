"""Side by side, in one process: the per-record cuts of issue 35 item 6 against the code they replace.

    python bench/e2e/stepcut.py --records 20000 --rounds 3

Records: bench/e2e's corpus, read and normalized as a run does (phase 1's steps up to the language step).
  language   LanguageStep.judge with the memo of lines seen (a fresh one per round) against the same
             predictions without it (3442376's predict_many); same answers checked; the memo's hits counted
  exact key  the dedup exact hashes (no punctuation folding) by str.split and join against 3442376's vectorized
             form (given the batch's code points, as compute_keys shares them with the shingles); same hashes checked
  lang read  phase 3's reads of each record's language (the runner, split, PII routing: three a record) from
             the _lang carried in the work file against meta's JSON
CPU seconds (process_time), best of the rounds, old and new alternating.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import xxhash  # noqa: E402
from corpus import write_corpus  # noqa: E402

from pipeline.core.config import PrepareConfig  # noqa: E402
from pipeline.data import lang  # noqa: E402
from pipeline.data.dedup import text  # noqa: E402
from pipeline.data.normalize import Normalizer  # noqa: E402
from pipeline.data.readers import expand_inputs  # noqa: E402


def records(n: int) -> list[dict]:
    folder = Path(tempfile.mkdtemp(prefix="stepcut-"))
    write_corpus(folder, n)
    cfg = PrepareConfig(inputs=[str(folder)], out=str(folder / "run"), dedup={"enabled": False},
                        pii={"enabled": False})
    out = []
    for index, f in enumerate(expand_inputs([str(folder)], cfg)):  # front steps: read, normalize (clean, quality)
        for batch in Normalizer(f, cfg, index).batches():
            out += batch
    return out


OLD_PREDICTIONS = [0]


def old_predict_many(self, texts, max_chars=None):
    """3442376's FastTextLid.predict_many: every text predicted."""
    limit = max_chars or lang.MAX_CHARS
    model_predict = self.model.f.predict

    def predict(*args):
        OLD_PREDICTIONS[0] += 1
        return model_predict(*args)

    out = []
    for t in texts:
        t = t[:limit]
        if not any(ch.isalpha() for ch in t):
            out.append(("und", 0.0))
            continue
        found = predict(lang._NOT_FASTTEXT_SPACE.sub(" ", t) + "\n", 1, 0.0, "replace")
        out.append((found[0][1].removeprefix("__label__"), float(found[0][0])) if found else ("und", 0.0))
    return out


def old_exact_hashes(texts: list[str], enc) -> np.ndarray:
    """3442376's exact_hashes without punctuation folding: vectorized over the batch's code points."""
    n = len(texts)
    space = (enc.cls & text._SPACE) != 0
    keep_pos = np.flatnonzero(~space)
    gap = np.diff(keep_pos) > 1
    first = np.searchsorted(keep_pos, enc.start, side="left")
    bounds = np.append(first, len(keep_pos))
    boundary = np.zeros(len(keep_pos), dtype=bool)
    boundary[1:] = gap
    boundary[first[first < len(keep_pos)]] = False
    out_pos = np.arange(len(keep_pos)) + np.cumsum(boundary)
    canon = np.full(len(keep_pos) + int(boundary.sum()), 32, dtype=np.uint32)
    canon[out_pos] = enc.cps[keep_pos]
    lo = np.zeros(n, dtype=np.int64)
    hi = np.zeros(n, dtype=np.int64)
    nonempty = bounds[1:] > bounds[:-1]
    lo[nonempty] = out_pos[bounds[:-1][nonempty]]
    hi[nonempty] = out_pos[bounds[1:][nonempty] - 1] + 1
    mv = memoryview(canon.view(np.uint8))
    digest = xxhash.xxh3_128_digest
    blob = b"".join([digest(mv[4 * a:4 * b]) for a, b in zip(lo.tolist(), hi.tolist())])
    return np.frombuffer(blob, dtype=">u8").reshape(n, 2).astype(np.uint64)


def bench_exact(recs: list[dict], rounds: int) -> None:
    batches = [[text.trainer_text(r).casefold() for r in recs[i:i + 1024]] for i in range(0, len(recs), 1024)]
    encoded = [text.encode_texts(b) for b in batches]  # compute_keys makes them for the shingles anyway
    times = {"old": [], "new": []}
    got = {}
    for _ in range(rounds):
        seconds, got["old"] = cpu(lambda: [old_exact_hashes(b, e) for b, e in zip(batches, encoded)])
        times["old"].append(seconds)
        seconds, got["new"] = cpu(lambda: [text.exact_hashes(b, False, e) for b, e in zip(batches, encoded)])
        times["new"].append(seconds)
    old, new = min(times["old"]), min(times["new"])
    same = all(np.array_equal(a, b) for a, b in zip(got["old"], got["new"]))
    print(f"exact key {len(recs):,} records: old {old / len(recs) * 1e6:.1f} us a record, new "
          f"{new / len(recs) * 1e6:.1f} ({new / old - 1:+.1%}); same hashes: {same}")


def cpu(fn) -> tuple[float, object]:
    t0 = time.process_time()
    result = fn()
    return time.process_time() - t0, result


def judge_all(step: lang.LanguageStep, sides: list, batch: int = 2000):
    return [step.judge(sides[i:i + batch]) for i in range(0, len(sides), batch)]


def bench_language(recs: list[dict], rounds: int) -> None:
    sides = [lang._sides(r) for r in recs]
    step = lang.LanguageStep(PrepareConfig(inputs=["x"], out="/tmp/x").filters)
    step.lid.model  # loaded outside the timing
    new_cls = type(step.lid)
    times = {"old": [], "new": []}
    answers, predicted, old_calls = {}, 0, 0
    for _ in range(rounds):
        for which in ("old", "new"):
            lid = new_cls()
            lid._model = step.lid.model
            if which == "old":
                lid.predict_many = old_predict_many.__get__(lid)
            step.lid = lid
            seconds, answers[which] = cpu(lambda: judge_all(step, sides))
            times[which].append(seconds)
            if which == "old":
                old_calls, OLD_PREDICTIONS[0] = OLD_PREDICTIONS[0], 0
            else:
                predicted = len(lid._seen)  # lines the model was given (each once)
    old, new = min(times["old"]), min(times["new"])
    print(f"language  {len(recs):,} records: old {old:.2f} CPU-s, new {new:.2f} ({new / old - 1:+.1%}); "
          f"same answers: {answers['old'] == answers['new']}; predictions: old {old_calls:,}, new {predicted:,}")


def bench_lang_read(recs: list[dict], rounds: int) -> None:
    from pipeline.data.lang import pii_language, record_lang

    step = lang.LanguageStep(PrepareConfig(inputs=["x"], out="/tmp/x").filters)
    judged = []
    for i in range(0, len(recs), 2000):
        judged += step.process([dict(r) for r in recs[i:i + 2000]])
    without = [{k: v for k, v in r.items() if k != "_lang"} for r in judged]

    def reads(batch):  # the runner, split and PII: three reads a record
        return [(record_lang(r), record_lang(r) or "und", pii_language(r, ("tr", "en", "ru"))) for r in batch]

    times = {"meta": [], "carried": []}
    got = {}
    for _ in range(rounds):
        for which, batch in (("meta", without), ("carried", judged)):
            seconds, got[which] = cpu(lambda: reads(batch))
            times[which].append(seconds)
    old, new = min(times["meta"]), min(times["carried"])
    print(f"lang read {len(judged):,} records: from meta {old:.3f} CPU-s, carried {new:.3f} "
          f"({new / old - 1:+.1%}; {(old - new) / len(judged) * 1e6:.1f} us a record); "
          f"same values: {got['meta'] == got['carried']}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    recs = records(args.records)
    bench_language(recs, args.rounds)
    bench_exact(recs, args.rounds)
    bench_lang_read(recs, args.rounds)


if __name__ == "__main__":
    main()
