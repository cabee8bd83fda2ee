"""The errors a user can act on. Each subclass of PrepareError is one line for the user (no personal data,
no credentials); the CLI prints it as `prepare: error: ...` and exits 2."""
from __future__ import annotations


class PrepareError(Exception):
    """A run that cannot go on; str() is one line for the user (no personal data, no credentials)."""
