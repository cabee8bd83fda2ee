"""prepare's cache folder, and the transformers-loadable folder built there for a SentencePiece model file (how
the offline default, mistral-common's Mistral 32k, is loaded)."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from pipeline.data.lengths.tokenizer.chat_template import DEFAULT_CHAT_TEMPLATE
from pipeline.data.lengths.tokenizer.handle import digest


def default_cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    if cache_dir:
        return Path(cache_dir)
    env = os.environ.get("PREPARE_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "prepare"


def sentencepiece_folder(model_file: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> Path:
    """A transformers-loadable folder for a Llama-style SentencePiece model: the .model file copied as
    tokenizer.model beside a tokenizer_config.json (LlamaTokenizer, BOS added as Mistral-7B does, no EOS,
    DEFAULT_CHAT_TEMPLATE). Built once, atomically (safe with several processes)."""
    model_file = Path(model_file)
    data = model_file.read_bytes()
    config = {
        "tokenizer_class": "LlamaTokenizer",
        "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
        "add_bos_token": True, "add_eos_token": False,
        "legacy": True,
        "model_max_length": 32768,
        "chat_template": DEFAULT_CHAT_TEMPLATE,
    }
    config_text = json.dumps(config, indent=2, ensure_ascii=False)
    key = digest(data + config_text.encode(), 16)
    root = default_cache_root(cache_dir) / "tokenizers"
    folder = root / f"{model_file.name.replace('.', '-')}-{key}"
    if (folder / "tokenizer_config.json").is_file():
        return folder
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    try:
        (tmp / "tokenizer.model").write_bytes(data)
        (tmp / "tokenizer_config.json").write_text(config_text, encoding="utf-8")
        try:
            os.rename(tmp, folder)
        except OSError:
            if not (folder / "tokenizer_config.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return folder
