"""`prepare show DATA_OR_RUN`: records as the trainer will see them.

For each shown record: the chat template rendered to text (tool definitions included), the trainable
(assistant-only loss) tokens marked, the token counts, and where the max_seq_len cut falls. Rendering, spans and
counts come from the run's own machinery (pipeline.data.lengths.step.LengthStep, pipeline.data.lengths.tokenizer's handles and
render_default); this module only maps the rendering onto tokens and prints it.

The zero-trainable check: every record of the data (not only the shown ones) is counted; a record whose
trainable tokens all lie beyond the cut (or that has none: no assistant turn, empty answers) trains on nothing,
its labels all -100. When more than `max_untrained_share` of the records (default: half, i.e. most) are like
that, the command fails in one line, naming how many and a few ids, unless --allow-untrained.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.core.config import LengthsConfig, load_config
from pipeline.core.errors import PrepareError
from pipeline.core.files import sha256_file
from pipeline.core.records import COLUMNS, from_table, template_inputs
from pipeline.core.s3 import client, parse_uri
from pipeline.core.stats import StageStats
from pipeline.data.lengths.step import LengthStep
from pipeline.data.lengths.tokenizer.chat_template import is_chat, render_default
from pipeline.data.lengths.tokenizer.hf_handle import HFHandle
from pipeline.data.lengths.tokenizer.mistral_handle import MistralCommonHandle
from pipeline.data.normalize import Normalizer
from pipeline.data.readers import expand_inputs

BATCH = 512


class ShowError(PrepareError):
    """One line for the user (pipeline.cli.show prints it)."""


@dataclass
class View:
    """A record as tokens: the text each token adds to the rendering and whether it is trained on."""
    pieces: list[str]
    trainable: list[bool]
    note: str | None = None

    @property
    def tokens(self) -> int:
        return len(self.pieces)

    def trainable_within(self, max_len: int | None) -> int:
        return sum(self.trainable[:max_len] if max_len else self.trainable)


@dataclass
class Target:
    """What `show` reads: records (in batches), the tokenizer settings and the max length."""
    kind: str                      # "run" | "shard" | "data"
    records: "callable"
    lengths_cfg: object
    model: str | None
    max_seq_len: int | None
    describe: str
    extra: dict = field(default_factory=dict)


# --------------------------------------------------------------------------------------------- the target

def open_target(target: str, model: str | None = None, tokenizer: str | None = None,
                max_seq_len: int | None = None, config: str | None = None,
                splits: tuple[str, ...] = ("train",)) -> Target:
    """A run directory (its shards and manifest: model, tokenizer, template, max_seq_len), one Parquet shard, or
    data files (read and normalized as `prepare run` does). Flags override what the run recorded."""
    path = Path(target)
    if path.is_dir() and ((path / "manifest.json").is_file() or (path / ".prepare-run").exists()):
        manifest_path = path / "manifest.json"
        if not manifest_path.is_file():
            raise ShowError(f"{path} has no manifest.json: the run did not finish (rerun `prepare run`)")
        manifest = json.loads(manifest_path.read_text())
        conf = manifest.get("config") or {}
        lengths = dict(conf.get("lengths") or {})
        if tokenizer:
            lengths["tokenizer"] = tokenizer
        lcfg = LengthsConfig.model_validate(lengths)
        listed = [s for s in manifest.get("shards", []) if s["split"] in splits]
        # an appended version's earlier shards are where `base` says (--append-to, a run directory or an s3://
        # prefix), not in the run directory
        shards = [(f"{s['base'].rstrip('/')}/{s['path']}" if s.get("base") else str(path / s["path"]), s["sha256"])
                  for s in listed]
        return Target("run", lambda: _parquet_batches(shards), lcfg,
                      model or (conf.get("estimate") or {}).get("model"),
                      max_seq_len or manifest.get("max_seq_len"),
                      f"run {path} ({', '.join(splits)}: {len(shards)} shard(s))")
    cfg = load_config(config, {"inputs": [target], "estimate": {"model": model}, "lengths": {"tokenizer": tokenizer}})
    max_len = max_seq_len or cfg.lengths.max_seq_len
    if path.is_file() and path.suffix == ".parquet" and _is_shard(path):
        return Target("shard", lambda: _parquet_batches([(str(path), None)]), cfg.lengths, cfg.estimate.model,
                      max_len, f"shard {path}")
    return Target("data", lambda: _data_batches(cfg), cfg.lengths, cfg.estimate.model, max_len, f"data {target}")


def _is_shard(path: Path) -> bool:
    import pyarrow.parquet as pq

    try:
        return set(COLUMNS) <= set(pq.ParquetFile(path).schema_arrow.names)
    except Exception:  # noqa: BLE001 - not our shard: read it as data
        return False


def _parquet_batches(shards: list[tuple[str, str | None]]) -> Iterator[list[dict]]:
    """The records of each shard (path or s3:// URI, and the sha256 its manifest lists, if any)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for where, sha256 in shards:
        with _local_copy(where, sha256) as local:
            for batch in pq.ParquetFile(local).iter_batches(batch_size=BATCH, columns=list(COLUMNS)):
                yield from_table(pa.Table.from_batches([batch]))


@contextmanager
def _local_copy(where: str, sha256: str | None) -> Iterator[str]:
    """A shard as a local file: itself, or an S3 object downloaded (the project's S3 client) to a temporary
    file, one shard at a time and removed after it is read, checked against its manifest's sha256 (a shard
    replaced on S3 would show other records than the version's)."""
    if not where.startswith("s3://"):
        yield where
        return
    with tempfile.TemporaryDirectory(prefix="prepare-show-") as folder:
        local = os.path.join(folder, "shard.parquet")
        bucket, key = parse_uri(where)
        try:
            client().download_file(bucket, key, local)
        except Exception as exc:  # noqa: BLE001 - any failure is the same: the shard cannot be read
            raise ShowError(f"cannot read {where} ({type(exc).__name__})") from None
        if sha256 and sha256_file(local) != sha256:
            raise ShowError(f"{where} is not the shard its manifest lists (sha256 differs)")
        yield local


def _data_batches(cfg) -> Iterator[list[dict]]:
    for index, f in enumerate(expand_inputs(cfg.inputs, cfg)):
        yield from Normalizer(f, cfg, index).batches()


# ------------------------------------------------------------------------------------------------ the view

def view_record(handle, rec: dict) -> View:
    """The record rendered and tokenized as the trainer does, each token marked trainable or not: the same
    rendering, spans and overlap rule as the counts (pipeline.data.lengths.tokenizer)."""
    if isinstance(handle, MistralCommonHandle):
        return _view_mistral(handle, rec)
    if not isinstance(handle, HFHandle) or handle.backend is None:
        raise ShowError(f"prepare show needs a fast tokenizer (one with offsets); {handle.name} is not one")
    return _view_hf(handle, rec)


def _view_hf(handle, rec: dict) -> View:
    if not is_chat(rec):
        text = handle._text_inputs([rec])[0]           # text + EOS, as trl appends it
        enc = handle.backend.encode(text, add_special_tokens=True)
        return View(_pieces(text, enc), [True] * len(enc))
    msgs, tools = template_inputs(rec)
    note = None
    if handle.builtin_template:
        text, spans = render_default(msgs, handle.special.get("bos_token"), handle.special.get("eos_token"), tools)
    else:
        (text,), sp = handle.render([msgs], spans=handle.has_generation, tools=tools)
        spans = sp[0] if handle.has_generation else handle._prefix_spans(msgs, text, tools)
        if spans is None:
            spans, note = [], ("the template is not prefix-consistent: trainable tokens are counted by differences "
                               "and cannot be marked")
    enc = handle.backend.encode(text, add_special_tokens=False)
    spans = [(a, b) for a, b in spans if b > a]
    # transformers' assistant-mask rule: a token counts when it overlaps a span (token_end > a, token_start < b)
    mask = [any(te > a and ts < b for a, b in spans) for ts, te in enc.offsets]
    return View(_pieces(text, enc), mask, note)


def _pieces(text: str, enc) -> list[str]:
    """The text each token adds: up to its end offset; a token with no text of its own (a BOS the tokenizer
    adds) shows as the token; later tokens of one character (byte fallback) add nothing."""
    out, pos = [], 0
    for token, (start, end) in zip(enc.tokens, enc.offsets):
        if end > pos:
            out.append(text[pos:end])
            pos = end
        elif start == end:
            out.append(token)
        else:
            out.append("")
    if pos < len(text) and out:
        out[-1] += text[pos:]
    return out


def _view_mistral(handle, rec: dict) -> View:
    import codecs

    raw = handle.raw
    if is_chat(rec):
        request, msgs = handle._request(*template_inputs(rec))
        ids = handle.mistral.encode_chat_completion(request).tokens
        mask = [False] * len(ids)
        last_user = max((i for i, m in enumerate(msgs) if m.role == "user"), default=-1)
        pos, missed = 0, 0
        for i, m in enumerate(msgs):
            if m.role != "assistant":
                continue
            seq = list(handle.instruct.encode_assistant_message(m, i < last_user))  # incl. its EOS, as counted
            j = _find(ids, seq, pos)
            if j < 0:
                missed += 1
                continue
            mask[j:j + len(seq)] = [True] * len(seq)
            pos = j + len(seq)
        note = f"{missed} assistant turn(s) could not be located in the encoding" if missed else None
    else:
        ids = raw.encode(rec.get("text") or "", bos=True, eos=True)
        mask, note = [True] * len(ids), None
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pieces = []
    for i in ids:
        if raw.is_special(i):
            pieces.append(raw.id_to_piece(i))
        else:
            pieces.append(decoder.decode(raw.id_to_byte_piece(i)))
    return View(pieces, mask, note)


def _find(seq: list[int], sub: list[int], start: int) -> int:
    n = len(sub)
    for j in range(start, len(seq) - n + 1):
        if seq[j:j + n] == sub:
            return j
    return -1


# ----------------------------------------------------------------------------------------------- printing

GREEN, DIM_GREEN, DIM, CUT, RESET = "\x1b[1;32m", "\x1b[2;32m", "\x1b[2m", "\x1b[1;97;41m", "\x1b[0m"


def format_view(view: View, max_len: int | None, color: bool) -> str:
    """The rendering with trainable runs marked (green on a terminal, [[...]] otherwise) and the cut shown where
    max_seq_len falls; the tokens past it are printed too (dimmed on a terminal): that is what truncation drops."""
    out: list[str] = []
    trained = False

    def close():
        nonlocal trained
        if trained:
            out.append(RESET if color else "]]")
            trained = False

    for k, (piece, t) in enumerate(zip(view.pieces, view.trainable)):
        if max_len and k == max_len:
            close()
            marker = f" ✂ max_seq_len {max_len:,}: the trainer cuts here "
            out.append(f"{CUT}{marker}{RESET}{DIM}" if color else f"<<<CUT max_seq_len={max_len}>>>")
        if t and not trained:
            out.append((DIM_GREEN if max_len and k >= max_len else GREEN) if color else "[[")
            trained = True
        elif not t and trained:
            close()
            if color and max_len and k >= max_len:
                out.append(DIM)
        out.append(piece)
    close()
    if color:
        out.append(RESET)
    return "".join(out)


def record_header(i: int, n: int, rec: dict, tokens: int, trainable: int, after: int | None,
                  max_len: int | None) -> str:
    src = rec.get("source") or {}
    where = f"{src.get('file')}:{src.get('line')}" if src.get("file") else ""
    line = (f"── record {i}/{n}  id {rec.get('id')}  {where}  {rec.get('kind')}: {tokens:,} tokens, "
            f"{trainable:,} trainable")
    if max_len and tokens > max_len:
        line += f"; over max_seq_len {max_len:,} by {tokens - max_len:,}: {after:,} trainable left after the cut"
    return line + " ──"


# -------------------------------------------------------------------------------------------------- check

@dataclass
class Check:
    records: int = 0
    zero: int = 0                   # records with no trainable token left after the cut
    zero_ids: list[str] = field(default_factory=list)
    over: int = 0                   # records longer than max_seq_len
    template_errors: int = 0
    error_ids: list[str] = field(default_factory=list)

    def add_zero(self, rec: dict) -> None:
        self.zero += 1
        if len(self.zero_ids) < 5:
            self.zero_ids.append(str(rec.get("id")))


def run_show(target: Target, n: int = 5, ids: list[str] | None = None, color: bool = False,
             allow_untrained: bool = False, max_untrained_share: float = 0.5, write=print) -> Check:
    """Print the chosen records as the trainer sees them and check every record for trainable tokens."""
    cache = str(Path(os.environ.get("PREPARE_CACHE", ".cache/prepare")) / "tokens")  # the run's token cache
    # counted even where the run had the lengths step off: what is shown is what the trainer will see
    step = LengthStep(target.lengths_cfg, cache, model=target.model)
    handle = step.handle
    max_len = target.max_seq_len
    want = set(ids or ())
    shown: list[tuple[dict, View, int, int]] = []
    check = Check()
    for batch in target.records():
        copies = [{k: v for k, v in r.items() if k not in ("_tokens", "_trainable")} for r in batch]
        step.annotate(copies, StageStats("lengths"))   # sets the counts (cached) on each record it can render
        by_pos = [c if c.get("_tokens") is not None else None for c in copies]
        for rec, m in zip(batch, by_pos):
            check.records += 1
            if m is None:
                check.template_errors += 1
                if len(check.error_ids) < 5:
                    check.error_ids.append(str(rec.get("id")))
                continue
            tokens, trainable = m["_tokens"], m["_trainable"]
            pick = (rec.get("id") in want) if want else len(shown) < n
            view = None
            if max_len and tokens > max_len:
                check.over += 1
                view = view_record(handle, rec)
                after = view.trainable_within(max_len)
            else:
                after = trainable
            if after == 0:
                check.add_zero(rec)
            if pick:
                shown.append((rec, view or view_record(handle, rec), tokens, trainable))
    total = len(shown)
    for i, (rec, view, tokens, trainable) in enumerate(shown, 1):
        after = view.trainable_within(max_len) if max_len and tokens > max_len else trainable
        write(record_header(i, total, rec, tokens, trainable, after, max_len))
        write(format_view(view, max_len, color))
        if view.note:
            write(f"  note: {view.note}")
        if (view.tokens, sum(view.trainable)) != (tokens, trainable):
            write(f"  note: the marked view has {view.tokens:,} tokens, {sum(view.trainable):,} trainable; the "
                  f"counted figures above are the run's")
        write("")
    if want:
        missing = sorted(want - {r.get("id") for r, *_ in shown})
        if missing:
            write(f"not found: {', '.join(missing[:10])}")
    cut = f"the cut at max_seq_len {max_len:,}" if max_len else "no max_seq_len (no cut)"
    write(f"{target.describe}; tokenizer {step.tokenizer_name}; {cut}")
    write(f"checked {check.records:,} records: {check.over:,} over the max length, {check.zero:,} with no trainable "
          f"token after templating and the cut" + (f", {check.template_errors:,} the chat template rejects"
                                                   if check.template_errors else ""))
    measured_records = check.records - check.template_errors
    if check.zero and measured_records:
        share = check.zero / measured_records
        how = f"all {check.zero:,} records" if check.zero == measured_records else \
            f"{check.zero:,} of {measured_records:,} records ({share:.0%})"
        message = (f"{how} have no trainable token after templating and the cut ({cut}; e.g. ids "
                   f"{', '.join(check.zero_ids)}): the trainer's labels for them are all -100 and they train "
                   f"nothing")
        if share > max_untrained_share and not allow_untrained:
            raise ShowError(message + "; raise max_seq_len, shorten the prompts, or pass --allow-untrained")
        print(f"prepare: warning: {message}", file=sys.stderr)
    return check
