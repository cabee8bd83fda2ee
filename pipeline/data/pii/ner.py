"""natasha's Russian NER: loading the model once per process, and tagging windows of text with it.

`entity_spans(texts)` runs the slovnet news model's own weights through a leaner forward pass than
slovnet's `NER.map`: the convolutions are one matrix product per layer on the (batch, tokens, channels)
layout instead of an im2col copy, word and shape ids are looked up through a per-process dict, and no
markup objects are built. The spans are the same as `tagger.map` gives (tests/data/test_pii_recognizers.py
compares them); if slovnet's internals ever differ from what this expects, it falls back to `tagger.map`.
The forward pass's state is written into the cache the first time (pickle protocol 5, its arrays out of band
in the same file) and memory-mapped from there: a worker process loads it in a few milliseconds without
importing natasha and without reading the 44 MB (the pages a lookup touches are read on demand, and shared
between the worker processes through the page cache), where building natasha's tagger takes 0.9 s.
"""
from __future__ import annotations

import contextlib
import gc
import threading

from pipeline.data.lengths.tokenizer.cache import default_cache_root

_NATASHA = None
_FAST = None
_LOCK = threading.RLock()  # _forward builds the tagger under it when the cache is empty
_BLAS = None
_BATCH = 64  # windows per forward pass: large enough for efficient matrix products, little padding
_TAGGER_FORMAT = 3  # bump when what _Forward keeps (and the cache file holds) changes
_ALIGN = 64  # each array of the cache file starts at a multiple of this (numpy wants aligned data)


def one_blas_thread():
    """natasha's CNN is small matrix products: one BLAS thread is 3x cheaper in CPU than OpenBLAS's
    default pool (which spins on a busy machine and competes with the other worker processes)."""
    global _BLAS
    if _BLAS is None:
        try:
            from threadpoolctl import ThreadpoolController

            _BLAS = ThreadpoolController()
        except ImportError:  # optional: without it natasha just runs with the default thread pool
            _BLAS = False
    if _BLAS is False:
        return contextlib.nullcontext()
    return _BLAS.limit(limits=1, user_api="blas")


class SortedVocab:
    """natasha's 250k-word vocabulary as one sorted array of UTF-8 byte strings and the word ids in that order.
    slovnet's Vocab holds a list and a dict of 250k Python strings, which take 0.15-0.2 s to unpickle in every
    worker process; these two numpy arrays load in milliseconds. A word's id is found by binary search, once
    per distinct word (_Forward caches ids). Same ids as Vocab.encode, unknown words get unk_id."""

    def __init__(self, vocab):
        import numpy as np

        words = np.array([w.encode("utf-8") for w in vocab.items], dtype=bytes)
        order = np.argsort(words, kind="stable")
        self.words = words[order]
        self.ids = order.astype(np.int32)
        self.unk_id = vocab.unk_id
        self.pad_id = vocab.pad_id

    def encode(self, item: str) -> int:
        import numpy as np

        key = item.encode("utf-8")
        # numpy's fixed-width bytes drop trailing NULs and cannot hold a longer word: neither is in the list
        if len(key) > self.words.itemsize or key.endswith(b"\x00"):
            return self.unk_id
        k = int(np.searchsorted(self.words, key))
        return int(self.ids[k]) if k < len(self.words) and self.words[k] == key else self.unk_id


def natasha_tagger():
    """natasha's NewsNERTagger built from the wheel's files (about 0.9 s: navec's product-quantization
    tables and two 250k-word vocabularies are rebuilt in Python), once per process. Only slovnet's own
    NER.map (the fallback, and the reference in tests) needs it: the lean forward pass loads its own state
    from the cache (`_forward`)."""
    global _NATASHA
    if _NATASHA is None:
        with _LOCK:
            if _NATASHA is None:
                from natasha import NewsEmbedding, NewsNERTagger

                tagger = NewsNERTagger(NewsEmbedding())
                # batches of 64 short windows: fewer, larger matrix products (the default is 8)
                tagger.batch_size = _BATCH
                encoder = getattr(getattr(tagger, "infer", None), "encoder", None)
                if encoder is not None and hasattr(encoder, "batch_size"):
                    encoder.batch_size = _BATCH
                _NATASHA = tagger
    return _NATASHA


