"""Exact and near-duplicate removal and validation leakage (pipeline.data.dedup)."""
from __future__ import annotations

import json
import math
import random

import numpy as np
import pyarrow.parquet as pq
import pytest
import xxhash
from datasketch import MinHash

from pipeline.core.config import DedupConfig
from pipeline.core.stats import StageStats
from pipeline.data import dedup as D
from pipeline.data.dedup import clusters
from pipeline.data.dedup.params import sketch_window
from pipeline.data.dedup.sketch import sketch_arrays
from pipeline.data.dedup.text import _WORD, encode_texts

_SYL = "ka lo mi ne ru sa ti po de gu va ze bi fo ha je ku xi ya wo an el is or un er ar in ça şe ра то".split()
_VOCAB = sorted({"".join(random.Random(i).choices(_SYL, k=1 + i % 3)) for i in range(6000)})


def words(rng: random.Random, n: int) -> list[str]:
    return rng.choices(_VOCAB, k=n)


def sentences(ws: list[str]) -> str:
    return " ".join(f"{' '.join(ws[i:i + 12]).capitalize()}." for i in range(0, len(ws), 12))


def text_rec(text: str, order: int, rid: str | None = None, is_eval: bool = False) -> dict:
    return {"id": rid or f"r{order}", "kind": "text", "messages": None, "text": text,
            "source": {"file": "val.jsonl" if is_eval else "train.jsonl", "line": order}, "meta": "{}",
            "_order": order, "_eval": is_eval}


def chat_rec(turns: list[tuple[str, str]], order: int, rid: str | None = None, is_eval: bool = False) -> dict:
    return {"id": rid or f"r{order}", "kind": "chat", "text": None,
            "messages": [{"role": r, "content": c} for r, c in turns],
            "source": {"file": "train.jsonl", "line": order}, "meta": "{}", "_order": order, "_eval": is_eval}


def edit(ws: list[str], rng: random.Random, k: int) -> list[str]:
    ws = list(ws)
    for _ in range(k):
        ws[rng.randrange(len(ws))] = rng.choice(_VOCAB)
    return ws


def shingle_set(text: str, n: int = 5) -> set:
    toks = "".join(c if (D.char_classes()[ord(c)] & _WORD) else " " for c in text.casefold()).split()
    return {tuple(toks[i:i + n]) for i in range(max(1, len(toks) - n + 1))}


def jaccard(a: str, b: str) -> float:
    x, y = shingle_set(a), shingle_set(b)
    return len(x & y) / len(x | y)


def run(records: list[dict], cfg: DedupConfig, tmp_path, shards: int = 1, seed: int | None = None,
        name: str = "k", batch: int = 64) -> D.DedupResult:
    """What the runner does: keys per shard (in batches appended to one file), then the global step."""
    recs = list(records)
    if seed is not None:
        random.Random(seed).shuffle(recs)
    paths = []
    for i in range(shards):
        part = recs[i::shards]
        path = tmp_path / f"{name}-{i}.parquet"
        writer = None
        for lo in range(0, max(len(part), 1), batch):
            table = D.compute_keys(part[lo:lo + batch], cfg)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
        writer.close()
        paths.append(str(path))
    if seed is not None:
        random.Random(seed + 1).shuffle(paths)
    return D.find_duplicates(paths, cfg, str(tmp_path / f"{name}-work"))


def removed_map(result: D.DedupResult) -> dict[str, tuple[str, str]]:
    t = result.removed.to_pylist()
    return {r["id"]: (r["reason"], r["duplicate_of"]) for r in t}


