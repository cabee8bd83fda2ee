"""The token-length step: counts what the trainer will see, caches the counts, and applies the overflow policy.

    step = LengthStep(cfg.lengths, cache_dir, model=cfg.estimate.model)
    records = step(records)                      # sets rec["_tokens"] and rec["_trainable"], counts in step.stats
    records = apply_overflow(records, max_len, step, stats)   # overflow policy and text chunking

A preview or a sample counted elsewhere (prepare show, precheck) calls step.annotate(records, its_stats) instead.

Counting rules are in pipeline/data/lengths/tokenizer/. The cache is one SQLite file (WAL mode) in `cache_dir`, keyed by
xxh3-128 of (tokenizer fingerprint, chat template, counting rules, library versions, record kind, record
content): a re-run reads the counts back without tokenizing, and without even importing transformers when the
tokenizer is a local file or folder. Several worker processes may read and write it at once; a cache that
cannot be written is counted (cache.write_errors) and otherwise ignored.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import xxhash

from pipeline.core.config import LengthsConfig
from pipeline.core.records import content_of, record_id
from pipeline.core.stats import StageStats
from pipeline.core.step import Step
from pipeline.data.lengths.tokenizer.chat_template import is_chat
from pipeline.data.lengths.tokenizer.handle import TokenizerHandle
from pipeline.data.lengths.tokenizer.load import load_tokenizer, spec_fingerprint
from pipeline.data.lengths.tokenizer.resolve import TokenizerSpec, resolve_tokenizer

CACHE_FILE = "lengths.sqlite"


# --------------------------------------------------------------------------------------------------- cache

class LengthCache:
    """key (16 bytes) -> (tokens, trainable), in SQLite. Opened lazily, once per process."""

    def __init__(self, directory: str | os.PathLike):
        self.path = Path(directory) / CACHE_FILE
        self._conn = None
        self._pid = None

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=60000")
            for attempt in range(50):
                try:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.execute("PRAGMA synchronous=NORMAL")
                    conn.execute("CREATE TABLE IF NOT EXISTS lengths "
                                 "(key BLOB PRIMARY KEY, tokens INTEGER, trainable INTEGER) WITHOUT ROWID")
                    break
                except sqlite3.OperationalError:
                    if attempt == 49:
                        raise
                    time.sleep(0.05)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def get_many(self, keys: list[bytes]) -> dict[bytes, tuple[int, int]]:
        conn = self._connect()
        found: dict[bytes, tuple[int, int]] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 900):
            part = unique[start:start + 900]
            rows = conn.execute(
                f"SELECT key, tokens, trainable FROM lengths WHERE key IN ({','.join('?' * len(part))})", part)
            for key, tokens, trainable in rows:
                found[key] = (tokens, trainable)
        return found

    def put_many(self, items: list[tuple[bytes, int, int]]) -> None:
        if not items:
            return
        conn = self._connect()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR IGNORE INTO lengths (key, tokens, trainable) VALUES (?, ?, ?)", items)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def __len__(self) -> int:
        return self._connect().execute("SELECT COUNT(*) FROM lengths").fetchone()[0]

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None


# ---------------------------------------------------------------------------------------------------- step

class LengthStep(Step):
    """Sets rec["_tokens"] (all tokens as the trainer sees them) and rec["_trainable"] (assistant tokens; all of
    them for text). The tokenizer is loaded lazily, once per process; the step pickles without it."""

    name = "lengths"
    config_sections = ("lengths", "estimate")  # estimate.model: the model's tokenizer and template

    def __init__(self, cfg: LengthsConfig, cache_dir: str | None, model: str | None = None):
        self.cfg = cfg
        self.cache_dir = cache_dir
        self.model = model
        self.spec: TokenizerSpec = resolve_tokenizer(cfg.tokenizer, model)
        self._handle: TokenizerHandle | None = None
        self._cache = LengthCache(cache_dir) if cache_dir else None
        self._namespace: bytes | None = None

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_handle"] = None
        state["_cache"] = LengthCache(self.cache_dir) if self.cache_dir else None
        return state

    # -- what was resolved
    @property
    def tokenizer_name(self) -> str:
        return f"{self.spec.name} [{self.spec.source}]"

    @property
    def tokenizer_info(self) -> dict:
        """report.json `lengths.tokenizer`: the name, and whether it is the model's own (exact) or a fallback."""
        return self.spec.summary()

    def describe(self) -> dict:
        """For the report: which tokenizer and template, and why."""
        out = {"name": self.spec.name, "kind": self.spec.kind, "location": self.spec.location,
               "source": self.spec.source}
        if self._handle is not None:
            out.update(fingerprint=self._handle.fingerprint, template_hash=self._handle.template_hash,
                       chat_template=getattr(self._handle, "template_source", None))
        return out

    @property
    def handle(self) -> TokenizerHandle:
        if self._handle is None:
            self._handle = load_tokenizer(self.spec, None, self.cfg.chat_template)
        return self._handle

    @property
    def namespace(self) -> bytes:
        """Everything besides the record that decides its counts."""
        if self._namespace is None:
            fp = spec_fingerprint(self.spec, self.cfg.chat_template)
            if fp is None:  # e.g. a hub id: fingerprint the loaded tokenizer
                fp = f"{self.handle.fingerprint}:{self.handle.template_hash}"
            self._namespace = fp.encode() + b"\x00"
        return self._namespace

    def keys(self, batch: list[dict]) -> list[bytes]:
        ns = self.namespace
        out = []
        for rec in batch:
            kind = rec.get("kind") or ""
            data = ns + kind.encode() + b"\x00" + content_of(rec).encode("utf-8", "surrogatepass")
            out.append(xxhash.xxh3_128_digest(data))
        return out

    def measure(self, records: list[dict]) -> list[tuple[int, int] | Exception]:
        """Counts without the cache (used for records the overflow policy changed)."""
        return self.handle.measure(records)

    def process(self, batch: list[dict]) -> list[dict]:
        return self.annotate(batch, self.stats)

    def annotate(self, batch: list[dict], stats: StageStats) -> list[dict]:
        """Set rec["_tokens"] and rec["_trainable"] (from the cache where it has them), counting into `stats`:
        the step's own for the run, a separate one for records counted elsewhere (a re-measure, a preview)."""
        if not batch:
            return batch
        keys = self.keys(batch)
        found: dict[bytes, tuple[int, int]] = {}
        if self._cache is not None:
            try:
                found = self._cache.get_many(keys)
            except sqlite3.Error:
                stats.add("cache.read_errors")
        miss_idx = [i for i, k in enumerate(keys) if k not in found]
        stats.add("cache.hits", len(batch) - len(miss_idx))
        stats.add("cache.misses", len(miss_idx))
        failed: set[int] = set()
        if miss_idx:
            results = self.handle.measure([batch[i] for i in miss_idx])
            new = []
            for i, res in zip(miss_idx, results):
                if isinstance(res, Exception):
                    failed.add(i)
                    stats.quarantine("chat_template_error")
                    errors = stats.counters.setdefault("chat_template_errors", [])
                    if len(errors) < 5:
                        errors.append({"id": batch[i].get("id"), "error": f"{type(res).__name__}: {res}"[:300]})
                    continue
                found[keys[i]] = res
                new.append((keys[i], res[0], res[1]))
            if self._cache is not None:
                try:
                    self._cache.put_many(new)
                except sqlite3.Error:
                    stats.add("cache.write_errors")
        out = []
        tokens_total = trainable_total = 0
        for i, (rec, key) in enumerate(zip(batch, keys)):
            if i in failed:
                continue
            tokens, trainable = found[key]
            rec["_tokens"], rec["_trainable"] = tokens, trainable
            tokens_total += tokens
            trainable_total += trainable
            out.append(rec)
        stats.add("tokens", tokens_total)
        stats.add("trainable_tokens", trainable_total)
        return out


