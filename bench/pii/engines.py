"""Multi-pattern engines measured for the PII stage's candidate scan (issue 18 items 1 and 5).

    .venv/bin/python bench/pii/engines.py [--records 900]

Two questions, on the generated evaluation set's texts (bench/pii/generate.py, ~700-character chats and
texts, tr/ru/en), each engine in this process, CPU time of the scan alone (compile timed apart):
  1. the context and cue words of every recognizer (every ContextWords list: the positive words of each
     entity, the negative words, the secret keywords) found in each folded text in one pass, against the
     stage's way (one `quick` presence regex per list and per text, stdlib re);
  2. which of the recognizers' candidate regexes each regex engine accepts at all (hyperscan has no look-
     behind; RE2 has no look-around): the share that a one-pass regex set could hold.
The engines are optional here (pip install hyperscan pyahocorasick ahocorasick-rs google-re2); one that is
not installed is listed as such.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _texts(n: int) -> list[str]:
    from generate import field_texts, generate

    return [t for r in generate(n, 7) for t in field_texts(r["record"]) if t]


def _word_lists():
    from pipeline.data.pii.recognizers import base as R
    from pipeline.data.pii.recognizers.secret import SecretRecognizer

    lists = {f"positive:{e}": R.positive(e) for e in R._CTX["positive"]}
    lists["negative"] = R.NEGATIVE
    lists["other_ids"] = R._OTHER_IDS
    lists["secret_keywords"] = SecretRecognizer._FOLDED
    return lists


def _cpu(fn, reps: int = 3) -> float:
    best = None
    for _ in range(reps):
        c = time.process_time()
        fn()
        t = time.process_time() - c
        best = t if best is None else min(best, t)
    return best


def measure_words(norms: list[str]) -> list[tuple[str, float, float, str]]:
    lists = _word_lists()
    words = sorted({w for cw in lists.values() for w in cw.words}, key=len, reverse=True)
    rows = []

    def per_list():
        for t in norms:
            for cw in lists.values():
                if cw.quick is not None:
                    cw.quick.search(t)

    rows.append(("stdlib re, one presence regex per list (the stage today)", 0.0, _cpu(per_list),
                 f"{len(lists)} scans a text"))
    c = time.process_time()
    alt = re.compile("|".join(map(re.escape, words)))
    comp = time.process_time() - c
    rows.append(("stdlib re, one alternation of all words", comp,
                 _cpu(lambda: [list(alt.finditer(t)) for t in norms]), "non-overlapping"))
    try:
        import ahocorasick

        c = time.process_time()
        auto = ahocorasick.Automaton()
        for i, w in enumerate(words):
            auto.add_word(w, i)
        auto.make_automaton()
        comp = time.process_time() - c
        rows.append(("pyahocorasick 2.x, Automaton.iter", comp, _cpu(lambda: [list(auto.iter(t)) for t in norms]),
                     "overlapping"))
    except ImportError:
        rows.append(("pyahocorasick", 0.0, float("nan"), "not installed"))
    try:
        import ahocorasick_rs

        c = time.process_time()
        ac = ahocorasick_rs.AhoCorasick(words)
        comp = time.process_time() - c
        rows.append(("ahocorasick-rs, find_matches_as_indexes(overlapping)", comp,
                     _cpu(lambda: [ac.find_matches_as_indexes(t, overlapping=True) for t in norms]), "overlapping"))
    except ImportError:
        rows.append(("ahocorasick-rs", 0.0, float("nan"), "not installed"))
    try:
        import hyperscan

        c = time.process_time()
        db = hyperscan.Database()
        db.compile(expressions=[re.escape(w).encode() for w in words], ids=list(range(len(words))),
                   elements=len(words), flags=[hyperscan.HS_FLAG_UTF8] * len(words))
        scratch = hyperscan.Scratch(db)
        comp = time.process_time() - c

        def hs_scan():
            for t in norms:
                found = []
                db.scan(t.encode("utf-8"), match_event_handler=lambda i, f, to, fl, ctx: found.append((i, to)),
                        scratch=scratch)

        rows.append(("hyperscan 0.9 (Hyperscan 5.4), Database.scan", comp, _cpu(hs_scan),
                     "overlapping, byte offsets"))
    except ImportError:
        rows.append(("hyperscan", 0.0, float("nan"), "not installed"))
    try:
        import re2

        c = time.process_time()
        r2 = re2.compile("|".join(map(re.escape, words)))
        comp = time.process_time() - c
        rows.append(("google-re2 1.1, one alternation, finditer", comp,
                     _cpu(lambda: [list(r2.finditer(t)) for t in norms]), "non-overlapping"))
    except ImportError:
        rows.append(("google-re2", 0.0, float("nan"), "not installed"))
    return rows


def _recognizer_patterns() -> list[tuple[str, re.Pattern]]:
    from pipeline.data.pii import latin_names, names, ner_person, ru_names, text
    from pipeline.data.pii.recognizers import IDENTIFIER_RECOGNIZERS, base

    # one module per recognizer: each regex once, though several modules import it (CYRILLIC, NON_WORD)
    modules = [base, *dict.fromkeys(sys.modules[cls.__module__] for cls in IDENTIFIER_RECOGNIZERS), names, latin_names,
               ru_names, ner_person, text]
    out, seen = [], set()
    for mod in modules:
        for owner_name in dir(mod):
            owner = getattr(mod, owner_name)
            items = [(owner_name, owner)] if isinstance(owner, re.Pattern) else \
                [(f"{owner_name}.{k}", v) for k, v in vars(owner).items() if isinstance(v, re.Pattern)] \
                if isinstance(owner, type) and owner.__module__ == mod.__name__ else []
            out += [(name, rx) for name, rx in items if id(rx) not in seen]
            seen.update(id(rx) for _, rx in items)
    return out


def measure_regex_support() -> list[tuple[str, int, int]]:
    pats = _recognizer_patterns()
    rows = [("stdlib re", len(pats), len(pats))]
    try:
        import hyperscan

        ok = 0
        for _, p in pats:
            try:
                db = hyperscan.Database()
                db.compile(expressions=[p.pattern.encode()], flags=[hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_UCP])
                ok += 1
            except Exception:  # hyperscan.error: look-behind, back-references, lazy quantifiers...
                pass
        rows.append(("hyperscan", ok, len(pats)))
    except ImportError:
        pass
    try:
        import os

        import re2

        ok = 0
        saved = os.dup(2)
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # RE2 logs every rejected pattern to stderr
        try:
            for _, p in pats:
                try:
                    re2.compile(p.pattern)
                    ok += 1
                except Exception:  # re2.error: look-around, back-references
                    pass
        finally:
            os.dup2(saved, 2)
        rows.append(("google-re2", ok, len(pats)))
    except ImportError:
        pass
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=900)
    args = ap.parse_args()
    from pipeline.data.pii.text import fold

    norms = [fold(t) for t in _texts(args.records)]
    chars = sum(map(len, norms))
    n_words = len({w for cw in _word_lists().values() for w in cw.words})
    print(f"{len(norms)} texts, {chars} characters; {n_words} distinct context/cue words in {len(_word_lists())} lists")
    rows = measure_words(norms)
    base = rows[0][2]
    print(f"\n| engine | compile ms | scan ms | ns/char | vs the stage's way | matches |\n|---|---|---|---|---|---|")
    for name, comp, cpu, note in rows:
        print(f"| {name} | {comp * 1e3:.1f} | {cpu * 1e3:.1f} | {cpu / chars * 1e9:.1f} | "
              f"{base / cpu if cpu == cpu and cpu else float('nan'):.2f}x | {note} |")
    print("\n| regex engine | recognizer patterns it compiles |\n|---|---|")
    for name, ok, total in measure_regex_support():
        print(f"| {name} | {ok} of {total} |")


if __name__ == "__main__":
    main()