@pytest.fixture(scope="module")
def corpus():
    """Originals, exact copies (case/space changes), near copies (J >= 0.85), hard negatives (J < 0.5)."""
    rng = random.Random(7)
    records, truth = [], {}
    originals = []
    for i in range(150):
        ws = words(rng, 160)
        originals.append(ws)
        records.append(text_rec(sentences(ws), len(records), f"orig{i}"))
    for i in range(15):
        src = records[i * 7]
        text = "  " + src["text"].upper().replace(" ", "   ", 5) + "\n"
        records.append(text_rec(text, len(records), f"exact{i}"))
        truth[f"exact{i}"] = ("exact_duplicate", src["id"])
    for i in range(25):
        j = 3 + i * 5
        ws = edit(originals[j], rng, 1 if i % 4 == 0 else 1 + i % 2)
        if i % 4 == 0:
            ws = ws[: int(len(ws) * 0.95)]  # truncation
        text = sentences(ws)
        assert jaccard(text, records[j]["text"]) >= 0.85
        records.append(text_rec(text, len(records), f"near{i}"))
        truth[f"near{i}"] = ("near_duplicate", records[j]["id"])
    for i in range(20):
        j = 1 + i * 6
        ws = originals[j][: 40 + i] + words(rng, 120 - i)
        text = sentences(ws)
        assert jaccard(text, records[j]["text"]) < 0.5
        records.append(text_rec(text, len(records), f"neg{i}"))
    return records, truth


def test_lsh_parameters_catch_pairs_just_above_threshold():
    assert D.lsh_params(128, 0.8, verify=True) == (21, 6)
    assert D.lsh_params(128, 0.8, verify=False) == (9, 13)  # datasketch's optimal_param
    for num_perm, threshold in ((128, 0.8), (256, 0.85), (64, 0.7), (128, 0.5)):
        b, r = D.lsh_params(num_perm, threshold)
        assert b * r <= num_perm
        assert D.candidate_probability(threshold, b, r) >= 0.99
    assert D.candidate_probability(0.85, 9, 13) < 0.7  # why the plain optimal_param is not enough
    from datasketch.lsh import _optimal_param
    for threshold, num_perm in ((0.8, 128), (0.5, 128), (0.9, 64), (0.7, 256)):
        assert D.optimal_param(threshold, num_perm) == _optimal_param(threshold, num_perm, 0.5, 0.5)


def test_signatures_are_datasketch_minhash():
    for num_perm, seed in ((128, 1), (64, 1), (256, 3)):
        a, b = MinHash(num_perm=num_perm, seed=seed).permutations
        x, y = D.minhash_permutations(num_perm, seed)
        assert np.array_equal(a, x) and np.array_equal(b, y)
    texts = ["The quick brown fox jumps over the lazy dog " * 5, "kısa metin", "日本語のテキストはスペースなしで書かれています。",
             "", "word " * 30]
    hashes, counts, modes = D.shingle_hashes([t.casefold() for t in texts], 5, 5)
    assert modes.tolist() == [D.MODE_WORD, D.MODE_CHAR, D.MODE_CHAR, D.MODE_NONE, D.MODE_WORD]
    sig = D.minhash_signatures(hashes, counts, 128)
    offsets = np.concatenate(([0], np.cumsum(counts)))
    minhashes = []
    for i in range(len(texts)):
        m = MinHash(num_perm=128, seed=1, hashfunc=int)
        m.update_batch(hashes[offsets[i]:offsets[i + 1]].tolist())
        assert np.array_equal(m.hashvalues, sig[i])
        minhashes.append(m)
    assert minhashes[0].jaccard(minhashes[4]) == np.mean(sig[0] == sig[4])


def test_a_record_longer_than_a_chunk_is_hashed_in_bounded_memory():
    """A record's shingles were one (num_perm, shingles) matrix: a 7 MB record without spaces (7M char
    shingles) took 4.4 GB. Now its chunks' minima are folded: the same signature, scratch of one chunk."""
    import tracemalloc

    rng = np.random.default_rng(5)
    hashes = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)
    counts = np.array([3, 150_000, 0, 49_997], dtype=np.int64)  # a short record on each side of the long one
    tracemalloc.start()
    try:
        sig = D.minhash_signatures(hashes, counts, 128)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak  # 128 x 150,000 x 4 bytes = 77 MB before
    offsets = np.concatenate(([0], np.cumsum(counts)))
    for i in range(len(counts)):
        m = MinHash(num_perm=128, seed=1, hashfunc=int)
        m.update_batch(hashes[offsets[i]:offsets[i + 1]].tolist())
        assert np.array_equal(m.hashvalues, sig[i]), i


