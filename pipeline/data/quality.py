"""Quality checks for chat and CRM text (config `quality`): mojibake repaired with ftfy, repeated n-grams
(stuck generation, copy-paste), quoted e-mail threads and signatures in answers, symbol/URL-only turns, and
canned answers (the same assistant text in many records).

The per-record checks run in phase 1 right after clean, so that dedup keys, PII and token counts see the
repaired and stripped text. Canned answers are a cross-shard aggregate, built like dedup: each shard writes a
small key file (`canned_keys`: order, 64-bit hash of the normalized answer, its length, the record id; no
text), `find_canned` decides globally from those files after dedup (records dedup removes are not counted),
and `CannedStep` drops the records past the cap in phase 3. The report holds counts, hashes, lengths and
record ids only, never text.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core.config import QualityConfig
from pipeline.core.stats import StageStats
from pipeline.core.step import GlobalStep, Step
from pipeline.core.textnorm import normalize_text

EXAMPLE_IDS = 5  # record ids kept per check and shard as examples (the report keeps the first ones)

# ------------------------------------------------------------------------------------------ mojibake

# What UTF-8 decoded as a single-byte code page leaves: a lead-byte letter (Â-ô in cp1252/latin-1, Р/С in
# cp1251) followed by what a continuation byte 0x80-0xBF decodes to there. Correct Turkish, Russian or English
# text almost never has such a pair, so ftfy (about 100x slower than this search) runs only where it does.
_MOJIBAKE_HINT = re.compile(
    "[\u00c2-\u00f4][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc"
    "\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]"
    "|[\u0420\u0421][\u0402-\u040f\u0452-\u045f\u00a0-\u00bf\u2013-\u203a\u20ac\u2116\u2122\u0490\u0491]")
# the first character of every hint: a single-class search runs a fast scan, the two-branch one does not (4 us a
# record against 6.7 on the bench/e2e text); the whole hint is searched only in text that has one
_MOJIBAKE_LEAD = re.compile("[\u00c2-\u00f4\u0420\u0421]")


def repair_mojibake(text: str) -> str:
    """ftfy's encoding fixes only (UTF-8 read as cp1252/latin-1/cp1251 and the like), not its other changes
    (quotes, ligatures, widths): those are not errors. ftfy leaves text that does not look mis-decoded alone."""
    import ftfy

    if text.isascii() or not _MOJIBAKE_LEAD.search(text) or not _MOJIBAKE_HINT.search(text):
        return text
    fixed = ftfy.fix_encoding(text)
    return normalize_text(fixed) if fixed != text else text  # a repaired "Â\xa0" is an NBSP: normalize again

# --------------------------------------------------------------------------------------- repetition

_WORD = re.compile(r"\w+")


def repetition_ratio(text: str, n: int, min_words: int) -> float:
    """Share of the text's word n-grams that repeat an earlier one (0 below min_words words). A loop of one
    phrase tends to 1, a text pasted twice is about 0.5; words are whole words, so a language's repeated
    suffixes (Turkish -lar/-ler, -ıyor) are not repeats."""
    words = _WORD.findall(text.casefold())
    if len(words) < max(min_words, n):
        return 0.0
    grams = list(zip(*(words[i:] for i in range(n))))
    return 1.0 - len(set(grams)) / len(grams)

# ------------------------------------------------------------------------------ threads and signatures

# One line that introduces a quoted message: Gmail/Apple ("On <date>, <name> wrote:"), Turkish ("... yazdı:"),
# Russian ("... написал(а):"). The Gmail form may wrap before "wrote:".
_ATTRIBUTION = re.compile(
    r"^(?:On\s.{3,200}\swrote:|.{3,200}\syazdı:|.{3,200}\sнаписал(?:а|\(а\))?:)\s*$", re.I)
_ON_START = re.compile(r"^On\s.{3,200}$")
_WROTE_END = re.compile(r"^.{0,100}\bwrote:\s*$", re.I)
# A forwarded/replied message whose header starts the rest of the text (Outlook: no ">" quoting).
_HEADER = re.compile(
    r"^-{2,}\s*(?:Original Message|Forwarded message|Özgün İleti|Orijinal Mesaj|İletilen ileti|"
    r"Исходное сообщение|Пересылаемое сообщение|Переадресованное сообщение)\s*-{2,}\s*$", re.I)
_FROM = re.compile(r"^(?:From|Kimden|От):\s+\S", re.I)
_SENT = re.compile(r"^(?:Sent|Date|Gönderildi|Gönderilme|Tarih|Отправлено|Дата):\s+\S", re.I)
# ">>>" is a Python prompt, not a quote
_QUOTED = re.compile(r"^>(?!>>)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_SIG_DELIMITER = re.compile(r"^(?:-- ?|__)$")  # RFC 3676's "-- " (its space is trimmed by normalize_text)
_SIG_MOBILE = re.compile(
    r"^(?:Sent from my \w+.*|Sent from (?:Outlook|Mail) for \w+.*|Get Outlook for \w+.*|"
    r"(?:iPhone|iPad|Android)['’]?(?:umdan|dan|den) gönderildi\.?|Отправлено с (?:моего )?(?:iPhone|iPad|Android).*)$",
    re.I)
_SIG_CLOSING = re.compile(
    r"^(?:Saygılarımla|Saygılar(?:ımızla)?|İyi çalışmalar|С уважением|С наилучшими пожеланиями|Всего доброго|"
    r"Best regards|Kind regards|Warm regards|Regards|Best wishes|Sincerely|Yours sincerely|Yours truly)[,.!]?$", re.I)
SIG_TAIL_LINES = {"delimiter": 12, "mobile": 3, "closing": 5}  # at most this many non-empty lines after it


def _code_lines(lines: list[str]) -> list[bool]:
    """Which lines are inside a fenced code block: a "> " or "--" there is code, not mail."""
    inside, out = False, []
    for line in lines:
        if _FENCE.match(line):
            out.append(True)
            inside = not inside
        else:
            out.append(inside)
    return out


def find_thread(lines: list[str], code: list[bool]) -> set[int]:
    """Line numbers of quoted mail: an attribution line and the quoted lines after it, runs of two or more
    ">" lines, and everything from a forwarded/original-message header on. Empty: no thread. One quoted line
    alone (a command, a sentence of the question) is not a thread."""
    remove: set[int] = set()
    i, count = 0, len(lines)
    while i < count:
        line = lines[i].strip()
        if code[i] or not line:
            i += 1
            continue
        header = _HEADER.match(line) or (_FROM.match(line) and any(
            _SENT.match(lines[j].strip()) for j in range(i + 1, min(i + 4, count)) if not code[j]))
        if header:
            remove.update(range(i, count))
            break
        span = 1 if _ATTRIBUTION.match(line) else 0
        if not span and _ON_START.match(line) and i + 1 < count and _WROTE_END.match(lines[i + 1].strip()):
            span = 2
        if span:
            j = i + span
            while j < count and not code[j] and (_QUOTED.match(lines[j].lstrip()) or not lines[j].strip()):
                j += 1
            remove.update(range(i, j))
            i = j
            continue
        if _QUOTED.match(lines[i].lstrip()):
            j = i
            while j < count and not code[j] and _QUOTED.match(lines[j].lstrip()):
                j += 1
            if j - i >= 2:
                remove.update(range(i, j))
            i = max(j, i + 1)
            continue
        i += 1
    return remove


def find_signature(lines: list[str], code: list[bool]) -> int | None:
    """The first line of a signature block (a "-- " delimiter, "Sent from my iPhone", a closing such as
    "Saygılarımla" or "С уважением" on its own line) with only a few lines after it; None if there is none.
    A closing in mid-text ("Regards" followed by more paragraphs) is not a signature."""
    for i, raw in enumerate(lines):
        if code[i]:
            continue
        line = raw.strip()
        kind = ("delimiter" if _SIG_DELIMITER.match(line) else "mobile" if _SIG_MOBILE.match(line)
                else "closing" if _SIG_CLOSING.match(line) else None)
        if kind and sum(1 for rest in lines[i + 1:] if rest.strip()) <= SIG_TAIL_LINES[kind]:
            return i
    return None


def mail_parts(text: str) -> tuple[bool, bool]:
    """(has a quoted thread, has a signature below the thread-free text)."""
    if "\n" not in text:  # one line: neither a quoted block, an attribution with a quote, nor a signature
        return False, False
    lines = text.split("\n")
    code = _code_lines(lines)
    thread = find_thread(lines, code)
    if thread:
        keep = [k for k in range(len(lines)) if k not in thread]
        lines, code = [lines[k] for k in keep], [code[k] for k in keep]
    return bool(thread), find_signature(lines, code) is not None


def strip_mail(text: str, threads: bool, signatures: bool) -> str:
    """The text without its quoted thread (threads) and/or signature (signatures)."""
    lines = text.split("\n")
    code = _code_lines(lines)
    if threads:
        thread = find_thread(lines, code)
        keep = [k for k in range(len(lines)) if k not in thread]
        lines, code = [lines[k] for k in keep], [code[k] for k in keep]
    if signatures:
        sig = find_signature(lines, code)
        if sig is not None:
            lines = lines[:sig]
    return normalize_text("\n".join(lines))

# ------------------------------------------------------------------------------------------ no words

_ALNUM = re.compile(r"[^\W_]")
_NON_SPACE = re.compile(r"\S+")  # the words of str.split(): both split at str.isspace() characters


def has_words(text: str) -> bool:
    """Whether the text has a letter or digit outside URLs and e-mail addresses ("OK" and "42" do; "👍",
    "???" and a bare link do not). Word by word, so a usual answer is decided by its first word (found
    lazily: str.split() made every word of the text first, 5.7 us a record against 1.7)."""
    for found in _NON_SPACE.finditer(text):
        word = found.group()
        if "://" in word or "@" in word or word[:4].lower() == "www.":
            continue
        if _ALNUM.search(word):
            return True
    return False

# ------------------------------------------------------------------------------------- the step

def _answer_texts(rec: dict) -> list[tuple[dict | None, str]]:
    """(holder, key) of the answer texts: the assistant turns' content, or a text record's text."""
    if rec.get("messages") is None:
        return [(rec, "text")] if rec.get("text") else []
    return [(m, "content") for m in rec["messages"] if m["role"] == "assistant" and m.get("content")]


def _example(stats: StageStats, key: str, rec: dict) -> None:
    stats.add(f"{key}.records")
    examples = stats.counters[key].setdefault("example_ids", [])
    if len(examples) < EXAMPLE_IDS:
        examples.append(rec["id"])


class QualityStep(Step):
    """Counts (and, as configured, repairs, strips or drops) records with mojibake, repetitive answers,
    quoted mail threads, signatures and symbol-only turns; counters under stages.quality.counters.<check>
    (records, example_ids; stripped). A record is dropped for the first check, in that order, that drops it."""

    name = "quality"
    config_sections = ("quality", "clean")  # clean.min_assistant_chars: what a stripped answer must keep

    def __init__(self, cfg: QualityConfig, min_answer_chars: int = 1):
        self.cfg, self.min_answer_chars = cfg, min_answer_chars

    def process(self, batch: list[dict]) -> list[dict]:
        return [rec for rec in batch if self._check(rec, self.stats)]

    def _check(self, rec: dict, stats: StageStats) -> bool:
        cfg = self.cfg
        if cfg.mojibake != "off" and self._mojibake(rec, cfg.mojibake == "fix"):
            _example(stats, "mojibake", rec)
        answers = _answer_texts(rec)
        if cfg.repetition != "off" and any(
                repetition_ratio(h[k], cfg.repetition_ngram, cfg.repetition_min_words) >= cfg.repetition_threshold
                for h, k in answers):
            _example(stats, "repetitive", rec)
            if cfg.repetition == "drop":
                stats.drop("repetitive")
                return False
        if cfg.threads != "off" or cfg.signatures != "off":
            if not self._mail(rec, answers, stats):
                return False
        if cfg.no_words != "off" and any(
                (m.get("content") or not m.get("tool_calls")) and not has_words(m.get("content") or "")
                for m in (rec["messages"] if rec.get("messages") is not None else [{"content": rec.get("text")}])
                if m.get("role") in (None, "user", "assistant")):
            _example(stats, "no_words", rec)
            if cfg.no_words == "drop":
                stats.drop("no_words")
                return False
        return True

    @staticmethod
    def _mojibake(rec: dict, fix: bool) -> bool:
        found = False
        holders = [(rec, "text")] if rec.get("messages") is None else [(m, "content") for m in rec["messages"]]
        for holder, key in holders:
            value = holder.get(key)
            if value and not value.isascii():
                fixed = repair_mojibake(value)
                if fixed != value:
                    found = True
                    if fix:
                        holder[key] = fixed
        return found

    def _mail(self, rec: dict, answers: list, stats: StageStats) -> bool:
        cfg = self.cfg
        found = {"quoted_thread": False, "signature": False}
        edits = []
        for holder, key in answers:
            thread, sig = mail_parts(holder[key])
            found["quoted_thread"] |= thread and cfg.threads != "off"
            found["signature"] |= sig and cfg.signatures != "off"
            if (thread and cfg.threads == "strip") or (sig and cfg.signatures == "strip"):
                edits.append((holder, key, strip_mail(holder[key], cfg.threads == "strip", cfg.signatures == "strip")))
        for reason, action in (("quoted_thread", cfg.threads), ("signature", cfg.signatures)):
            if found[reason]:
                _example(stats, reason, rec)
                if action == "drop":
                    stats.drop(reason)
                    return False
        for holder, key, text in edits:
            holder[key] = text
        if edits:
            stats.add("stripped", 1)
            left = sum(len(h[k]) for h, k in answers)
            if left < self.min_answer_chars or (rec.get("messages") is None and not left):
                reason = "quoted_thread" if found["quoted_thread"] and cfg.threads == "strip" else "signature"
                stats.drop(reason)  # nothing of the answer was the answer's own
                return False
        return True

# ------------------------------------------------------------------------------------- canned answers

CANNED_SCHEMA = pa.schema([("_order", pa.int64()), ("answer_hash", pa.uint64()), ("chars", pa.int32()),
                           ("id", pa.string())])


def answer_key(rec: dict) -> tuple[int, int] | None:
    """(64-bit hash, length) of the record's assistant text, case and whitespace folded; None without one."""
    import xxhash

    if rec.get("messages") is None:
        return None
    text = "\n".join(m.get("content") or "" for m in rec["messages"] if m["role"] == "assistant")
    folded = " ".join(text.casefold().split())
    if not folded:
        return None
    return xxhash.xxh3_64_intdigest(folded.encode("utf-8", "surrogatepass")), len(text)


