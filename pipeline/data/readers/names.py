"""File names are data: a name holding personal data is replaced by a label, and the map from labels back to
the real names is kept only locally, beside the run directory (names_file)."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path

from pipeline.core.config import PrepareConfig
from pipeline.data.readers.files import COMPRESSIONS, InputFile, printable_name

NAMES_SUFFIX = ".file-names.local"
TITLE_CASE_SCORE = 0.7
_SEPARATORS = str.maketrans({c: " " for c in "_-./\\+,;=()[]{}"})


def names_file(out: str) -> Path:
    """The local-only map of labels to real names (JSON): beside the run directory (RUN.file-names.local,
    mode 0600), never inside it, so neither the upload nor a copy of the run directory carries it."""
    run = Path(os.path.abspath(out or "."))
    return run.with_name(run.name + NAMES_SUFFIX)


def _compound_ext(name: str) -> str:
    base = os.path.basename(name).lower()
    ext = ""
    for comp in COMPRESSIONS:
        if base.endswith(comp):
            base, ext = base[: -len(comp)], comp
            break
    return os.path.splitext(base)[1] + ext


def name_holds_pii(name: str, cfg: PrepareConfig) -> bool:
    """The PII engine's verdict on a relative file name, read as text: as written, with separators as
    spaces ("musteri_27384619550" is one word otherwise) and capitalized (names in file names are
    usually lower-case)."""
    from pipeline.data.pii.engine import get_detector, resolve  # Presidio: loaded only to check a file name

    stem = name[: -len(_compound_ext(name))] if _compound_ext(name) else name
    spaced = " ".join(stem.translate(_SEPARATORS).split())
    languages = tuple(cfg.pii.languages) or ("tr", "ru", "en")
    variants = [(stem, cfg.pii.score_threshold), (spaced, cfg.pii.score_threshold),
                # capitalized, every word looks like a name: one guessed surname scores 0.6 ("Customer Data",
                # "Quarantine Mine"); a first and last name 0.75-0.9 ("Ivan Petrov", "Ahmet Yilmaz")
                (spaced.title(), max(cfg.pii.score_threshold, TITLE_CASE_SCORE))]
    items = [(v, lang) for v, _ in variants for lang in languages]
    thresholds = [t for _, t in variants for _ in languages]
    for hits, threshold in zip(get_detector(languages).detect(items), thresholds):
        kept, _ = resolve(hits, threshold)
        if kept:
            return True
    return False


class NameMap:
    """Labels for names that hold personal data, per run directory: "redacted-<8 hex>.<ext>", a keyed hash
    (blake2b) stable for the run directory; the key and the map from labels back to the real names live only
    in names_file(out), so a resumed run gives the same labels.

    Built while the inputs are expanded, before the run takes the run directory's lock; written (save())
    only once the lock is held: a run refused as busy, or stopped by an unreadable input, leaves the map of
    the run that holds the folder as it is. One instance per map file in a process (of()), so the
    preflight's warnings, the report and the manifest of one run name a file by the same label."""

    _open: dict[Path, NameMap] = {}

    def __init__(self, path: Path):
        self.path = path
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            self.key, self.names = bytes.fromhex(saved["key"]), dict(saved["names"])
        except (OSError, ValueError, KeyError, TypeError):
            self.key, self.names = os.urandom(16), {}
        self.dirty = False

    @classmethod
    def of(cls, out: str) -> NameMap:
        path = names_file(out)
        if path not in cls._open:
            cls._open[path] = cls(path)
        return cls._open[path]

    def label(self, name: str) -> str:
        digest = hashlib.blake2b(name.encode("utf-8", "surrogatepass"), key=self.key, digest_size=4).hexdigest()
        label = f"redacted-{digest}{_compound_ext(name)}"
        if self.names.get(label) != name:
            self.names[label] = name
            self.dirty = True
        return label

    def shown(self, item: str) -> str:
        """An input as given (a path, a glob, an s3:// URI), or its label when it holds personal data."""
        for label, name in self.names.items():
            if name == item:
                return label
        return item

    def save(self) -> None:
        # nothing to map: no file; deleted since it was read: a long-lived process (prepare serve) writes it again
        if not self.names or (not self.dirty and self.path.exists()):
            return
        try:  # labels another run wrote since this map was read stay resolvable
            on_disk = dict(json.loads(self.path.read_text(encoding="utf-8"))["names"])
        except (OSError, ValueError, KeyError, TypeError):
            on_disk = {}
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"key": self.key.hex(), "names": {**on_disk, **self.names}}, fh, ensure_ascii=False, indent=1)
        os.replace(tmp, self.path)
        self.dirty = False


def save_names(out: str) -> None:
    """Write the map of this run's labels (call it with the run directory's lock held)."""
    path = names_file(out)
    if path in NameMap._open:
        NameMap._open[path].save()


def shown_config(config: dict, out: str) -> dict:
    """A dumped PrepareConfig with every input that holds personal data as its label (the manifest's copy):
    a file named on the command line kept its real name in `inputs` (eval sets: decontam.eval_sets). Paths are
    printable (printable_name)."""
    names = NameMap.of(out)

    def shown(items: list[str] | None) -> list[str]:
        return [printable_name(names.shown(item)) for item in items or []]

    decontam = config.get("decontam") or {}
    return {**config, "out": printable_name(config.get("out") or ""),
            **{key: shown(config.get(key)) for key in ("inputs", "validation_inputs")},
            **({"decontam": {**decontam, "eval_sets": shown(decontam.get("eval_sets"))}} if decontam else {})}


def redact_items(items: list[str], cfg: PrepareConfig) -> None:
    """Give a label to each input as written (a file or folder named on the command line, a glob, an
    s3:// URI) in which the PII engine finds anything: config.inputs goes to the manifest."""
    names = NameMap.of(cfg.out)
    for item in items:
        if item not in names.names.values() and name_holds_pii(item[5:] if item.startswith("s3://") else item, cfg):
            names.label(item)


def redact_names(files: list[InputFile], cfg: PrepareConfig) -> list[InputFile]:
    """Input names are written to records (source.file), quarantine files, report.json/md, --json output,
    Prefect artifacts and task-run names. A name in which the PII engine finds anything becomes its label
    (NameMap); the map is written by save_names once the run holds its run directory."""
    flagged = [f for f in files if not f.redacted and name_holds_pii(f.name, cfg)]
    if not flagged:
        return files
    names = NameMap.of(cfg.out)
    labels = {f.uri: names.label(f.name) for f in flagged}
    return [replace(f, name=labels[f.uri], redacted=True) if f.uri in labels else f for f in files]