def test_char_shingles_of_a_long_text_take_a_few_bytes_a_character():
    """Char-mode shingling built index arrays of 8 bytes per character (about 60 bytes a character at its
    peak: 520 MB for a record of 8M characters without spaces); masks and chunked window hashes keep it near
    the code points themselves. The shingles are those of the text joined word by word (checked alone)."""
    import tracemalloc

    rng = random.Random(9)
    text = "".join(rng.choices("abcdefghij", k=4_000_000))
    enc = encode_texts([text])
    tracemalloc.start()
    try:
        hashes, counts, modes = D.shingle_hashes([text], 5, 5, enc)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert modes.tolist() == [D.MODE_CHAR] and counts.tolist() == [len(text) - 4]
    assert peak < 32 * len(text), peak  # 16 bytes a character after (chunks of fixed size), 64 before
    short = "xy, zw!!"  # a text shorter than one n-gram, after the long one: one shingle
    both, both_counts, _ = D.shingle_hashes([text, short, "ab cd"], 5, 5)
    assert both_counts.tolist() == [len(text) - 4, 1, 1] and np.array_equal(both[:len(hashes)], hashes)
    assert both[-2] == D.shingle_hashes(["xy zw"], 5, 5)[0][0]


def test_shingles_are_the_word_ngram_set_independent_of_batch_and_punctuation():
    rng = random.Random(1)
    text = sentences(words(rng, 120))
    alone, _, _ = D.shingle_hashes([text.casefold()], 5, 5)
    # Same text inside a batch, with other texts around it.
    batch = [sentences(words(rng, 50)).casefold(), text.casefold(), "x" * 3, sentences(words(rng, 80)).casefold()]
    hashes, counts, _ = D.shingle_hashes(batch, 5, 5)
    offsets = np.concatenate(([0], np.cumsum(counts)))
    assert np.array_equal(hashes[offsets[1]:offsets[2]], alone)
    # One hash per distinct word 5-gram (no collisions, no spurious shingles).
    assert len(set(alone.tolist())) == len(shingle_set(text))
    # Punctuation and spacing do not change the word shingles.
    noisy = text.replace(" ", " ,  ").replace(".", "!!\n")
    assert set(D.shingle_hashes([noisy.casefold()], 5, 5)[0].tolist()) == set(alone.tolist())


def test_exact_hash_is_the_reference_normalization():
    rng = random.Random(3)
    alphabet = " \t\n\u00a0\u3000.,!-_«»aBcÇğİ日\udc80"
    texts = ["", "   ", "a.b a . b", "İstanbul’da ŞEHİR… «ok»", " x", "y "]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25))) for _ in range(500)]
    for punct in (False, True):
        got = D.exact_hashes([t.casefold() for t in texts], punct)
        for t, row in zip(texts, got):
            canon = D.normalize_exact(t, True, punct).encode("utf-32-le", "surrogatepass")
            assert row.tobytes() == np.frombuffer(xxhash.xxh3_128_digest(canon), ">u8").astype(np.uint64).tobytes()
    assert D.normalize_exact("Hello,   WORLD!\n") == "hello, world!"
    assert D.normalize_exact("Hello,   WORLD!\n", punctuation_fold=True) == "hello world"


def test_planted_duplicates_found_and_distinct_texts_kept(corpus, tmp_path):
    records, truth = corpus
    result = run(records, DedupConfig(), tmp_path, shards=3)
    got = removed_map(result)
    assert got == truth  # every planted duplicate, with the right reason and target; nothing else
    counts = result.report["counts"]
    assert counts == {"exact_duplicate": 15, "near_duplicate": 25, "validation_leak": 0, "total": 40}
    assert result.removed.column("_order").to_pylist() == sorted(result.removed.column("_order").to_pylist())
    sims = dict(zip(result.removed.column("id").to_pylist(), result.removed.column("similarity").to_pylist()))
    assert all(sims[k] == 1.0 for k in truth if k.startswith("exact"))
    assert all(0.7 <= sims[k] < 1.0 for k in truth if k.startswith("near"))
    json.dumps(result.report, allow_nan=False)


