"""Packing simulation: best-fit decreasing (trl's "bfd"): records longer than L are truncated to L first, each
record goes into the open sequence with the least room that still fits it, or opens a new one; and the padding
waste of dynamic padding without packing."""
from __future__ import annotations

import math

import numpy as np


def pack_bfd(lengths, max_len: int) -> np.ndarray:
    """Best-fit decreasing: the packed-sequence index of each record (records longer than max_len count as
    max_len). Records above half the length each open their own sequence (vectorized); the rest go, longest
    first, into the sequence with the least room that fits, found through a bit set of the free-room values."""
    x = np.minimum(np.asarray(lengths, dtype=np.int64), max_len)
    n = x.size
    bins = np.empty(n, dtype=np.int64)
    if n == 0:
        return bins
    order = np.argsort(-x, kind="stable")
    xs = x[order]
    n_big = int(np.count_nonzero(xs * 2 > max_len))
    bins[order[:n_big]] = np.arange(n_big)
    buckets: dict[int, list[int]] = {}
    mask = 0

    def add(room: int, b: int) -> None:  # bin b now has `room` tokens free
        nonlocal mask
        lst = buckets.get(room)
        if lst is None:
            buckets[room] = [b]
            mask |= 1 << room
        else:
            lst.append(b)

    for b, room in enumerate((max_len - xs[:n_big]).tolist()):
        if room > 0:
            add(room, b)
    n_bins = n_big
    rest_items = order[n_big:].tolist()
    for item, s in zip(rest_items, xs[n_big:].tolist()):
        m = mask >> s
        if m:
            room = s + (m & -m).bit_length() - 1
            lst = buckets[room]
            b = lst.pop()
            if not lst:
                del buckets[room]
                mask ^= 1 << room
        else:
            b, room = n_bins, max_len
            n_bins += 1
        bins[item] = b
        if room > s:
            add(room - s, b)
    return bins


def packing_summary(lengths, max_len: int, batch_size: int) -> dict:
    x = np.asarray(lengths, dtype=np.int64)
    kept = np.minimum(x, max_len)
    bins = pack_bfd(x, max_len)
    packed = int(bins.max()) + 1 if bins.size else 0
    tokens = int(kept.sum())
    capacity = packed * max_len
    steps = math.ceil(packed / batch_size) if packed else 0
    return {
        "max_seq_len": int(max_len), "records": int(x.size), "packed_sequences": packed,
        "tokens": tokens, "tokens_lost": int((x - kept).sum()),
        "packing_efficiency": round(tokens / capacity, 6) if capacity else 0.0,
        "padding_ratio": round(1 - tokens / capacity, 6) if capacity else 0.0,
        "batch_size": batch_size, "steps_per_epoch": steps,
        "tokens_per_step": batch_size * max_len,
        "real_tokens_per_step": round(tokens / steps, 1) if steps else 0.0,
        "tokens_per_epoch": capacity, "sequences_per_epoch": packed,
    }


def dynamic_padding_waste(x: np.ndarray, length: int, batch_size: int, seed: int = 0) -> float:
    """Share of padding when records (truncated to `length`) are batched in random order and each batch is
    padded to its longest record."""
    x = np.minimum(np.asarray(x, dtype=np.int64), length)
    n = x.size
    if n == 0:
        return 0.0
    xs = x[np.random.default_rng(seed).permutation(n)]
    full = n // batch_size * batch_size
    slots = int(xs[:full].reshape(-1, batch_size).max(axis=1).sum()) * batch_size if full else 0
    if full < n:
        slots += int(xs[full:].max()) * (n - full)
    return round(1 - int(xs.sum()) / slots, 6) if slots else 0.0


# trl's SFTTrainer packs through datasets' `Dataset.map(batched=True)`, whose default batch is 1,000 rows: each
# run of 1,000 records, in dataset order, is packed on its own (trl.data_utils.pack_dataset); LLaMA-Factory's
# preprocessing maps in batches of the same default size
TRAINER_PACKING_BATCH = 1000


def packed_sequences_as_trainer(lengths, max_len: int, batch: int = TRAINER_PACKING_BATCH) -> int:
    """The packed sequences a trainer makes of records of these lengths, in the order it reads them: best-fit
    decreasing within each batch of `batch` records (a whole-set packing fills each batch's last gaps with the
    next batch's records, so counts a few sequences fewer)."""
    x = np.asarray(lengths, dtype=np.int64)
    x = x[x > 0]  # trl drops empty sequences before packing
    return sum(int(pack_bfd(x[i:i + batch], max_len).max()) + 1 for i in range(0, x.size, batch))


def packing_as_trained(packing: dict, kinds: dict, batch_size: int) -> dict:
    """The run's packing figures redone from the written shards' per-kind counts (pipeline.data.kind_counts): a
    trainer packs each kind's train records apart (trl and LLaMA-Factory train each kind from its own config) and
    in batches of TRAINER_PACKING_BATCH rows, so the sequences and steps per epoch are those of the kinds added,
    not of one whole-set packing of every record. `packing` unchanged where a kind lacks the counts."""
    train = [entries.get("train") for entries in kinds.values()]
    if not packing or not train or any(t is None or "packed_sequences" not in t or "tokens_cut" not in t
                                       for t in train):
        return packing
    max_len = packing["max_seq_len"]
    sequences = sum(t["packed_sequences"] for t in train)
    tokens = sum(t["tokens"] - t["tokens_cut"] for t in train)
    steps = sum(math.ceil(t["packed_sequences"] / batch_size) for t in train)
    capacity = sequences * max_len
    out = {key: value for key, value in packing.items() if key != "scaled_from_sample"}
    out.update(records=sum(t["records"] for t in train), packed_sequences=sequences, sequences_per_epoch=sequences,
               tokens=tokens, tokens_lost=sum(t["tokens_cut"] for t in train),
               packing_efficiency=round(tokens / capacity, 6) if capacity else 0.0,
               padding_ratio=round(1 - tokens / capacity, 6) if capacity else 0.0,
               steps_per_epoch=steps, real_tokens_per_step=round(tokens / steps, 1) if steps else 0.0,
               tokens_per_epoch=capacity, by_kind={kind: entries["train"]["packed_sequences"]
                                                   for kind, entries in kinds.items()},
               one_stream_sequences=packing["packed_sequences"])  # axolotl packs every kind together

    return out