# ------------------------------------------------------------------------------------------------ overflow

def changes_records(cfg: LengthsConfig, summary: dict) -> bool:
    """Whether apply_overflow can change a record at the summary's max length: a chat record over it under an
    overflow policy other than keep, or a text record over it (chunked, or under the policy)."""
    max_len = summary["max_seq_len"]
    chunked = (summary.get("chunking") or {}).get("records", 0) > 0
    longest = summary["groups"]["all"]["tokens"]["max"] if "all" in summary["groups"] else max_len + 1
    return chunked or (cfg.overflow != "keep" and longest > max_len)


def apply_overflow(batch: list[dict], max_len: int, step: LengthStep, stats: StageStats) -> list[dict]:
    """Fit the records longer than max_len (their "_tokens" must be set; records without it are measured first).
    Text records under lengths.text_chunking: max_len become chunks that each fit, one row per chunk, with
    meta["chunk"] = {"index", "count", "parent"}, a new id derived from the parent's and its source (counters
    chunking.records in, chunking.chunks out). Every other record follows step.cfg.overflow, its counters under
    stats.counters["overflow"]:
      keep               - records unchanged; over, tokens_cut (what the trainer will cut from the end) and
                           trainable_cut (assistant tokens among them, when the record ends with its answer);
      truncate_response  - keep the prompt, cut the (last) answer at a token boundary so the whole rendered record
                           fits; when the prompt alone does not fit, earlier turns end the conversation instead;
                           text records are cut at the end; the id is kept, meta["truncated"] = {"policy",
                           "tokens_before"} (also for truncate_prompt);
      truncate_prompt    - keep the last answer whole; drop the oldest turns (system messages stay), then cut the
                           end of the last user message; if the answer alone does not fit it is cut too
                           (other_side_cut); text records are cut at the end;
      drop               - stats.drop("too_long").
    A record nothing can fit (e.g. its prompt alone is too long) is dropped as "too_long" (overflow.unfit).
    """
    policy = step.cfg.overflow
    chunking = step.cfg.text_chunking == "max_len"
    need = [r for r in batch if r.get("_tokens") is None]
    if need:
        step.annotate(need, StageStats("lengths"))
    out: list[dict] = []
    for rec in batch:
        tokens = rec.get("_tokens")
        if tokens is None or tokens <= max_len:
            out.append(rec)
            continue
        if chunking and not is_chat(rec):
            rows = _split_text(rec, max_len, step)
            if not rows:
                stats.drop("too_long")
                stats.add("overflow.unfit")
                continue
            stats.add("chunking.records")
            stats.add("chunking.chunks", len(rows))
            out.extend(rows)
            continue
        excess = tokens - max_len
        stats.add("overflow.over")
        if policy == "keep":
            stats.add("overflow.tokens_cut", excess)
            stats.add("overflow.trainable_cut", min(rec.get("_trainable") or 0, excess))
            out.append(rec)
        elif policy == "drop":
            stats.drop("too_long")
            stats.add("overflow.tokens_dropped", tokens)
        else:
            fitted = _truncate(rec, max_len, step, policy, stats)
            if fitted is None:
                stats.drop("too_long")
                stats.add("overflow.unfit")
                continue
            stats.add("overflow.truncated")
            stats.add("overflow.tokens_removed", tokens - fitted["_tokens"])
            fitted["meta"] = _meta_with(fitted, "truncated", {"policy": policy, "tokens_before": tokens})
            stats.add("overflow.trainable_removed", max((rec.get("_trainable") or 0) - fitted["_trainable"], 0))
            out.append(fitted)
    return out