def test_identical_across_runs_shard_counts_and_presentation_order(corpus, tmp_path):
    records, _ = corpus
    for keep in ("first", "longest"):
        cfg = DedupConfig(keep=keep)
        results = [run(records, cfg, tmp_path, shards=s, seed=seed, name=f"{keep}{s}-{seed}", batch=b)
                   for s, seed, b in ((1, None, 500), (1, None, 7), (2, 5, 64), (4, 11, 13), (9, 3, 64))]
        first = results[0]
        for other in results[1:]:
            assert other.removed.equals(first.removed)
            volatile = {"seconds", "cpu_seconds", "peak_rss_mb"}  # measurements of this run, not results
            a = {k: v for k, v in first.report.items() if k not in volatile}
            b = {k: v for k, v in other.report.items() if k not in volatile}
            assert a == b


def test_input_order_decides_first(tmp_path):
    rng = random.Random(5)
    ws = words(rng, 150)
    a, b = sentences(ws), sentences(edit(ws, rng, 1))
    r1 = run([text_rec(a, 10, "A"), text_rec(b, 20, "B")], DedupConfig(), tmp_path, name="o1")
    r2 = run([text_rec(a, 20, "A"), text_rec(b, 10, "B")], DedupConfig(), tmp_path, name="o2")
    assert removed_map(r1) == {"B": ("near_duplicate", "A")}
    assert removed_map(r2) == {"A": ("near_duplicate", "B")}


def test_validation_leakage_removed_and_eval_records_kept(tmp_path):
    rng = random.Random(11)
    train = [text_rec(sentences(words(rng, 150)), i, f"t{i}") for i in range(30)]
    ws = words(rng, 150)
    evals = [
        text_rec(train[3]["text"].lower(), 100, "v-exact", is_eval=True),
        text_rec(" ".join(edit(train[5]["text"].split(), rng, 1)), 101, "v-near", is_eval=True),
        text_rec(sentences(ws), 102, "v-own", is_eval=True),
        text_rec(sentences(ws), 103, "v-own-copy", is_eval=True),  # eval duplicates of each other: both kept
    ]
    # A train record that copies an eval record, placed before it in input order, and its train copy.
    train.append(text_rec(sentences(edit(ws, rng, 1)), 50, "t-copies-eval"))
    train.append(text_rec(train[3]["text"], 60, "t3-copy"))
    result = run(train + evals, DedupConfig(), tmp_path, shards=2)
    got = removed_map(result)
    assert got == {
        "t3": ("validation_leak", "v-exact"),
        "t3-copy": ("validation_leak", "v-exact"),
        "t5": ("validation_leak", "v-near"),
        "t-copies-eval": ("validation_leak", "v-own"),
    }
    assert result.report["counts"]["validation_leak"] == 4
    assert result.report["validation_leak"] == {"exact": 2, "near": 2}
    assert result.report["eval_records"] == 4
    # Exact dedup only: the near leak stays, the exact ones go.
    exact_only = removed_map(run(train + evals, DedupConfig(near=False), tmp_path, name="exact"))
    assert exact_only == {"t3": ("validation_leak", "v-exact"), "t3-copy": ("validation_leak", "v-exact")}


