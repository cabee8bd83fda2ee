"""pipeline.core.env: what every process sets up before the libraries it imports."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_pii_package_imports_presidio_without_torch_and_torch_still_imports_after():
    """Presidio's analyzer came with transformers' pipeline and torch (4 of its 5 CPU-seconds in every worker);
    the PII package imports it without them, and a later `import torch` (the GPU plan's tracer) still works."""
    script = ("import json, sys\n"
              "import pipeline.data.pii\n"
              "from pipeline.data.pii.engine import build_analyzer\n"
              "found = build_analyzer(('en',)).analyze('write to jane.doe@example.com', language='en')\n"
              "seen = {'entities': sorted({r.entity_type for r in found}),\n"
              "        'loaded': sorted(n for n in ('torch', 'transformers') if n in sys.modules)}\n"
              "import torch\n"
              "seen['torch_after'] = hasattr(torch, 'tensor')\n"
              "print(json.dumps(seen))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(Path.home())})
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"entities": ["EMAIL"], "loaded": [], "torch_after": True}


_FAULTS = """
import resource, sys
import numpy as np
from pipeline.core.env import steady_heap
if sys.argv[1] == "steady":
    assert steady_heap() and steady_heap()  # idempotent
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(200):
    a = np.ones(1 << 18, dtype=np.uint32)  # 1 MiB: over glibc's initial 128 KiB mmap threshold
    del a
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_steady_heap_keeps_scratch_arrays_off_fresh_pages_under_the_dask_nanny_setting():
    # Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536: every 1 MiB array is then a fresh mapping
    env = {**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536", "PYTHONPATH": str(ROOT)}

    def faults(mode: str) -> int:
        out = subprocess.run([sys.executable, "-c", _FAULTS, mode], env=env, capture_output=True, text=True,
                             check=True)
        return int(out.stdout)

    plain, steady = faults("plain"), faults("steady")
    assert plain > 200 * 200  # about 256 pages an array, each faulted in again
    assert steady < 200 * 10  # the array's pages are reused


def test_steady_heap_makes_the_collector_pass_less_often_than_the_default():
    import gc

    from pipeline.core.env import BATCH_GC_THRESHOLDS, steady_heap

    before = gc.get_threshold()
    try:
        steady_heap()
        assert gc.get_threshold() == BATCH_GC_THRESHOLDS and BATCH_GC_THRESHOLDS[0] > 700
    finally:
        gc.set_threshold(*before)
