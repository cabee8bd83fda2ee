"""Environment defaults for the libraries the pipeline uses, set once by every entry point (the CLI, run_prepare,
the model-spec reader) before those libraries are imported; a value the user set is kept."""
from __future__ import annotations

import ctypes
import gc
import os
import sys

DEFAULTS = {
    "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": "",  # Presidio's e-mail check (tldextract) must not go online
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",  # "PyTorch was not found": torch is not needed
}


def set_defaults() -> None:
    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)


# Presidio's nlp_engine package imports transformers' pipeline (and so torch), and thinc under spaCy imports torch,
# for NLP engines this project does not use (it runs Presidio on the no-op engine): 4 of the 5 CPU-seconds that
# importing Presidio took in every process that strips personal data (the run's own and each worker).
UNUSED_BY_PRESIDIO = ("transformers", "torch")


def import_presidio() -> None:
    """Import Presidio's analyzer with transformers and torch read as not installed (both are optional to it and
    to thinc: each import sits in a try/except ImportError), unless this process imported them already. Only
    while Presidio is imported: a later `import torch` (the GPU plan's tracer) imports it as usual."""
    hidden = [name for name in UNUSED_BY_PRESIDIO if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # the import system's "not installed"
    try:
        import presidio_analyzer  # noqa: F401
    finally:
        for name in hidden:
            if sys.modules.get(name, "") is None:
                del sys.modules[name]


# glibc's mallopt parameters; the values are those a plain process reaches by itself once its largest arrays have
# been freed (glibc raises the mmap threshold to a freed chunk's size, up to 32 MiB, and trims at twice that)
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_MAX = 32 << 20
_steady = False
# A batch of records allocates hundreds of thousands of dicts, lists and tuples that refcounting frees (records hold
# no cycles): at the default 700 allocations per young-generation pass the collector's passes cost the PII step 9% of
# its CPU (bench/e2e/gc_passes.py: 831 passes against 54 over 18,737 records); cyclic garbage waits longer for them.
BATCH_GC_THRESHOLDS = (10_000, 10, 10)


def steady_heap() -> bool:
    """Keep numpy's scratch arrays on the heap in a process that works through many batches: without it every
    array over 128 KiB is mapped and unmapped again, and the kernel zeroes its pages on each use. Dask's nanny
    starts its workers with MALLOC_TRIM_THRESHOLD_=65536, which also stops glibc from raising the mmap threshold
    by itself: the dedup key step's minor page faults were 2.7x and its CPU 1.4-1.6x a plain process's, and with
    the thresholds set here its CPU fell 30-55% in either kind of process (bench/e2e/malloc.py). The cost: up to
    64 MiB of freed heap a process keeps instead of returning it. Linux and glibc only (the collector's thresholds,
    BATCH_GC_THRESHOLDS, everywhere); idempotent."""
    global _steady
    gc.set_threshold(*BATCH_GC_THRESHOLDS)
    if _steady or not sys.platform.startswith("linux"):
        return _steady
    try:
        libc = ctypes.CDLL("libc.so.6")
        _steady = bool(libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)
                       and libc.mallopt(_M_TRIM_THRESHOLD, 2 * _MMAP_THRESHOLD_MAX))
    except (OSError, AttributeError):  # not glibc (musl): its allocator has no such thresholds
        _steady = False
    return _steady