def test_audit_lists_every_removal(corpus, tmp_path):
    records, truth = corpus
    result = run(records, DedupConfig(), tmp_path, shards=2)
    path = D.write_audit(result, tmp_path / "run" / "dedup_removed.jsonl")
    rows = [json.loads(line) for line in open(path, encoding="utf-8")]
    assert {r["id"]: (r["reason"], r["duplicate_of"]) for r in rows} == truth
    assert all(set(r) == {"_order", "id", "reason", "duplicate_of", "duplicate_of_order", "similarity",
                          "source_file", "source_line", "duplicate_of_file", "duplicate_of_line"} for r in rows)
    by_id = {r["id"]: r for r in records}
    for r in rows:  # where each removed record and the record it duplicates came from
        assert (r["source_file"], r["source_line"]) == tuple(by_id[r["id"]]["source"].values())
        assert (r["duplicate_of_file"], r["duplicate_of_line"]) == tuple(by_id[r["duplicate_of"]]["source"].values())
    pq_path = D.write_audit(result, tmp_path / "run" / "dedup_removed.parquet")
    assert pq.read_table(pq_path).equals(result.removed)
    # What the runner does with it: drop from the shards, count as dropped(reason).
    stats = StageStats("dedup")
    kept = D.apply_removals(records, D.removed_reasons(result), stats)
    assert len(kept) == len(records) - len(truth)
    assert dict(stats.dropped) == {"exact_duplicate": 15, "near_duplicate": 25}
    # The report: parameters, histogram, examples by id and source, no content.
    rep = result.report
    assert rep["parameters"]["bands"] == 21 and rep["parameters"]["rows"] == 6
    clusters_ = rep["clusters"]
    assert sum(int(k) * v for k, v in clusters_["size_histogram"].items()) == clusters_["records_in_clusters"]
    assert rep["examples"] and all("source" in m and "id" in m for ex in rep["examples"] for m in ex["members"])
    text = json.dumps(rep)
    assert not any(w in text for w in records[0]["text"].split()[:20] if len(w) > 8)


def test_keep_policies(tmp_path):
    rng = random.Random(21)
    ws = words(rng, 150)
    base = sentences(ws)
    longer = sentences(ws + words(rng, 10))
    recs = [
        text_rec(base, 1, "first"),
        text_rec(longer, 2, "longest"),
        chat_rec([("user", " ".join(ws[:40])), ("assistant", " ".join(ws[40:])), ("user", "ok"),
                  ("assistant", "ok")], 3, "most_turns"),
    ]
    # The chat record shares most 5-grams with the texts (role markers and turn breaks differ).
    cfg = DedupConfig(threshold=0.7)
    assert removed_map(run(recs, cfg, tmp_path, name="f")).keys() == {"longest", "most_turns"}
    kept = {k: set(r["id"] for r in recs) - removed_map(run(recs, DedupConfig(threshold=0.7, keep=k), tmp_path,
                                                             name=k)).keys()
            for k in ("first", "longest", "most_turns")}
    assert kept == {"first": {"first"}, "longest": {"longest"}, "most_turns": {"most_turns"}}
    # Exact copies: "first" is the lowest _order whatever the order they are given in.
    copies = [text_rec(base, o, f"c{o}") for o in (9, 4, 7)]
    assert removed_map(run(copies, DedupConfig(), tmp_path, name="c")) == {
        "c7": ("exact_duplicate", "c4"), "c9": ("exact_duplicate", "c4")}


def test_assistant_scope(tmp_path):
    rng = random.Random(31)
    answer = sentences(words(rng, 120))
    a = chat_rec([("user", sentences(words(rng, 150))), ("assistant", answer)], 1, "a")
    b = chat_rec([("user", sentences(words(rng, 150))), ("assistant", answer)], 2, "b")
    assert removed_map(run([a, b], DedupConfig(), tmp_path, name="all")) == {}
    assert removed_map(run([a, b], DedupConfig(scope="assistant"), tmp_path, name="asst")) == {
        "b": ("near_duplicate", "a")}