def canned_keys(records: list[dict]) -> pa.Table:
    """One shard's part of the canned-answer count: no text, 8 bytes of hash per record."""
    rows = [(rec["_order"], *key, rec["id"]) for rec in records if (key := answer_key(rec)) is not None]
    cols = list(zip(*rows)) if rows else [[], [], [], []]
    return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, CANNED_SCHEMA)],
                                schema=CANNED_SCHEMA)


class CannedKeysStep(Step):
    """Phase 1's part of the canned-answer stage: each batch's answer keys go to `write` (the shard's canned key
    file); the records pass unchanged. Timed into the "canned" stage; its records are counted by CannedStep."""

    name = "canned"
    config_sections = ("quality",)
    counts_records = False

    def __init__(self, write):
        self.write = write

    def process(self, batch: list[dict]) -> list[dict]:
        self.write(canned_keys(batch))
        return batch


def find_canned(key_paths: list[str], cfg: QualityConfig, removed_path: str | None, drop_path: str) -> dict:
    """The global canned-answer decision from the shards' key files. An answer given in at least
    canned_min_count kept records is canned; under canned "cap" the records past the first canned_cap (in
    input order) of each canned answer are written to drop_path (_order, reason) for CannedStep. Returns the
    report section: counts and the top answers as hash, length, count and the first record ids (no text).
    Memory: 8+8 bytes per answer record, plus ids only of the top answers' first records."""
    orders, hashes = [], []
    for path in key_paths:
        table = pq.read_table(path, columns=["_order", "answer_hash"])
        orders.append(table.column("_order").to_numpy())
        hashes.append(table.column("answer_hash").to_numpy())
    order = np.concatenate(orders) if orders else np.zeros(0, np.int64)
    hashv = np.concatenate(hashes) if hashes else np.zeros(0, np.uint64)
    if removed_path and Path(removed_path).exists():  # what dedup removes is no longer there to be canned
        removed = pq.read_table(removed_path, columns=["_order"]).column("_order").to_numpy()
        keep = ~np.isin(order, removed)
        order, hashv = order[keep], hashv[keep]
    sort = np.lexsort((order, hashv))  # by answer, then input order: the first records of each answer lead
    order, hashv = order[sort], hashv[sort]
    uniq, start, counts = np.unique(hashv, return_index=True, return_counts=True)
    canned = counts >= cfg.canned_min_count
    rank = np.arange(len(hashv)) - np.repeat(start, counts)
    drop = np.zeros(len(hashv), bool)
    if cfg.canned == "cap":
        drop = np.repeat(canned, counts) & (rank >= cfg.canned_cap)
    pq.write_table(pa.table({"_order": pa.array(np.sort(order[drop]), pa.int64())}), drop_path, compression="zstd")
    top_idx = np.flatnonzero(canned)
    top_idx = top_idx[np.lexsort((uniq[top_idx], -counts[top_idx]))][:cfg.canned_top]
    top = [{"answer_hash": f"{int(uniq[k]):016x}", "records": int(counts[k]),
            "first_orders": order[start[k]:start[k] + EXAMPLE_IDS].tolist()} for k in top_idx]
    _fill_examples(key_paths, top)
    return {"answers": int(canned.sum()), "records": int(counts[canned].sum()),
            "capped": int(drop.sum()), "mode": cfg.canned, "min_count": cfg.canned_min_count,
            **({"cap": cfg.canned_cap} if cfg.canned == "cap" else {}), "top": top}


