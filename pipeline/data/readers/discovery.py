"""Inputs (files, folders, globs, s3:// URIs) to the list of InputFile read, without blocking or looping: FIFOs,
sockets and devices are not opened, symlink loops are not entered, symlinks out of the input root are not followed
unless asked, and a folder that cannot be listed is reported."""
from __future__ import annotations

import fnmatch
import glob
import os
import stat
from pathlib import Path
from typing import Iterator

from pipeline.core.config import PrepareConfig, ReadConfig
from pipeline.core.s3 import list_objects
from pipeline.data.readers.files import InputFile, UnreadableInput, describe, is_data_file, unreadable_file
from pipeline.data.readers.names import NameMap, redact_items, redact_names


def _inside(path: str, root_real: str) -> bool:
    return path == root_real or path.startswith(root_real.rstrip(os.sep) + os.sep)


def _walk(root: str, follow_symlinks: bool) -> Iterator[tuple[str, list[str], str | None]]:
    """(path, path parts below root, problem or None) for each data file under `root`, sorted, without
    recursion. Never blocks and never loops: a folder already visited (a symlink loop, or a second link to
    the same folder) is not entered again; FIFOs, sockets and devices are not opened; a symlink whose
    target is outside `root` is not followed unless `follow_symlinks`; a sub-folder that cannot be listed
    is reported, not skipped silently."""
    root_real = os.path.realpath(root)
    try:
        st = os.stat(root)
    except OSError:
        return
    visited = {(st.st_dev, st.st_ino)}
    stack: list[tuple[str, list[str]]] = [(root, [])]
    while stack:
        folder, parts = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield folder, parts, f"cannot list this folder ({exc.strerror or type(exc).__name__})"
            continue
        subfolders = []
        for entry in entries:
            path, rel = entry.path, parts + [entry.name]
            try:
                is_link = entry.is_symlink()
                if is_link:
                    target = os.path.realpath(path)
                    if not os.path.exists(target):
                        if is_data_file(entry.name):
                            yield path, rel, "broken symlink"
                        continue
                    if not follow_symlinks and not _inside(target, root_real):
                        if is_data_file(entry.name) or os.path.isdir(target):
                            yield path, rel, ("symlink to outside the input folder, not followed "
                                              "(--follow-symlinks reads it)")
                        continue
                st = os.stat(path)  # follows a link that may be followed
            except OSError as exc:
                if is_data_file(entry.name):
                    yield path, rel, exc.strerror or type(exc).__name__
                continue
            if stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) not in visited:
                    visited.add((st.st_dev, st.st_ino))
                    subfolders.append((path, rel))
            elif entry.name.startswith(".") or not is_data_file(entry.name):
                continue
            elif stat.S_ISREG(st.st_mode):
                yield path, rel, None
            else:
                yield path, rel, f"not a regular file ({_file_kind(st.st_mode)})"
        stack.extend(reversed(subfolders))


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device")):
        if test(mode):
            return kind
    return "special file"


def _match_parts(parts: list[str], patterns: list[str]) -> bool:
    """Glob matching by path parts, `**` matching any number of parts (iterative; no regex per pattern)."""
    states = {0}
    for part in parts:
        nxt = set()
        for i in states:
            while i < len(patterns) and patterns[i] == "**":
                nxt.add(i)  # ** eats this part and may eat more
                i += 1
            if i < len(patterns) and patterns[i] != "**" and fnmatch.fnmatchcase(part, patterns[i]):
                nxt.add(i + 1)
        states = nxt
        if not states:
            return False
    for i in states:
        while i < len(patterns) and patterns[i] == "**":
            i += 1
        if i == len(patterns):
            return True
    return False


def _glob_base(pattern: str) -> tuple[str, list[str]]:
    """The folder before the first wildcard part, and the pattern parts after it."""
    parts = pattern.split(os.sep)
    base = []
    for i, part in enumerate(parts):
        if glob.has_magic(part):
            return (os.sep.join(base) or ("." if not pattern.startswith(os.sep) else os.sep)), parts[i:]
        base.append(part)
    return pattern, []


def expand_inputs(inputs: list[str], cfg: PrepareConfig | None = None) -> list[InputFile]:
    """Files, folders (recursive), globs and s3:// URIs (prefixes and globs) to a sorted, de-duplicated
    list. Inputs that are found but must not be read come back with `problem` set (see _walk). With a
    config whose PII step is on, file names that hold personal data are replaced by labels (redact_names)."""
    read = cfg.read if cfg is not None else ReadConfig()
    found: dict[str, InputFile] = {}
    redacting = cfg is not None and cfg.pii.enabled
    if redacting:
        redact_items(inputs, cfg)
    shown = NameMap.of(cfg.out).shown if redacting else (lambda item: item)

    def add_folder(folder: str, prefix: str, keep=None) -> None:
        for path, rel, problem in _walk(folder, read.follow_symlinks):
            if keep is not None and not keep(rel):
                continue
            name = "/".join([prefix, *rel]) if prefix else "/".join(rel)
            found.setdefault(path, unreadable_file(path, name, problem) if problem else describe(path, name))

    for item in inputs:
        if item.startswith("s3://"):
            for uri in list_objects(item):
                if is_data_file(uri):
                    found.setdefault(uri, describe(uri, uri[5:]))
            continue
        if glob.has_magic(item) and "**" in item.split(os.sep):
            # glob.glob's "**" follows symlinks into loops (a link to a parent folder: it never ended)
            base, patterns = _glob_base(item)
            if not os.path.isdir(base):
                raise UnreadableInput(shown(item), "no file matches this pattern")
            before = len(found)
            # a file matches, or sits below a folder that matches (as glob's folders are then walked)
            add_folder(base, "", lambda rel: any(_match_parts(rel[:n], patterns) for n in range(1, len(rel) + 1)))
            if len(found) == before:
                raise UnreadableInput(shown(item), "no file matches this pattern")
            continue
        matches = sorted(glob.glob(item)) if glob.has_magic(item) else [item]
        if not matches:
            raise UnreadableInput(shown(item), "no file matches this pattern")
        root_real = os.path.realpath(_glob_base(item)[0]) if glob.has_magic(item) else None
        for match in matches:
            if os.path.isdir(match):
                add_folder(match, Path(match).name)  # names relative to the folder's parent: "d/sub/a.jsonl"
            elif os.path.lexists(match):
                name = os.path.basename(match)
                if (root_real is not None and os.path.islink(match) and not read.follow_symlinks
                        and not _inside(os.path.realpath(match), root_real)):
                    found.setdefault(match, unreadable_file(match, name, "symlink to outside the input folder, not "
                                                                  "followed (--follow-symlinks reads it)"))
                    continue
                try:
                    st = os.stat(match)
                except OSError as exc:
                    found.setdefault(match, unreadable_file(match, name, exc.strerror or type(exc).__name__))
                    continue
                if not stat.S_ISREG(st.st_mode):  # a FIFO would block the run forever on open()
                    found.setdefault(match, unreadable_file(match, name, f"not a regular file ({_file_kind(st.st_mode)})"))
                else:
                    found.setdefault(match, describe(match, name))
            else:
                raise UnreadableInput(shown(match), "no such file or folder")
    files = list(found.values())
    if redacting:
        files = redact_names(files, cfg)
        names = NameMap.of(cfg.out)
        for f in files:  # a file named on its own: the item is its path, the name its base name
            if f.redacted and f.uri in inputs:
                names.label(f.uri)
    return files