def test_short_texts_and_scripts_without_spaces_use_char_ngrams(tmp_path):
    recs = [
        text_rec("東京の天気は今日とても良いです。明日は雨が降るでしょう。週末は晴れる予報です。", 1, "ja"),
        text_rec("東京の天気は今日とても良いです。明日は雨が降るでしょう。週末は晴れる予報だ。", 2, "ja-near"),
        text_rec("大阪の食べ物はとても美味しいと言われています。特にたこ焼きが有名です。", 3, "ja-other"),
        text_rec("Please reset my password for the staging account today, thanks a lot!", 4, "en"),
        text_rec("please reset my password for the staging account today thanks a lot", 5, "en-exact"),
        text_rec("Please reset my password for the staging account today, thank you!", 6, "en-near"),
        text_rec("Please delete my account from the production cluster tomorrow.", 7, "en-other"),
        text_rec("", 8, "empty"), text_rec("...", 9, "dots"), text_rec("", 10, "empty2"),
    ]
    got = removed_map(run(recs, DedupConfig(), tmp_path))
    assert got["ja-near"] == ("near_duplicate", "ja")
    assert got["en-near"] == ("near_duplicate", "en")
    assert "ja-other" not in got and "en-other" not in got
    # Case and punctuation differences: exact only with punctuation folding, near otherwise.
    assert got["en-exact"] == ("near_duplicate", "en")
    assert removed_map(run(recs, DedupConfig(punctuation_fold=True), tmp_path, name="p"))["en-exact"] == (
        "exact_duplicate", "en")
    # Texts without words never match by LSH; identical ones are still exact duplicates.
    assert got["empty2"] == ("exact_duplicate", "empty") and "dots" not in got


def test_large_buckets_stay_connected(tmp_path, monkeypatch):
    monkeypatch.setattr(clusters, "BUCKET_ALL_PAIRS", 3)  # exercise the windowed path for big LSH buckets
    rng = random.Random(41)
    ws = words(rng, 160)
    recs = [text_rec(sentences(edit(ws, rng, 1)), i, f"v{i}") for i in range(40)]
    recs += [text_rec(sentences(words(rng, 160)), 100 + i, f"o{i}") for i in range(10)]
    got = removed_map(run(recs, DedupConfig(), tmp_path, shards=3))
    assert set(got) == {f"v{i}" for i in range(1, 40)}
    assert {target for _, target in got.values()} == {"v0"}


def test_components_match_union_find():
    rng = np.random.default_rng(0)
    for n, m in ((50, 30), (500, 700), (2000, 1500)):
        u = rng.integers(0, n, m)
        v = rng.integers(0, n, m)
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        comp = clusters._components(n, np.arange(n), lo, hi)
        parent = list(range(n))

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x
        for a, b in zip(lo.tolist(), hi.tolist()):
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        smallest: dict[int, int] = {}
        for x in range(n):
            smallest.setdefault(find(x), x)
        assert comp.tolist() == [smallest[find(x)] for x in range(n)]


def test_settings_mismatch_disabled_and_duplicate_orders(tmp_path):
    recs = [text_rec("some words " * 20, i) for i in range(3)]
    path = tmp_path / "k.parquet"
    pq.write_table(D.compute_keys(recs, DedupConfig(num_perm=64)), path)
    with pytest.raises(ValueError, match="other settings"):
        D.find_duplicates([str(path)], DedupConfig(), str(tmp_path))
    off = D.find_duplicates([str(path)], DedupConfig(exact=False, near=False), str(tmp_path))
    assert off.removed.num_rows == 0 and off.report["enabled"] is False
    pq.write_table(D.compute_keys(recs + [text_rec("x", 1)], DedupConfig()), path)
    with pytest.raises(ValueError, match="_order"):
        D.find_duplicates([str(path)], DedupConfig(), str(tmp_path))
    empty = D.find_duplicates([], DedupConfig(), str(tmp_path))
    assert empty.removed.num_rows == 0 and empty.report["records"] == 0


def test_keys_are_small_and_hold_no_text(corpus):
    records, _ = corpus
    keys = D.compute_keys(records[:50], DedupConfig())
    assert {"_order", "id", "_eval"} <= set(keys.column_names)
    assert keys.column("_order").to_pylist() == [r["_order"] for r in records[:50]]
    flat = json.dumps(keys.drop_columns(["signature", "sketch"]).to_pylist(), default=str)
    assert records[0]["text"][:30] not in flat
    # ~700 bytes of hashes and ids, and the sketch: at most SKETCH_SIZE 4-byte shingle hashes
    assert keys.nbytes / keys.num_rows < 800 + 4 * D.SKETCH_SIZE
    texts = [D.trainer_text(r).casefold() for r in records[:50]]
    hashes, counts, _ = D.shingle_hashes(texts, 5, 5)
    assert np.array_equal(D.signature_array(keys.column("signature"), 128),
                          D.minhash_signatures(hashes, counts, 128))