def _fill_examples(key_paths: list[str], top: list[dict]) -> None:
    """Length and first record ids of each top answer, read back for those few orders only."""
    wanted = {o: entry for entry in top for o in entry["first_orders"]}
    found: dict[int, tuple[int, str]] = {}
    if wanted:
        for path in key_paths:
            table = pq.read_table(path, filters=[("_order", "in", list(wanted))])
            for o, chars, rid in zip(*(table.column(c).to_pylist() for c in ("_order", "chars", "id"))):
                found[o] = (chars, rid)
    for entry in top:
        orders = entry.pop("first_orders")
        entry["chars"] = found[orders[0]][0] if orders and orders[0] in found else None
        entry["example_ids"] = [found[o][1] for o in orders if o in found]


class CannedAnswers(GlobalStep):
    """Phase 2's part of the canned-answer stage: the run's canned answers (find_canned) from every shard's
    canned key file, without what dedup removed (`removed_path`, its audit); the records past the cap go to
    the decision file CannedStep drops."""

    name = "canned"
    config_sections = ("quality",)

    def __init__(self, cfg: QualityConfig, key_paths: list[str], removed_path: str | None, drop_path: str):
        self.cfg, self.key_paths, self.removed_path, self.decision = cfg, key_paths, removed_path, drop_path

    def run(self) -> dict:
        return find_canned(self.key_paths, self.cfg, self.removed_path, self.decision)


