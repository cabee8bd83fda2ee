"""The errors a user can act on. Every error that reaches the user derives from PrepareError: the CLI catches
this one class (pipeline/cli/errors.py) and prints `prepare: error: ...` with its exit code.

Errors that stay outside, because they never reach the user as such:
- pipeline.data.formats.Invalid (and Dropped): a row that cannot become a record; caught per row and counted as a
  quarantine reason in the report.
- pipeline.plan.trace.TraceUnavailable: raised only by trace_step, which the commands call after checking
  trace_available() themselves (and whose RuntimeErrors they turn into one line).
- pipeline.data.pii.step.PiiStepError and pipeline.data.readers.streams.S3ReadError: a failure inside a shard,
  which the runner turns into "<file>: <phase> failed (<type>)" without the exception text (it may quote data).
"""
from __future__ import annotations

EXIT_ERROR, EXIT_POLICY = 2, 3


class PrepareError(Exception):
    """A run that cannot go on; str() is one line for the user (no personal data, no credentials)."""

    exit_code = EXIT_ERROR

    def user_line(self) -> str:
        """The error as the one line the CLI prints (line breaks folded)."""
        return " ".join(str(self).split())