def _measured(step: LengthStep, rec: dict) -> tuple[int, int] | None:
    res = step.measure([rec])[0]
    return None if isinstance(res, Exception) else res


def _longest_fit(build, ends: list[int], max_len: int, step: LengthStep, min_pieces: int = 1):
    """The largest k (>= min_pieces) such that build(cut at ends[k-1]) fits in max_len tokens, found with a few
    measurements: the first guess removes the excess, later ones correct by the remaining excess, and bisection
    takes over if the guesses stall. Returns (record, (tokens, trainable)) or None."""
    n = len(ends)
    if n < min_pieces:
        return None

    def make(k):
        return build(ends[k - 1] if k > 0 else 0)

    lo, hi = min_pieces - 1, n + 1          # lo: fits (or below the floor), hi: known too long
    best = None
    full = _measured(step, make(n))
    if full is None:
        return None
    if full[0] <= max_len:
        return make(n), full
    hi = n
    k = max(min_pieces, min(n - 1, n - (full[0] - max_len)))
    while hi - lo > 1:
        if not lo < k < hi:
            k = (lo + hi) // 2
        rec = make(k)
        res = _measured(step, rec)
        if res is None:
            return best
        if res[0] <= max_len:
            lo, best = k, (rec, res)
            k = k + max(1, max_len - res[0])
        else:
            hi = k
            k = k - max(1, res[0] - max_len)
    return best


