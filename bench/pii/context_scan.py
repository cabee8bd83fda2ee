"""Would one Aho-Corasick scan per text pay for the context-word tests? (issue 18 item 2)

Records every ContextWords call (near, last_end, search) PiiStep.process makes on bench/pii's generated set,
then times, best of 5 on the same texts:
  * the calls replayed as they are (the stage today: one compiled regex per word list);
  * one overlapping ahocorasick-rs scan per text with every list's words, the regex's word-start rule (and,
    for words of up to 3 characters, the word-end rule) applied to each hit;
  * the recorded calls answered from those hits (bisect on the hit starts, the list's words as a set).
The last two together are what the one-pass design would cost; their difference to the first is the most it
can save (answering is approximate here: a hit must lie whole in the window, the regex's non-overlapping
alternation is not reproduced, so the output is not compared).

    pip install --target /tmp/ac ahocorasick-rs   # not a dependency of the project
    PYTHONPATH=/tmp/ac .venv/bin/python bench/pii/context_scan.py
"""
from __future__ import annotations

import bisect
import copy
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))


def record_calls(records: list[dict]) -> tuple[list, dict]:
    """(method name, ContextWords, args) of every call the stage makes, and the lists by id."""
    from pipeline.core.config import PiiConfig
    from pipeline.data.pii import PiiStep
    from pipeline.data.pii import text as text_module

    calls: list = []
    lists: dict = {}
    originals = {name: getattr(text_module.ContextWords, name) for name in ("near", "last_end", "search")}
    for name, fn in originals.items():
        def recorded(self, *args, _fn=fn, _name=name):
            calls.append((_name, self, args))
            lists[id(self)] = self
            return _fn(self, *args)
        setattr(text_module.ContextWords, name, recorded)
    try:
        step = PiiStep(PiiConfig(), salt=b"bench-salt-not-secret")
        for i in range(0, len(records), 500):
            step(records[i:i + 500])
    finally:
        for name, fn in originals.items():
            setattr(text_module.ContextWords, name, fn)
    return calls, lists


def best_of(fn, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        c = time.process_time()
        fn()
        best = min(best, time.process_time() - c)
    return best


def main() -> None:
    try:
        import ahocorasick_rs
    except ImportError:
        raise SystemExit("ahocorasick_rs is not importable: see the module docstring") from None
    from generate import generate, generate_names

    rows = generate(1500, 7) + generate_names(300, 7)
    calls, lists = record_calls([copy.deepcopy(r["record"]) for r in rows])
    texts = list({id(args[0]): args[0] for _, _, args in calls}.values())
    words = sorted({w for cw in lists.values() for w in cw.words})
    whole_word = [len(w) <= 3 for w in words]  # ContextWords: words of up to 3 characters match whole only
    automaton = ahocorasick_rs.AhoCorasick(words)
    word_ids = {id(cw): frozenset(words.index(w) for w in cw.words) for cw in lists.values()}

    def replay():
        for name, cw, args in calls:
            getattr(cw, name)(*args)

    def scan() -> dict:
        out = {}
        for t in texts:
            hits = [(s, e, k) for k, s, e in automaton.find_matches_as_indexes(t, overlapping=True)
                    if not (s and t[s - 1].isalpha()) and not (whole_word[k] and e < len(t) and t[e].isalpha())]
            out[id(t)] = ([h[0] for h in hits], hits)
        return out

    per_text = scan()

    def in_window(starts, hits, mine, lo, hi) -> list:
        return [h for h in hits[bisect.bisect_left(starts, lo):bisect.bisect_left(starts, hi)]
                if h[2] in mine and h[1] <= hi]

    def answer():
        for name, cw, args in calls:
            starts, hits = per_text[id(args[0])]
            mine = word_ids[id(cw)]
            if name == "search":
                any(h[2] in mine for h in hits)
            elif name == "last_end":
                _, start, before = args
                in_window(starts, hits, mine, max(0, start - before), start)
            else:
                _, start, end, before = args[:4]
                after = args[4] if len(args) > 4 else 0
                in_window(starts, hits, mine, max(0, start - before), start) or \
                    (after and in_window(starts, hits, mine, end, end + after))

    t_replay, t_scan, t_answer = best_of(replay), best_of(scan), best_of(answer)
    print(f"{len(lists)} word lists, {len(words)} words; {len(calls)} calls over {len(texts)} texts "
          f"({sum(map(len, texts)):,} characters), CPU ms, best of 5")
    print(f"  ContextWords calls as the stage makes them      {t_replay * 1000:6.1f}")
    print(f"  one ahocorasick-rs scan per text, boundaries    {t_scan * 1000:6.1f}")
    print(f"  the calls answered from the hits                {t_answer * 1000:6.1f}")
    print(f"  one-pass total                                  {(t_scan + t_answer) * 1000:6.1f}"
          f"   (saves {(t_replay - t_scan - t_answer) * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
