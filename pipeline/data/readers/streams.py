"""Byte streams of an input: byte windows, S3 range reads, decompression with the size cap, and the detection
of a compressed stream that ends early (truncated), so the rows before the cut are counted and the cut reported."""
from __future__ import annotations

import gzip
import io
import os
import zlib
from typing import BinaryIO

from pipeline.core.config import ReadConfig
from pipeline.core.s3 import client, open_object, parse_uri
from pipeline.data.readers.files import InputFile, UnreadableInput


class _Window(io.RawIOBase):
    """The bytes [start, end) of an open file, as a stream."""

    def __init__(self, fh, length: int):
        self.fh, self.left = fh, length

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.fh.read(min(len(buffer), self.left))
        buffer[: len(data)] = data
        self.left -= len(data)
        return len(data)

    def close(self) -> None:
        self.fh.close()
        super().close()


class _CappedReader(io.RawIOBase):
    """Stops after `cap` decompressed bytes and remembers that it did, so the rest is reported as unread.
    A compressed stream that ends early or breaks after some data (a cut download: gzip's EOFError, a
    zstd frame without its end) ends the file here with `truncated` set: the rows before it are counted
    and the report says the file is incomplete, instead of the run failing (gzip) or the cut being
    taken for the file's end (zstd)."""

    def __init__(self, raw: BinaryIO, cap: int, frames: "_ZstdFrames | None" = None):
        self.raw, self.cap, self.read_bytes, self.capped = raw, cap, 0, False
        self.frames, self.truncated = frames, False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.truncated:
            return 0
        room = self.cap - self.read_bytes
        try:
            if room <= 0:
                self.capped = self.capped or bool(self.raw.read(1))
                return 0
            view = memoryview(buffer)[: min(len(buffer), room)]
            # read1: one decoder step; read() keeps reading to fill the request, and a stream cut inside
            # that request raised with the data before the cut still unreturned (a small cut .gz was
            # "not a valid archive")
            data = self.raw.read1(len(view)) if hasattr(self.raw, "read1") else self.raw.read(len(view))
        except Exception as exc:
            # only a decoder's own errors; a failing disk or connection still fails the read
            if not self.read_bytes or not _decoder_error(exc):
                raise  # nothing decoded yet: not an archive at all (open_binary says so)
            self.truncated = True
            return 0
        n = len(data)
        if not n and self.frames is not None and not self.frames.complete:
            self.truncated = True
        view[:n] = data
        self.read_bytes += n
        return n


def _decoder_error(exc: Exception) -> bool:
    return (isinstance(exc, (EOFError, gzip.BadGzipFile, zlib.error))
            or type(exc).__module__.split(".")[0] == "zstandard")


class _ZstdFrames(io.RawIOBase):
    """The compressed bytes of a .zst file, passed through while following its frame structure (frame
    headers, block headers, checksums; RFC 8878), so that at the end it knows whether the last frame was
    complete. zstandard's stream reader returns a cut stream's data and then b"" as if the file had ended,
    so a cut download would otherwise look whole."""

    _MAGIC, _SKIP_LOW = 0xFD2FB528, 0x184D2A50

    def __init__(self, raw: BinaryIO):
        self.raw = raw
        self.head = bytearray()  # bytes of the header being parsed
        self.need = 4            # header bytes wanted next (0: skipping `skip` payload bytes)
        self.state = "magic"
        self.skip = 0
        self.checksum = False
        self.ended = False

    def readable(self) -> bool:
        return True

    @property
    def complete(self) -> bool:
        return self.state == "magic" and not self.head and not self.skip

    def readinto(self, buffer) -> int:
        data = self.raw.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        self._follow(memoryview(data))
        return n

    def _follow(self, data: memoryview) -> None:
        i, n = 0, len(data)
        while i < n:
            if self.skip:
                step = min(self.skip, n - i)
                self.skip -= step
                i += step
                continue
            take = min(self.need - len(self.head), n - i)
            self.head += data[i:i + take]
            i += take
            if len(self.head) < self.need:
                return
            self._advance(bytes(self.head))

    def _advance(self, head: bytes) -> None:
        state, self.head = self.state, bytearray()
        if state == "magic":
            magic = int.from_bytes(head, "little")
            if magic == self._MAGIC:
                self.state, self.need = "descriptor", 1
            elif magic & 0xFFFFFFF0 == self._SKIP_LOW:
                self.state, self.need = "skip_size", 4
            else:  # not a frame: the decompressor raises on it; stop following
                self.state, self.need = "lost", 1 << 62
        elif state == "skip_size":
            self.skip, self.state, self.need = int.from_bytes(head, "little"), "magic", 4
        elif state == "descriptor":
            d = head[0]
            fcs_flag, single, self.checksum, dict_flag = d >> 6, (d >> 5) & 1, bool((d >> 2) & 1), d & 3
            size = (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0), 2, 4, 8)[fcs_flag]
            if size:
                self.state, self.need = "header_rest", size
            else:
                self.state, self.need = "block", 3
        elif state == "header_rest":
            self.state, self.need = "block", 3
        elif state == "block":
            h = int.from_bytes(head, "little")
            last, kind, size = h & 1, (h >> 1) & 3, h >> 3
            self.skip = 1 if kind == 1 else size  # an RLE block is one byte on disk
            if last:
                self.state, self.need = ("checksum", 4) if self.checksum else ("magic", 4)
            else:
                self.state, self.need = "block", 3
        elif state == "checksum":
            self.state, self.need = "magic", 4