def _forward_cache_file():
    import sys
    from importlib.metadata import PackageNotFoundError, version

    try:
        versions = "-".join(version(p) for p in ("natasha", "slovnet", "navec", "numpy"))
    except PackageNotFoundError:
        return None
    tag = f"news-ner-{versions}-py{sys.version_info[0]}{sys.version_info[1]}-{_TAGGER_FORMAT}"
    return default_cache_root() / "natasha" / f"{tag}.bin"


def _dump_forward(fast, fh) -> None:
    """The cache file: an 8-byte length, a pickle of (the pickle stream of `fast`, [(offset, size) of each
    array's data]), then the arrays' data, each at an aligned offset."""
    import pickle
    import struct

    buffers: list = []
    stream = pickle.dumps(fast, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    spans, offset = [], 0
    for raw in raws:
        spans.append((offset, raw.nbytes))
        offset += -(-raw.nbytes // _ALIGN) * _ALIGN
    head = pickle.dumps((stream, spans), protocol=5)
    base = -(-(8 + len(head)) // _ALIGN) * _ALIGN
    fh.write(struct.pack("<Q", len(head)) + head + b"\0" * (base - 8 - len(head)))
    for raw, (off, size) in zip(raws, spans):
        fh.write(raw)
        fh.write(b"\0" * (-size % _ALIGN))


def _load_forward(path):
    """The _Forward of a cache file written by _dump_forward, its arrays read-only views of the mapped file."""
    import mmap
    import pickle
    import struct

    with path.open("rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mm)
    (n,) = struct.unpack_from("<Q", mm, 0)
    stream, spans = pickle.loads(view[8:8 + n])
    base = -(-(8 + n) // _ALIGN) * _ALIGN
    if spans and base + spans[-1][0] + spans[-1][1] > len(mm):
        raise ValueError("truncated cache file")
    return pickle.loads(stream, buffers=[view[base + off:base + off + size] for off, size in spans])


def _cached_forward():
    """The lean forward pass's state (weights, vocabularies: no natasha import) mapped from the cache file
    when it loads, else built from the tagger and written there (atomically: workers of one run may race to
    write it); False when slovnet's layout is not the one _Forward expects. The file is this cache's own
    output, like any other cache entry."""
    import os
    import tempfile

    path = _forward_cache_file()
    if path is not None and path.is_file():
        try:
            fast = _load_forward(path)
            if isinstance(fast, _Forward):
                return fast
        except Exception:  # a truncated or foreign file: rebuild and replace it
            pass
    try:
        fast = _Forward(natasha_tagger())
    except (AttributeError, IndexError, TypeError, ValueError):  # not the slovnet layout expected
        return False
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as fh:
                    _dump_forward(fast, fh)
                os.replace(tmp, path)
                # files of earlier formats or package versions (35-45 MB each) would only pile up
                for old in path.parent.glob("news-ner-*"):
                    if old != path:
                        old.unlink(missing_ok=True)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        except OSError:  # a read-only cache: build each time
            pass
    return fast


class _Forward:
    """The news NER model's forward pass and CRF decoding over batches of tokenized windows."""

    def __init__(self, tagger):
        import numpy as np

        infer = tagger.infer
        self.emb = infer.model.emb  # word (navec, product-quantized) and shape embeddings
        self.head = infer.model.head  # projection to tag scores, CRF
        self.words = SortedVocab(infer.encoder.words_vocab)
        self.shapes = infer.encoder.shapes_vocab
        self.tags = infer.decoder.tags_vocab.items
        self.ids: dict[str, tuple[int, int]] = {}
        self.layers = []
        for layer in infer.model.encoder.layers:
            weight = layer.conv.weight.array  # filters x channels x kernel
            kernel = weight.shape[2]
            # channels x (kernel * filters): one product gives every kernel tap's contribution
            taps = np.ascontiguousarray(np.concatenate([weight[:, :, k].T for k in range(kernel)], axis=1))
            norm = layer.norm
            self.layers.append((taps, layer.conv.bias.array, layer.conv.padding, kernel, weight.shape[0],
                                norm.mean.array, norm.std.array, norm.weight.array, norm.bias.array))

    def _ids(self, word: str) -> tuple[int, int]:
        got = self.ids.get(word)
        if got is None:
            from slovnet.shape import word_shape

            got = (self.words.encode(word.lower()), self.shapes.encode(word_shape(word)))
            if len(self.ids) < 200_000:
                self.ids[word] = got
        return got

    def _emissions(self, word_id, shape_id, pad_mask):
        import numpy as np

        x = self.emb(word_id, shape_id)  # batch x tokens x channels
        for taps, bias, pad, kernel, filters, mean, std, gamma, beta in self.layers:
            xp = np.pad(x, ((0, 0), (pad, pad), (0, 0)))
            batch, length, channels = xp.shape
            y = (xp.reshape(batch * length, channels) @ taps).reshape(batch, length, kernel, filters)
            out_len = length - kernel + 1
            out = y[:, 0:out_len, 0, :].copy()
            for k in range(1, kernel):
                out += y[:, k:k + out_len, k, :]
            out += bias
            np.clip(out, 0, None, out=out)  # ReLU, then batch norm (inference: fixed statistics)
            out = (out - mean) / std * gamma + beta
            out[pad_mask] = 0
            x = out
        return self.head(x)

    def spans(self, texts: list[str]) -> list[list[tuple[int, int, str]]]:
        import numpy as np
        from razdel import tokenize
        from slovnet.bio import bio_spans

        out: list = [None] * len(texts)
        order = sorted(range(len(texts)), key=lambda k: len(texts[k]))  # similar lengths: less padding
        for c in range(0, len(order), _BATCH):
            idx = order[c:c + _BATCH]
            toks = [list(tokenize(texts[k])) for k in idx]
            width = max(1, max(len(t) for t in toks))
            word_id = np.full((len(idx), width), self.words.pad_id)
            shape_id = np.full((len(idx), width), self.shapes.pad_id)
            for b, tt in enumerate(toks):
                for j, tok in enumerate(tt):
                    word_id[b, j], shape_id[b, j] = self._ids(tok.text)
            pad_mask = word_id == self.words.pad_id
            paths = self.head.crf.decode(self._emissions(word_id, shape_id, pad_mask), ~pad_mask)
            for b, path in enumerate(paths):
                out[idx[b]] = [(s.start, s.stop, s.type)
                               for s in bio_spans(toks[b], [self.tags[i] for i in path[:len(toks[b])]])]
        return out


def _slovnet_spans(texts: list[str]) -> list[list[tuple[int, int, str]]]:
    """The same through slovnet's own NER.map (the reference, and the fallback)."""
    order = sorted(range(len(texts)), key=lambda k: len(texts[k]))
    out: list = [None] * len(texts)
    for k, markup in zip(order, natasha_tagger().map([texts[k] for k in order])):
        out[k] = [(s.start, s.stop, s.type) for s in markup.spans]
    return out


def _forward():
    global _FAST
    if _FAST is None:
        with _LOCK:
            if _FAST is None:
                _FAST = _cached_forward()
                gc.freeze()  # long-lived, like the engine (engine.get_detector): kept out of GC passes
    return _FAST


def entity_spans(texts: list[str]) -> list[list[tuple[int, int, str]]]:
    """natasha's entity spans (start, stop, PER/LOC/ORG) for each text."""
    if not texts:
        return []
    fast = _forward()
    with one_blas_thread():
        return fast.spans(texts) if fast else _slovnet_spans(texts)
