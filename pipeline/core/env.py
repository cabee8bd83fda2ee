"""Environment defaults for the libraries the pipeline uses, set once by every entry point (the CLI, run_prepare,
the model-spec reader) before those libraries are imported; a value the user set is kept."""
from __future__ import annotations

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
