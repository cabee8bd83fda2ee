"""Which tokenizer counts a run's tokens, and why (`resolve_tokenizer`; the order is pipeline.data.lengths.tokenizer's
docstring): an explicit one, files next to the model config, the model's own from the Hugging Face cache or the Hub,
else the offline default, flagged as approximate (`fallback_warning`). Nothing is loaded here."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.core.models import builtin_aliases, builtin_spec

OFFLINE_DEFAULT = "mistral-32k"
ALIASES = {
    "mistral-32k": "mistral-32k", "mistral": "mistral-32k", "default": "mistral-32k", "mistral-7b": "mistral-32k",
    "tekken": "tekken", "mistral-tekken": "tekken", "tekken-131k": "tekken",
}
_MISTRAL_32K_FILE = "tokenizer.model.v1"
_TEKKEN_FILE = "tekken_240911.json"


@dataclass(frozen=True)
class TokenizerSpec:
    kind: str          # "mistral-32k" | "tekken" | "hf"
    location: str      # file or folder path, or hub id
    name: str          # what the report prints
    source: str        # why: "--tokenizer", "next to the model config ...", "offline default ..."
    local_only: bool = True
    exact: bool = True                  # False: not the model's own tokenizer, counts are approximate
    fallback_reason: str | None = None  # why the model's own tokenizer was not used (one line)

    def summary(self) -> dict:
        """report.json `lengths.tokenizer`."""
        return {"name": self.name, "kind": self.kind, "source": self.source, "exact": self.exact,
                "fallback_reason": self.fallback_reason}


def mistral_common_data_dir() -> Path:
    """mistral_common/data, found without importing mistral_common."""
    from importlib.util import find_spec

    spec = find_spec("mistral_common")
    if spec is None or not spec.origin:
        raise FileNotFoundError("mistral-common is not installed: the offline tokenizers come from it")
    return Path(spec.origin).parent / "data"


_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "spiece.model",
                    "vocab.json", "tekken.json")


def _tokenizer_files_in(folder: Path) -> list[str]:
    return [f for f in _TOKENIZER_FILES if (folder / f).is_file()]


def _spec_for_folder(folder: Path, source: str) -> TokenizerSpec | None:
    files = _tokenizer_files_in(folder)
    if not files:
        return None
    if files == ["tekken.json"]:
        path = str(folder / "tekken.json")
        return TokenizerSpec("tekken", path, f"tekken ({path})", source)
    return TokenizerSpec("hf", str(folder), f"{folder}", source)


# Files a tokenizer is loaded from; what is fetched from the Hub (never weights).
HUB_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "special_tokens_map.json",
                       "added_tokens.json", "chat_template.jinja", "chat_template.json", "vocab.json", "merges.txt",
                       "tekken.json")
HUB_TIMEOUT_S = 5.0
_HUB_FAILED: dict[str, str] = {}  # repo id -> why the fetch failed, once per process


def hf_hub_cache() -> Path:
    """The Hugging Face hub cache, read from the environment at call time (huggingface_hub reads it at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "huggingface"
    return Path(home).expanduser() / "hub"


def _loadable(folder: Path) -> bool:
    return (folder / "tokenizer_config.json").is_file() and any(
        (folder / f).is_file() for f in ("tokenizer.json", "tokenizer.model", "vocab.json", "tekken.json"))


def _hub_cached_folder(repo_id: str) -> Path | None:
    """The cached snapshot folder holding the repo's tokenizer files (revision main), or None."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover
        return None
    try:
        hit = try_to_load_from_cache(repo_id, "tokenizer_config.json", cache_dir=str(hf_hub_cache()))
    except Exception:  # noqa: BLE001 - a malformed id or cache is a miss
        return None
    if isinstance(hit, str) and _loadable(Path(hit).parent):
        return Path(hit).parent
    return None


def _hub_fetch(repo_id: str) -> tuple[Path | None, str]:
    """Tokenizer files of the repo from the Hub into the cache: (folder, "") or (None, why not)."""
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return None, "HF_HUB_OFFLINE is set"
    if repo_id in _HUB_FAILED:
        return None, _HUB_FAILED[repo_id]
    try:
        from huggingface_hub import snapshot_download
    except ImportError:  # pragma: no cover
        return None, "huggingface_hub is not installed"
    try:
        folder = Path(snapshot_download(repo_id, allow_patterns=list(HUB_TOKENIZER_FILES),
                                        cache_dir=str(hf_hub_cache()), etag_timeout=HUB_TIMEOUT_S,
                                        endpoint=os.environ.get("HF_ENDPOINT") or None))
    except Exception as exc:  # noqa: BLE001 - offline, gated, unknown repo: all mean "fall back"
        first = (str(exc).strip().splitlines() or [""])[0][:160]  # the cause; the rest is generic advice
        why = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        _HUB_FAILED[repo_id] = why
        return None, why
    if not _loadable(folder):
        _HUB_FAILED[repo_id] = "the repo has no tokenizer files"
        return None, _HUB_FAILED[repo_id]
    return folder, ""


def model_hub_ids(model: str) -> tuple[str | None, list[str]]:
    """(built-in name or None, hub ids of the model): a built-in name maps to its catalog aliases that are hub
    ids, a hub id maps to itself."""
    spec = builtin_spec(model)
    if spec is not None:
        ids = [a for a in builtin_aliases(spec.name) if _looks_like_hub_id(a)]
        if _looks_like_hub_id(model) and model not in ids:
            ids.insert(0, model)
        return spec.name, ids
    return None, [model] if _looks_like_hub_id(model) else []


def _has_chat_template(folder: Path) -> bool:
    if (folder / "chat_template.jinja").is_file() or (folder / "chat_template.json").is_file():
        return True
    try:
        return bool(json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8")).get("chat_template"))
    except (OSError, ValueError):
        return False


def _model_tokenizer(model: str) -> TokenizerSpec:
    """The model's own tokenizer by hub id: cache, then Hub, then the flagged offline default."""
    builtin, ids = model_hub_ids(model)
    cached = [(repo, folder) for repo in ids if (folder := _hub_cached_folder(repo)) is not None]
    # a repo whose tokenizer carries a chat template first: the base repo of some families has none, and the
    # vocabulary is the same across a model's base and instruct repos
    cached.sort(key=lambda item: not _has_chat_template(item[1]))
    if cached:
        repo, folder = cached[0]
        return TokenizerSpec("hf", str(folder), f"{repo} (local Hugging Face cache)",
                             f"the model's tokenizer ({repo}) in the local Hugging Face cache")
    if builtin == "Mistral-7B":  # the offline default is this model's own tokenizer
        return _default_spec(f"the model's tokenizer ({builtin}: {_MISTRAL_32K_FILE} from mistral-common)")
    why = ""
    for repo in ids:
        folder, why = _hub_fetch(repo)
        if folder is not None:
            return TokenizerSpec("hf", str(folder), f"{repo} (Hugging Face hub)",
                                 f"the model's tokenizer ({repo}), tokenizer files fetched from the Hub")
        if not why.startswith(("GatedRepoError", "RepositoryNotFoundError", "RevisionNotFoundError")):
            break  # not about this repo (no network, offline mode): the other repos cannot be fetched either
    if ids:
        hint = next((i for i in ids if re.search(r"(?i)instruct|chat", i)), ids[0])  # the repo with a template
        reason = (f"the tokenizer of {model} ({ids[0]}) is not in the local Hugging Face cache ({hf_hub_cache()}) "
                  f"and was not fetched from the Hub ({why or 'no hub id'}); "
                  f"`huggingface-cli download {hint} {' '.join(HUB_TOKENIZER_FILES[:2])}` puts it there")
    else:
        reason = f"no hub id is known for {model!r}, so its own tokenizer cannot be found"
    return _default_spec(f"offline default: model {model!r} has no local tokenizer files", fallback=reason)


def _looks_like_hub_id(name: str) -> bool:
    return bool(re.fullmatch(r"[\w.-]+/[\w.-]+", name)) and not name.endswith((".json", ".model"))


def resolve_tokenizer(tokenizer: str | None, model: str | None) -> TokenizerSpec:
    """Which tokenizer the run uses, and why. Does not load anything."""
    if tokenizer:
        alias = ALIASES.get(tokenizer.lower())
        if alias == "mistral-32k":
            return _default_spec("--tokenizer " + tokenizer)
        if alias == "tekken":
            path = str(mistral_common_data_dir() / _TEKKEN_FILE)
            return TokenizerSpec("tekken", path, f"tekken ({_TEKKEN_FILE} from mistral-common, 131k)",
                                 "--tokenizer " + tokenizer)
        path = Path(tokenizer).expanduser()
        if path.is_dir():
            spec = _spec_for_folder(path, "--tokenizer")
            if spec is None:
                raise FileNotFoundError(f"no tokenizer files in {path} (looked for {', '.join(_TOKENIZER_FILES)})")
            return spec
        if path.is_file():
            if path.suffix == ".json" and "tekken" in path.name:
                return TokenizerSpec("tekken", str(path), f"tekken ({path})", "--tokenizer")
            if path.name.startswith("tokenizer.model") or path.suffix == ".model":
                return TokenizerSpec("mistral-32k", str(path), f"sentencepiece {path}", "--tokenizer")
            spec = _spec_for_folder(path.parent, "--tokenizer")
            if spec is None:
                raise FileNotFoundError(f"{path} is not a tokenizer file")
            return spec
        if _looks_like_hub_id(tokenizer):
            return TokenizerSpec("hf", tokenizer, f"{tokenizer} (Hugging Face hub)", "--tokenizer", local_only=False)
        raise FileNotFoundError(f"tokenizer {tokenizer!r}: no such file or folder, and not a hub id or alias "
                                f"({', '.join(sorted(ALIASES))})")
    if model:
        path = Path(model).expanduser()
        folder = path if path.is_dir() else path.parent if path.is_file() else None
        if folder is not None:
            spec = _spec_for_folder(folder, f"next to the model config ({model})")
            if spec is not None:
                return spec
            return _default_spec(f"offline default: no tokenizer files next to {model}",
                                 fallback=f"no tokenizer files next to the model config {model}")
        return _model_tokenizer(model)
    return _default_spec("offline default", fallback="no model given, so its own tokenizer is unknown")


def _default_spec(source: str, fallback: str | None = None) -> TokenizerSpec:
    """The Mistral 32k; `fallback` (why the model's own tokenizer was not used) marks the counts approximate."""
    path = str(mistral_common_data_dir() / _MISTRAL_32K_FILE)
    return TokenizerSpec("mistral-32k", path, f"mistral-32k ({_MISTRAL_32K_FILE} from mistral-common, 32000 tokens)",
                         source, exact=fallback is None,
                         fallback_reason=f"{fallback}; counting with mistral-32k instead" if fallback else None)


def fallback_warning(tokenizer: dict | str | None) -> str | None:
    """The one-line warning every output prints when the counts do not come from the model's own tokenizer
    (`tokenizer` as report.json `lengths.tokenizer` holds it), else None."""
    if not isinstance(tokenizer, dict) or tokenizer.get("exact", True):
        return None
    return ("APPROXIMATE: token counts, the max length and the GPU plan do not use the model's own tokenizer: "
            f"{tokenizer.get('fallback_reason') or 'fallback tokenizer'}. Pass --tokenizer to choose another.")
