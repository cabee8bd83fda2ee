"""pipeline.core.env: what every process sets up before the libraries it imports."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
