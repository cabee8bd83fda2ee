"""One-line errors: every failure a user can cause and fix is one line on stderr and a non-zero exit, never a
traceback; a bug shows only its type (its text may quote the data)."""
from __future__ import annotations

import errno
import sys

EXIT_ERROR, EXIT_POLICY, EXIT_INTERRUPTED = 2, 3, 130


class UserError(Exception):
    """Raised by a command for main() to print as one line."""


def fail(message: str, code: int = EXIT_ERROR) -> int:
    """Print `message` as the command's one error line; returns the exit code."""
    print(f"prepare: error: {' '.join(str(message).split())}", file=sys.stderr)
    return code


def disk_full_message(exc: OSError, where: str | None = None) -> str:
    place = where or exc.filename
    return ("no space left on device" + (f" writing {place}" if place else "")
            + (" (disk quota exceeded)" if exc.errno == errno.EDQUOT else ""))


def describe_error(exc: BaseException) -> tuple[str | None, int]:
    """(one line for the user, exit code) for the errors a user can cause and fix; (None, 2) for a bug."""
    from pipeline.core.config import ConfigError
    from pipeline.core.errors import PrepareError
    from pipeline.core.s3 import S3Error
    from pipeline.data.readers import UnreadableInput
    from pipeline.runner.preflight import PreflightError, disk_full

    # the class is looked up where it is defined, without importing the PII engine: an exception of that class
    # exists only once its module is loaded (a worker's exception is unpickled through it)
    pii = sys.modules.get("pipeline.data.pii.step")
    if pii is not None and isinstance(exc, pii.PiiPolicyError):
        return f"kvkk strict policy: {exc}", EXIT_POLICY
    if isinstance(exc, (ConfigError, PreflightError, UnreadableInput, PrepareError, S3Error, UserError)):
        return " ".join(str(exc).split()), EXIT_ERROR
    if isinstance(exc, OSError):
        if disk_full(exc):
            return disk_full_message(exc), EXIT_ERROR
        if exc.strerror:
            return f"{exc.strerror}" + (f": {exc.filename}" if exc.filename else ""), EXIT_ERROR
    return None, EXIT_ERROR


def internal_error(exc: BaseException) -> str:
    return (f"internal error ({type(exc).__name__}); rerun with PREPARE_DEBUG=1 for the traceback "
            f"(it may quote your data)")
