"""One-line errors: every failure a user can cause and fix is one line on stderr and a non-zero exit, never a
traceback; a bug shows only its type (its text may quote the data)."""
from __future__ import annotations

import errno
import sys

from pipeline.core.errors import EXIT_ERROR, EXIT_POLICY, PrepareError

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_POLICY", "UserError", "describe_error", "disk_full_message", "fail",
           "internal_error"]

EXIT_INTERRUPTED = 130


class UserError(PrepareError):
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
    from pipeline.runner.preflight import disk_full

    if isinstance(exc, PrepareError):  # every error a user can act on (pipeline/core/errors.py)
        return exc.user_line(), exc.exit_code
    if isinstance(exc, OSError):
        if disk_full(exc):
            return disk_full_message(exc), EXIT_ERROR
        if exc.strerror:
            return f"{exc.strerror}" + (f": {exc.filename}" if exc.filename else ""), EXIT_ERROR
    return None, EXIT_ERROR


def internal_error(exc: BaseException) -> str:
    return (f"internal error ({type(exc).__name__}); rerun with PREPARE_DEBUG=1 for the traceback "
            f"(it may quote your data)")
