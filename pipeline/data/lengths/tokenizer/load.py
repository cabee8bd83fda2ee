"""Loading a tokenizer handle for a spec, once per process (load_tokenizer), and the spec's fingerprint read from
the files on disk without loading it (spec_fingerprint)."""
from __future__ import annotations

import os
import threading
from pathlib import Path

from pipeline.data.lengths.tokenizer.cache import default_cache_root
from pipeline.data.lengths.tokenizer.chat_template import DEFAULT_CHAT_TEMPLATE, template_hash
from pipeline.data.lengths.tokenizer.handle import COUNT_METHOD_VERSION, TokenizerHandle, digest
from pipeline.data.lengths.tokenizer.hf_handle import HFHandle
from pipeline.data.lengths.tokenizer.mistral_handle import MistralCommonHandle
from pipeline.data.lengths.tokenizer.resolve import TokenizerSpec, resolve_tokenizer

_FINGERPRINT_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "special_tokens_map.json",
                      "added_tokens.json", "chat_template.jinja", "chat_template.json", "vocab.json", "merges.txt",
                      "spiece.model", "tekken.json")


def _versions(*packages: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for name in packages:
        try:
            out.append(f"{name}={version(name)}")
        except PackageNotFoundError:
            out.append(f"{name}=-")
    return ",".join(out)


def _hash_files(paths: list[Path]) -> str:
    import xxhash

    h = xxhash.xxh3_128()
    for path in paths:
        h.update(path.name.encode() + b"\x00")
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        h.update(b"\x00")
    return h.hexdigest()


def spec_fingerprint(spec: TokenizerSpec, chat_template: str | None = None) -> str | None:
    """A stable fingerprint of what decides the counts, from the files on disk, without loading the tokenizer:
    the tokenizer files, the template override, DEFAULT_CHAT_TEMPLATE, the counting rules and the library
    versions. None for a hub id (then the loaded tokenizer's fingerprint is used)."""
    path = Path(spec.location)
    if spec.kind in ("mistral-32k", "tekken"):
        files = [path]
        libs = _versions("transformers", "tokenizers", "sentencepiece") if spec.kind == "mistral-32k" \
            else _versions("mistral-common", "tiktoken")
    elif path.is_dir():
        files = [path / f for f in _FINGERPRINT_FILES if (path / f).is_file()]
        extra = path / "additional_chat_templates"
        if extra.is_dir():
            files += sorted(p for p in extra.iterdir() if p.is_file())
        libs = _versions("transformers", "tokenizers", "sentencepiece")
    else:
        return None
    if not files:
        return None
    parts = [spec.kind, _hash_files(files), template_hash(chat_template), template_hash(DEFAULT_CHAT_TEMPLATE),
             COUNT_METHOD_VERSION, libs]
    return digest("\x00".join(parts))


_HANDLES: dict[tuple, TokenizerHandle] = {}
_HANDLES_LOCK = threading.Lock()


def load_tokenizer(spec: TokenizerSpec | str | None = None, cache_dir: str | os.PathLike | None = None,
                   chat_template: str | None = None) -> TokenizerHandle:
    """The counting handle for a spec (or a --tokenizer string), loaded once per process."""
    if not isinstance(spec, TokenizerSpec):
        spec = resolve_tokenizer(spec, None)
    key = (spec.kind, spec.location, chat_template, str(default_cache_root(cache_dir)), os.getpid())
    with _HANDLES_LOCK:
        handle = _HANDLES.get(key)
        if handle is None:
            if spec.kind == "tekken":
                if chat_template:
                    raise ValueError("a chat_template override needs a Hugging Face tokenizer; Tekken is encoded "
                                     "by mistral-common")
                handle = MistralCommonHandle(spec)
            else:
                handle = HFHandle(spec, cache_dir, chat_template)
            _HANDLES[key] = handle
        return handle
