"""Environment defaults for the libraries the pipeline uses, set once by every entry point (the CLI, run_prepare,
the model-spec reader) before those libraries are imported; a value the user set is kept."""
from __future__ import annotations

import os

DEFAULTS = {
    "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": "",  # Presidio's e-mail check (tldextract) must not go online
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",  # "PyTorch was not found": torch is not needed
}


def set_defaults() -> None:
    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)
