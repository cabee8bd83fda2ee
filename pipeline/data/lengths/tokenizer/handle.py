"""What every tokenizer handle offers (TokenizerHandle), and the fingerprint digest the handles and the count
cache key on."""
from __future__ import annotations

import hashlib
from array import array
from typing import Sequence

COUNT_METHOD_VERSION = "3"  # bump when the counting rules change: old cache entries stop matching
PIECE_WINDOW_CHARS = 1 << 16  # TokenizerHandle.piece_ends


def digest(data: bytes | str, n: int = 32) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=n // 2).hexdigest()


class TokenizerHandle:
    """Counts tokens the way the trainer will. Subclasses: HFHandle (batched fast tokenizer), MistralCommonHandle."""

    name: str
    fingerprint: str      # stable across processes and machines for the same tokenizer
    template_hash: str    # of the chat template (or the mistral-common encoding version)
    has_template: bool = True

    def measure(self, records: list[dict]) -> list[tuple[int, int] | Exception]:
        """(total tokens, trainable tokens) per record; an Exception in place of a record that cannot be rendered."""
        raise NotImplementedError

    def measure_one(self, record: dict) -> tuple[int, int]:
        result = self.measure([record])[0]
        if isinstance(result, Exception):
            raise result
        return result

    def piece_ends(self, text: str) -> Sequence[int]:
        """Character offsets where each token of `text` (tokenized alone, no special tokens) ends: the cut points
        truncation and splitting use, each cut measured anyway. A long text is tokenized in windows of
        PIECE_WINDOW_CHARS, each starting at the last end of the one before: one window's offsets as Python
        objects at a time (the whole of an 8 MiB text's took about 1 GB), the ends in a compact array."""
        ends, start = array("q"), 0
        while start < len(text):
            stop = min(start + PIECE_WINDOW_CHARS, len(text))
            window = self._piece_ends(text[start:stop])
            if stop < len(text) and len(window) > 1:
                window = window[:-1]  # the window's last token may go on past it: start the next one there
            ends.extend(start + e for e in window)
            start = ends[-1] if window else stop
        return ends

    def _piece_ends(self, text: str) -> list[int]:
        """piece_ends of one window: sorted, ending at len(text)."""
        raise NotImplementedError