def _with(rec: dict, **changes) -> dict:
    new = dict(rec)
    new.update(changes)
    return new


def _truncate(rec: dict, max_len: int, step: LengthStep, policy: str, stats: StageStats) -> dict | None:
    handle = step.handle
    if not is_chat(rec):
        text = rec.get("text") or ""
        got = _longest_fit(lambda cut: _with(rec, text=text[:cut]), handle.piece_ends(text), max_len, step)
        return _finish(got)
    msgs = [dict(m) for m in rec["messages"]]
    assistants = [i for i, m in enumerate(msgs) if m.get("role") == "assistant"]
    if not assistants:
        return None
    last = assistants[-1]
    if policy == "truncate_response":
        return _cut_response(rec, msgs, assistants, max_len, step, stats)
    # truncate_prompt: keep msgs[last] whole
    systems = [m for m in msgs[:last] if m.get("role") == "system"]
    body = [m for m in msgs[:last] if m.get("role") != "system"]
    answer = msgs[last]
    users = [j for j, m in enumerate(body) if m.get("role") == "user"]
    starts = users or [0]

    def candidate(start: int, user_cut: int | None = None):
        kept = [dict(m) for m in body[start:]]
        if user_cut is not None:
            j = max(k for k, m in enumerate(kept) if m.get("role") == "user")
            kept[j]["content"] = (kept[j].get("content") or "")[:user_cut]
        return _with(rec, messages=systems + kept + [answer])

    # fewest turns removed that fit: bisect over the user-message starts (later start = shorter)
    lo, hi, best = -1, len(starts), None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        cand = candidate(starts[mid])
        res = _measured(step, cand)
        if res is not None and res[0] <= max_len:
            hi, best = mid, (cand, res)
        else:
            lo = mid
    if best is not None:
        if hi > 0:
            stats.add("overflow.turns_removed", hi)
        return _finish(best)
    start = starts[-1]
    if users:  # cut the end of the last user message
        j = max(k for k, m in enumerate(body[start:]) if m.get("role") == "user")
        content = body[start:][j].get("content") or ""
        got = _longest_fit(lambda cut: candidate(start, cut), handle.piece_ends(content) or [0], max_len, step,
                           min_pieces=0)
        if got is not None:
            stats.add("overflow.turns_removed", len(starts) - 1)
            return _finish(got)
    # the answer alone does not fit beside the shortest prompt: cut it as well
    short = candidate(start, 0) if users else candidate(start)
    fitted = _cut_response(short, [dict(m) for m in short["messages"]],
                           [i for i, m in enumerate(short["messages"]) if m.get("role") == "assistant"],
                           max_len, step, stats)
    if fitted is not None:
        stats.add("overflow.other_side_cut")
    return fitted


def _cut_response(rec: dict, msgs: list[dict], assistants: list[int], max_len: int, step: LengthStep,
                  stats: StageStats) -> dict | None:
    """Cut the last answer that can keep at least one token of its content; later turns are removed."""
    for n_removed, i in enumerate(reversed(assistants)):
        base = [dict(m) for m in msgs[: i + 1]]
        content = base[i].get("content") or ""
        has_calls = bool(base[i].get("tool_calls"))

        def build(cut, base=base, i=i, content=content):
            new = [dict(m) for m in base]
            new[i]["content"] = content[:cut]
            return _with(rec, messages=new)

        got = _longest_fit(build, step.handle.piece_ends(content), max_len, step,
                           min_pieces=0 if has_calls else 1)
        if got is not None:
            if n_removed:
                stats.add("overflow.turns_removed", n_removed)
            return _finish(got)
    return None