def test_signatures_load_into_datasketch_lsh_with_the_same_candidates(corpus):
    """The recipe for datasketch's MinHashLSH (e.g. Redis storage) gives the candidates of our banding."""
    from datasketch import LeanMinHash, MinHashLSH

    records, _ = corpus
    cfg = DedupConfig()
    keys = D.compute_keys(records, cfg)
    bands, rows = D.lsh_params(cfg.num_perm, cfg.threshold, cfg.verify)
    sigs = D.signature_array(keys.column("signature"), cfg.num_perm)
    orders = keys.column("_order").to_pylist()
    lsh = MinHashLSH(threshold=cfg.threshold, num_perm=cfg.num_perm, params=(bands, rows))  # + storage_config
    with lsh.insertion_session() as session:
        for order, sig in zip(orders, sigs):
            session.insert(order, LeanMinHash(seed=1, hashvalues=sig, scheme="affine32"))
    theirs = {(min(a, b), max(a, b)) for a, sig in zip(orders, sigs)
              for b in lsh.query(LeanMinHash(seed=1, hashvalues=sig, scheme="affine32")) if a != b}
    band_cols = np.stack([keys.column(f"band_{k:03d}").to_numpy() for k in range(bands)], axis=1)
    ours = {(orders[i], orders[j]) for i in range(len(orders)) for j in range(i + 1, len(orders))
            if (band_cols[i] == band_cols[j]).any()}
    assert theirs == ours and len(ours) > 40


def test_signatures_memory_mapped_when_large(corpus, tmp_path, monkeypatch):
    records, truth = corpus
    monkeypatch.setattr(clusters, "SIGNATURES_IN_MEMORY", 0)  # always the memory map in work_dir
    result = run(records, DedupConfig(), tmp_path, shards=2)
    assert removed_map(result) == truth
    assert not list((tmp_path / "k-work").glob("*.npy"))  # nothing left behind


def test_shared_buckets_kept_from_pass_one_decide_as_the_band_columns_read_again(tmp_path, monkeypatch):
    records, _truth = templated_corpus(600)  # large buckets too: both ways of proposing pairs
    kept = run(records, DedupConfig(), tmp_path, shards=3, name="kept")
    monkeypatch.setattr(clusters, "SHARED_BANDS_IN_MEMORY", 0)  # every band read from the key files again
    again = run(records, DedupConfig(), tmp_path, shards=3, name="again")
    assert kept.removed.equals(again.removed)
    volatile = ("seconds", "cpu_seconds", "peak_rss_mb")
    assert {k: v for k, v in kept.report.items() if k not in volatile} == \
        {k: v for k, v in again.report.items() if k not in volatile}
    assert kept.report["counts"]["total"] > 0 and kept.report["lsh"]["large_buckets"] > 0


def templated_corpus(n: int, seed: int = 51) -> tuple[list[dict], dict]:
    """n records filling one template (six fixed sentences, each followed by an id or three free words: two fills
    share about half their 5-grams), and every 50th record a one-word edit of the one 25 before it."""
    fixed = [words(random.Random(900 + k), 16) for k in range(6)]
    rng = random.Random(seed)
    fills, recs, truth = [], [], {}
    for i in range(n):
        if i % 50 == 49:
            ws = edit(fills[i - 25], rng, 1)
            truth[f"r{i}"] = ("near_duplicate", f"r{i - 25}")
        else:
            ws = [w for k, f in enumerate(fixed)
                  for w in f + ([str(rng.randrange(10 ** 6, 10 ** 7))] if k % 2 else words(rng, 3))]
        fills.append(ws)
        recs.append(text_rec(sentences(ws), i))
    return recs, truth