class CannedStep(Step):
    """Drops the records find_canned put past the cap of their canned answer (canned_answer)."""

    name = "canned"
    config_sections = ("quality",)

    def __init__(self, drop_path: str | None, shard_index: int, order_shift: int):
        self.orders: set[int] = set()
        if drop_path and Path(drop_path).exists():
            lo, hi = shard_index << order_shift, (shard_index + 1) << order_shift
            table = pq.read_table(drop_path, filters=[("_order", ">=", lo), ("_order", "<", hi)])
            self.orders = set(table.column("_order").to_pylist())

    def process(self, batch: list[dict]) -> list[dict]:
        if not self.orders:
            return batch
        kept = [rec for rec in batch if rec["_order"] not in self.orders]
        if len(kept) != len(batch):
            self.drop("canned_answer", len(batch) - len(kept))
        return kept


def quality_summary(counters: dict | None, canned: dict | None, cfg: QualityConfig) -> dict:
    """report["quality"]: per check its setting ("off" for all under quality.enabled: false), the records it
    found and a few example ids."""
    counters = counters or {}
    checks = {}
    for check, setting in (("mojibake", cfg.mojibake), ("repetitive", cfg.repetition),
                           ("quoted_thread", cfg.threads), ("signature", cfg.signatures),
                           ("no_words", cfg.no_words)):
        found = counters.get(check, {})
        checks[check] = {"setting": setting if cfg.enabled else "off", "records": found.get("records", 0),
                         "example_ids": found.get("example_ids", [])[:10]}
    out = {"checks": checks, "stripped": counters.get("stripped", 0)}
    if canned is not None:
        out["canned"] = canned
    return out


# ---------------------------------------------------------------------------------------------- rendering