def _finish(got) -> dict | None:
    if got is None:
        return None
    rec, (tokens, trainable) = got
    rec["_tokens"], rec["_trainable"] = tokens, trainable
    return rec


def _meta_with(rec: dict, key: str, value) -> str:
    """The record's meta (a JSON object in a string) with one key added."""
    try:
        meta = json.loads(rec["meta"]) if rec.get("meta") else {}
    except (TypeError, ValueError):
        meta = {"meta": rec.get("meta")}
    if not isinstance(meta, dict):
        meta = {"meta": meta}
    meta[key] = value
    return json.dumps(meta, ensure_ascii=False)


def chunk_id(parent: str | None, index: int, chunk: dict) -> str:
    """Stable and unique per chunk, even when two chunks of a document have the same text."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(f"{parent}\x00{index}\x00{record_id(chunk)}".encode())
    return digest.hexdigest()


def _split_text(rec: dict, max_len: int, step: LengthStep) -> list[dict]:
    text = rec.get("text") or ""
    handle = step.handle
    overhead = handle.measure_one({"kind": "text", "text": ""})[0]
    budget = max(max_len - overhead, 1)
    ends = handle.piece_ends(text)
    pieces: list[tuple[int, int]] = []   # (start char, end char)
    start, p = 0, 0
    while p < len(ends):
        q = min(p + budget, len(ends))
        pieces.append((start, ends[q - 1]))
        start, p = ends[q - 1], q
    # measure all chunks at once; shrink the few that tokenized longer in place
    chunk_recs = [_with(rec, text=text[a:b]) for a, b in pieces]
    results = step.measure(chunk_recs)
    fixed: list[dict] = []
    queue = list(zip(pieces, results))
    while queue:
        (a, b), res = queue.pop(0)
        if isinstance(res, Exception):
            return []
        if res[0] <= max_len:
            fixed.append(_with(rec, text=text[a:b], _tokens=res[0], _trainable=res[1]))
            continue
        sub_ends = [e for e in ends if a < e <= b]
        got = _longest_fit(lambda cut, a=a: _with(rec, text=text[a:a + cut]), [e - a for e in sub_ends],
                           max_len, step)
        if got is None:
            return []
        cut_rec, (n, t) = got
        mid = a + len(cut_rec["text"])
        fixed.append(_with(cut_rec, _tokens=n, _trainable=t))
        rest = step.measure([_with(rec, text=text[mid:b])])[0]
        queue.insert(0, ((mid, b), rest))
    parent = rec.get("id")
    rows = []
    for index, chunk in enumerate(fixed):
        chunk["meta"] = _meta_with(rec, "chunk", {"index": index, "count": len(fixed), "parent": parent})
        chunk["id"] = chunk_id(parent, index, chunk)
        chunk["_chunk"] = index
        rows.append(chunk)
    return rows


# ------------------------------------------------------------------------------------------------ sampling

@dataclass
class PrecheckSample:
    records: list[dict]
    total: int          # records seen
    exact: bool         # all of them were kept


def sample_for_precheck(records: Iterable[dict], size: int = 200_000, seed: int = 0) -> PrecheckSample:
    """Uniform random sample without replacement of a stream of unknown length (reservoir sampling, Li's
    algorithm L: O(size) random draws after the reservoir fills). All records when there are at most `size`.
    Use histogram.percentile_uncertainty(lengths, total) for the confidence intervals of the percentiles."""
    import math

    rng = random.Random(seed)
    it = iter(records)
    reservoir: list[dict] = []
    total = 0
    for rec in it:
        reservoir.append(rec)
        total += 1
        if len(reservoir) >= size:
            break
    if total < size:
        return PrecheckSample(reservoir, total, True)
    w = math.exp(math.log(rng.random()) / size)
    skip = math.floor(math.log(rng.random()) / math.log(1 - w))
    for rec in it:
        total += 1
        if skip > 0:
            skip -= 1
            continue
        reservoir[rng.randrange(size)] = rec
        w *= math.exp(math.log(rng.random()) / size)
        skip = math.floor(math.log(rng.random()) / math.log(1 - w))
    return PrecheckSample(reservoir, total, total == len(reservoir))