def _open_raw(f: InputFile) -> BinaryIO:
    try:
        if f.is_s3:
            return open_object(f.uri)
        fh = open(f.uri, "rb")
        if f.start or f.end is not None:
            fh.seek(f.start)
            return _Window(fh, (f.end if f.end is not None else os.path.getsize(f.uri)) - f.start)
        return fh
    except PermissionError:
        raise UnreadableInput(f.shown, "permission denied") from None
    except FileNotFoundError:
        raise UnreadableInput(f.shown, "no such file") from None
    except OSError as exc:
        raise UnreadableInput(f.shown, exc.strerror or type(exc).__name__) from None


def open_binary(f: InputFile, cfg: ReadConfig) -> _CappedReader:
    """Decompressed, size-capped binary stream. Checks the archive is valid before returning."""
    raw = _open_raw(f)
    frames = None
    if f.compression == "gzip":
        stream = gzip.GzipFile(fileobj=raw)
    elif f.compression == "zstd":
        import zstandard

        frames = _ZstdFrames(raw)
        stream = zstandard.ZstdDecompressor().stream_reader(frames, read_across_frames=True)
    else:
        stream = raw
    capped = _CappedReader(stream, cfg.max_decompressed_bytes, frames)
    buffered = io.BufferedReader(capped, buffer_size=1 << 20)
    try:
        buffered.peek(1)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise UnreadableInput(f.shown, f"not a valid {f.compression} archive ({type(exc).__name__})") from None
    except Exception as exc:  # zstandard.ZstdError and friends
        raise UnreadableInput(f.shown, f"not a valid {f.compression} archive ({type(exc).__name__})") from None
    if capped.truncated and not capped.read_bytes:  # a zstd frame cut before any data came out
        raise UnreadableInput(f.shown, f"not a valid {f.compression} archive (truncated)")
    buffered.capped_reader = capped  # type: ignore[attr-defined]
    return buffered  # type: ignore[return-value]


def _s3_cause(exc: Exception) -> str:
    code = getattr(exc, "response", {}).get("Error", {}).get("Code") if hasattr(exc, "response") else None
    return f"{type(exc).__name__} {code}" if code else type(exc).__name__


class S3ReadError(OSError):
    """An S3 request for an input failed; str() names the cause's type (no URI: it may be a redacted name)."""


class S3RangeFile(io.RawIOBase):
    """An S3 object as a seekable file, read by HTTP range requests: pyarrow then fetches the footer and
    one row group's column chunks at a time (a 247 MB object read whole took 739 MB)."""

    def __init__(self, uri: str):
        self.uri = uri
        self.bucket, self.key = parse_uri(uri)
        self.s3 = client()
        try:
            self.size = self.s3.head_object(Bucket=self.bucket, Key=self.key)["ContentLength"]
        except Exception as exc:
            raise S3ReadError(f"cannot read the object ({_s3_cause(exc)})") from None
        self.pos = 0
        self.fetched = 0  # bytes transferred, for tests and benchmarks

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self.pos = {0: 0, 1: self.pos, 2: self.size}[whence] + offset
        return self.pos

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.size - self.pos)
        if n <= 0:
            return 0
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=self.key,
                                      Range=f"bytes={self.pos}-{self.pos + n - 1}")["Body"].read()
        except Exception as exc:
            raise S3ReadError(f"cannot read the object ({_s3_cause(exc)})") from None
        buffer[:len(body)] = body
        self.pos += len(body)
        self.fetched += len(body)
        return len(body)