def test_verifications_grow_linearly_on_templated_records(tmp_path):
    """A template puts a tenth of the corpus in one LSH bucket per band; bucket work stays linear (the stage
    proposed every pair within a 64-member window of such a bucket: about 140 verifications per record here),
    and the planted near duplicates are still the only removals."""
    n = 5000
    recs, truth = templated_corpus(n)
    result = run(recs, DedupConfig(), tmp_path, batch=1000)
    lsh = result.report["lsh"]
    assert lsh["largest_bucket"] > n // 20 and lsh["weak_large_buckets"] > 0
    assert lsh["verifications"] <= 4 * n
    assert removed_map(result) == truth


def test_verifications_grow_linearly_on_mostly_duplicates(tmp_path):
    """Copies of a few originals: the buckets are the clusters; pairs already joined are not verified."""
    rng = random.Random(61)
    originals = [words(rng, 150) for _ in range(10)]
    recs = [text_rec(sentences(ws), i, f"o{i}") for i, ws in enumerate(originals)]
    recs += [text_rec(sentences(edit(originals[i % 10], rng, 2)), 10 + i, f"c{i}") for i in range(2000)]
    result = run(recs, DedupConfig(), tmp_path, batch=500)
    lsh = result.report["lsh"]
    assert lsh["largest_bucket"] > 100 and lsh["weak_large_buckets"] == 0
    assert lsh["verifications"] <= 4 * len(recs)
    # Against every pair verified, not only LSH's candidates: the same removals,
    # but for LSH's own misses (a pair at the threshold shares no band with probability 0.002). Verified as the
    # stage does: by the MinHash estimate outside the sketch window, else by the true Jaccard (the sketches
    # hold whole shingle sets here).
    keys = D.compute_keys(recs, DedupConfig())
    sigs = D.signature_array(keys.column("signature"), 128)
    values, offsets = sketch_arrays(keys.column("sketch"))
    sets = [frozenset(values[a:b].tolist()) for a, b in zip(offsets[:-1], offsets[1:])]
    assert max(map(len, sets)) < D.SKETCH_SIZE
    low, high = (math.ceil(t * 128 - 1e-9) for t in sketch_window(128, 0.8))
    u, v = np.triu_indices(len(recs), 1)
    equal = np.concatenate([np.count_nonzero(sigs[u[s:s + 50000]] == sigs[v[s:s + 50000]], axis=1)
                            for s in range(0, len(u), 50000)])
    ok = equal >= high
    window = np.flatnonzero((equal >= low) & ~ok)
    ok[window] = [len(sets[a] & sets[b]) >= 0.8 * len(sets[a] | sets[b]) for a, b in zip(u[window], v[window])]
    comp = clusters._components(len(recs), np.arange(len(recs)), u[ok], v[ok])
    size = np.bincount(comp, minlength=len(recs))
    expected = {recs[i]["id"]: ("near_duplicate", recs[comp[i]]["id"])
                for i in range(len(recs)) if comp[i] != i and size[comp[i]] > 1}
    got = removed_map(result)
    assert got.items() <= expected.items() and len(expected) - len(got) <= 2
    assert 1950 < len(expected) <= 2000 and all(target.startswith("o") for _, target in expected.values())


def test_records_that_differ_only_in_tools_are_not_duplicates(tmp_path):
    """The tools are rendered into the prompt by the chat template: a conversation offered other tools is other
    training data. Same conversation, same tools: an exact duplicate."""
    rng = random.Random(11)
    turns_ = [("user", sentences(words(rng, 60))), ("assistant", sentences(words(rng, 80)))]

    def tool(name: str) -> dict:
        return {"type": "function", "function": {"name": name, "description": "Look something up",
                                                 "parameters": {"type": "object", "properties": {}}}}

    records = []
    for i, tools in enumerate([[tool("get_weather")], [tool("get_stock_price")], None, [tool("get_weather")]]):
        rec = chat_rec(turns_, i, f"t{i}")
        if tools:
            rec["tools"] = tools
        records.append(rec)
    got = removed_map(run(records, DedupConfig(), tmp_path))
    assert got == {"t3": ("exact_duplicate", "t0")}
    assert D.exact_text(records[0]) != D.exact_text(records[1]) and "get_weather" in D.exact_text(records[0])
