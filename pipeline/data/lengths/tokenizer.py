"""The trainer's tokenizer: resolution, offline loading, and exact token counts.

Resolution (`resolve_tokenizer(tokenizer, model)`), first match wins:
  1. an explicit tokenizer (`--tokenizer` / `lengths.tokenizer`): a local folder or file, a Hugging Face hub id,
     or an alias: "mistral-32k" (the offline default) or "tekken" (the 131k Tekken of Mistral NeMo and later);
  2. tokenizer files next to the model config (`model` given as a config file path or a model folder);
  3. the model's own tokenizer by its hub id (a built-in name maps to the hub ids of data/models.json): from
     the local Hugging Face cache (HF_HUB_CACHE / HF_HOME), else fetched from the Hub, tokenizer files only,
     with a short timeout (skipped when HF_HUB_OFFLINE=1);
  4. the offline default: the Mistral 32k SentencePiece (Mistral-7B v0.1) shipped inside mistral-common,
     loaded through transformers from a cache folder holding a copy of it and a tokenizer_config.json with
     DEFAULT_CHAT_TEMPLATE. It is the model's own only for Mistral-7B; for any other model the spec says
     `exact=False` with the reason, and every output flags the counts and the plan as approximate.
The resolved spec carries a display name and the reason it was chosen, for the report.

Counting (what the trainer sees, trl's SFTTrainer conventions):
  * chat / instruction records: the chat template renders the conversation as one string, which is tokenized
    without adding special tokens (the template writes them), exactly like `apply_chat_template(tokenize=True)`.
    Trainable tokens are the tokens overlapping the assistant spans: the template's {% generation %} blocks (the
    same rule as transformers' `return_assistant_tokens_mask`, which trl's `assistant_only_loss` uses); for a
    template without generation blocks each assistant turn spans from the end of the rendered prefix with a
    generation prompt to the end of the rendered prefix including that turn.
  * text records: `text + eos_token` (trl appends the EOS to language-modeling rows) tokenized with the
    tokenizer's own special tokens (BOS where the tokenizer adds one); all tokens are trainable.
  * Tekken (mistral-common, as mistral-finetune encodes): the conversation is encoded in fine-tuning validation
    mode; trainable = assistant message tokens + their EOS; text = BOS + text + EOS.

Chat records are rendered from exactly what the trainer gets back from the shards (`records.template_inputs`:
the messages as written, tool calls in the Hugging Face form with arguments as JSON objects, and the record's
`tools` passed as apply_chat_template(tools=...)), so tool schemas are counted where the template renders them.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from pipeline.core.records import clean_message, template_inputs

COUNT_METHOD_VERSION = "3"  # bump when the counting rules change: old cache entries stop matching

OFFLINE_DEFAULT = "mistral-32k"
ALIASES = {
    "mistral-32k": "mistral-32k", "mistral": "mistral-32k", "default": "mistral-32k", "mistral-7b": "mistral-32k",
    "tekken": "tekken", "mistral-tekken": "tekken", "tekken-131k": "tekken",
}
_MISTRAL_32K_FILE = "tokenizer.model.v1"
_TEKKEN_FILE = "tekken_240911.json"

# The documented default chat template: the Mistral-7B-Instruct v0.1 layout, for tokenizers that have none.
#   <s>[INST] {system}\n\n{user} [/INST]{assistant}</s>[INST] {user} [/INST]{assistant}</s>
# * system messages are joined (each followed by a blank line) and put before the first user message; when an
#   assistant or tool message comes before any user message they get an [INST] ... [/INST] block of their own;
# * tool definitions (apply_chat_template's `tools`): "[AVAILABLE_TOOLS] {tools as JSON} [/AVAILABLE_TOOLS]" after BOS;
# * tool results: "[TOOL_RESULTS] {content} [/TOOL_RESULTS]"; assistant tool calls: "[TOOL_CALLS] " + the tool
#   calls as JSON, after the content; these are plain text for the 32k vocabulary (it has no control tokens);
# * each assistant turn (content, tool calls, EOS) is a {% generation %} block: its tokens are the trainable ones;
# * add_generation_prompt adds nothing: a prompt already ends with "[/INST]".
DEFAULT_CHAT_TEMPLATE = (
    "{{- bos_token }}"
    "{%- if tools %}{{- '[AVAILABLE_TOOLS] ' + (tools | tojson) + ' [/AVAILABLE_TOOLS]' }}{%- endif %}"
    "{%- set ns = namespace(system='', pending=false) %}"
    "{%- for message in messages %}{%- if message['role'] == 'system' %}"
    "{%- set ns.system = ns.system + (message.get('content') or '') + '\\n\\n' %}"
    "{%- endif %}{%- endfor %}"
    "{%- set ns.pending = ns.system != '' %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'user' %}"
    "{{- '[INST] ' + (ns.system if ns.pending else '') + (message.get('content') or '') + ' [/INST]' }}"
    "{%- set ns.pending = false %}"
    "{%- elif message['role'] in ('assistant', 'tool') and ns.pending %}"
    "{{- '[INST] ' + ns.system[:-2] + ' [/INST]' }}"
    "{%- set ns.pending = false %}"
    "{%- endif %}"
    "{%- if message['role'] == 'tool' %}"
    "{{- '[TOOL_RESULTS] ' + (message.get('content') or '') + ' [/TOOL_RESULTS]' }}"
    "{%- elif message['role'] == 'assistant' %}"
    "{%- generation %}"
    "{{- message.get('content') or '' }}"
    "{%- if message.get('tool_calls') %}{{- '[TOOL_CALLS] ' + (message['tool_calls'] | tojson) }}{%- endif %}"
    "{{- eos_token }}"
    "{%- endgeneration %}"
    "{%- endif %}"
    "{%- endfor %}"
)
_GENERATION_RE = re.compile(r"\{%-?\s*generation\s*-?%\}")


def _sha(data: bytes | str, n: int = 32) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=n // 2).hexdigest()


def template_hash(template: str | None) -> str:
    return _sha(template or "", 16)


# ----------------------------------------------------------------------------------------------- resolution

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
    from pipeline.core.models import builtin_aliases, builtin_spec

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


# ------------------------------------------------------------------------------------------------- loading

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
    key = _sha(data + config_text.encode(), 16)
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
    return _sha("\x00".join(parts))


_HANDLES: dict[tuple, "TokenizerHandle"] = {}
_HANDLES_LOCK = threading.Lock()


def load_tokenizer(spec: TokenizerSpec | str | None = None, cache_dir: str | os.PathLike | None = None,
                   chat_template: str | None = None) -> "TokenizerHandle":
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


# ------------------------------------------------------------------------------------------------ messages

def template_messages(messages: list[dict]) -> list[dict]:
    """Record messages as chat templates get them from the shards: as written (records.clean_message), no
    conversion: what is counted is what the trainer renders."""
    return [clean_message(m) for m in messages]


def is_chat(record: dict) -> bool:
    return record.get("kind") in ("chat", "instruction") and bool(record.get("messages"))


# ------------------------------------------------------------------------------------------------- handles

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


# ------------------------------------------------------------------------------------- fast exact counting

def render_default(messages: list[dict], bos: str | None, eos: str | None,
                   tools: list[dict] | None = None) -> tuple[str, list[tuple[int, int]]]:
    """DEFAULT_CHAT_TEMPLATE in plain Python: the same string and the same {% generation %} spans as the Jinja
    rendering (checked by tests/data/test_tokenizer.py), without Jinja's per-call cost. `messages` as
    template_messages gives them."""
    out = [bos or ""]
    if tools:
        out.append("[AVAILABLE_TOOLS] " + json.dumps(tools, ensure_ascii=False) + " [/AVAILABLE_TOOLS]")
    pos = sum(map(len, out))
    system = "".join((m.get("content") or "") + "\n\n" for m in messages if m.get("role") == "system")
    pending = system != ""
    spans = []
    for m in messages:
        role = m.get("role")
        piece = ""
        if role == "user":
            piece = "[INST] " + (system if pending else "") + (m.get("content") or "") + " [/INST]"
            pending = False
        elif role in ("assistant", "tool") and pending:
            piece = "[INST] " + system[:-2] + " [/INST]"
            pending = False
        if role == "tool":
            piece += "[TOOL_RESULTS] " + (m.get("content") or "") + " [/TOOL_RESULTS]"
        if piece:
            out.append(piece)
            pos += len(piece)
        if role == "assistant":
            gen = m.get("content") or ""
            if m.get("tool_calls"):
                gen += "[TOOL_CALLS] " + json.dumps(m["tool_calls"], ensure_ascii=False)
            gen += eos or ""
            spans.append((pos, pos + len(gen)))
            out.append(gen)
            pos += len(gen)
    return "".join(out), spans


_SEG_RE = re.compile("\u2581+[^\u2581]*|[^\u2581]+")
# A run of more characters than this without a space is no prose (a blob, a hash run, an attack): its count may
# be off by one token per LONG_SEGMENT_CHARS, and memory stays that of one piece (SentencePieceCounter)
LONG_SEGMENT_CHARS = 1 << 16
PIECE_WINDOW_CHARS = 1 << 16  # TokenizerHandle.piece_ends


class SentencePieceCounter:
    """Exact token counts for SentencePiece-converted BPE tokenizers (the Mistral/Llama 32k family), without
    running the whole tokenizer pipeline for every record.

    Such a tokenizer replaces spaces with "▁", prepends one "▁" to each text section (between special tokens),
    and runs BPE over the section as a single word. When no vocabulary piece has a "▁" after another character,
    no merge can cross the start of a "▁"-run, so the section's tokens are the concatenation of the BPE of its
    "▁*[^▁]+" segments. Segment counts are memoized (text is Zipfian: most segments repeat), and only the
    segments holding an assistant-span boundary are tokenized with offsets. The constructor refuses any
    tokenizer whose structure differs, and a self-check against the real tokenizer guards the rest."""

    SELF_CHECK = ("", " ", "  ", "Hello world", "  leading spaces", "trailing  ", "a\n\nb", "tab\there",
                  "Привет, мир! Как дела?", "Merhaba dünya, nasılsın? İĞÜŞÖÇ ığüşöç", "emoji 😀🚀 and 中文",
                  "[INST] hi [/INST]yo", "x</s>y  z", "</s>x<s>", "<s></s>", " </s> ", "\u2581word \u2581\u2581x",
                  "<unk>", "a<s>b</s>c<unk>d", "1234567890 3.14159", "ünïcödé\u00a0nbsp", "\u200bzero width")

    def __init__(self, backend):
        d = json.loads(backend.to_str())
        model = d.get("model") or {}
        pre, norm = d.get("pre_tokenizer"), d.get("normalizer")
        if (model.get("type") != "BPE" or model.get("dropout") or model.get("continuing_subword_prefix")
                or model.get("end_of_word_suffix") or model.get("ignore_merges")):
            raise ValueError("not a plain BPE model")
        if (norm is None and isinstance(pre, dict) and pre.get("type") == "Metaspace"
                and pre.get("replacement") == "\u2581" and pre.get("split") is False
                and pre.get("prepend_scheme") in ("always", "first")):
            self.mode = pre["prepend_scheme"]
        elif (pre is None and isinstance(norm, dict) and norm.get("type") == "Sequence"
              and norm.get("normalizers") == [{"type": "Prepend", "prepend": "\u2581"},
                                              {"type": "Replace", "pattern": {"String": " "},
                                               "content": "\u2581"}]):
            self.mode = "normalizer"
        else:
            raise ValueError("not a SentencePiece-style pre-tokenization")
        if any(re.search("[^\u2581]\u2581", piece) for piece in model.get("vocab", {})):
            raise ValueError("a vocabulary piece crosses a word start")
        added = d.get("added_tokens") or []
        if any(t.get("normalized") or t.get("lstrip") or t.get("rstrip") or t.get("single_word") for t in added):
            raise ValueError("added tokens with normalization or stripping")
        contents = sorted({t["content"] for t in added if t.get("content")}, key=len, reverse=True)
        self.special_re = re.compile("|".join(map(re.escape, contents))) if contents else None
        self.backend = backend
        self.model = backend.model
        self.post = len(backend.encode("", add_special_tokens=True)) - len(backend.encode("", add_special_tokens=False))
        self.cache: dict[str, int] = {}         # segment -> tokens
        self.wcache: dict[str, int] = {}        # piece -> tokens of "▁" + piece
        self.offsets_cache: dict[str, list[tuple[int, int]]] = {}
        for text in self.SELF_CHECK:
            for special in (True, False):
                if self.count(text, special) != len(backend.encode(text, add_special_tokens=special)):
                    raise ValueError(f"self-check failed on {text!r}")

    # -- sections and segments
    def _sections(self, text: str):
        pos = 0
        if self.special_re is not None:
            for m in self.special_re.finditer(text):
                if m.start() > pos:
                    yield pos, m.start(), False
                yield m.start(), m.end(), True
                pos = m.end()
        if pos < len(text):
            yield pos, len(text), False

    def _normalized(self, section: str, offset: int) -> tuple[str, int]:
        s = section.replace(" ", "\u2581")
        if self.mode == "normalizer":
            return "\u2581" + s, 1
        if (self.mode == "always" or offset == 0) and not s.startswith("\u2581"):
            return "\u2581" + s, 1
        return s, 0

    def _split(self, text: str) -> list[tuple[int, int, str | None, int]]:
        """[(start, end, None, 0) for a special token | (start, end, normalized text, 1 if "▁" was prepended)]."""
        out = []
        for start, end, special in self._sections(text):
            if special:
                out.append((start, end, None, 0))
            else:
                norm, d = self._normalized(text[start:end], start)
                out.append((start, end, norm, d))
        return out

    def _counts(self, segs: list[str]) -> list[int]:
        try:
            return list(map(self.cache.__getitem__, segs))
        except KeyError:
            return self._filled(self.cache, segs, "")

    def _filled(self, cache: dict, keys: list[str], prefix: str) -> list[int]:
        """Counts of the keys, the ones missing from the memo counted by the BPE model itself (a few
        microseconds each; a batched tokenizer call costs more per short segment)."""
        if len(cache) > 2_000_000:
            cache.clear()
        tokenize, get = self.model.tokenize, cache.get
        out = []
        for key in keys:
            n = get(key)
            if n is None:
                if len(key) > LONG_SEGMENT_CHARS:  # not memoized: such a run does not repeat
                    n = self._long_segment_count(prefix, key)
                else:
                    n = cache[key] = len(tokenize(prefix + key))
            out.append(n)
        return out

    def _long_segment_count(self, prefix: str, key: str) -> int:
        """A segment longer than LONG_SEGMENT_CHARS counted in pieces of that size: BPE over it whole holds
        one Python token object per token (640 MB for an 8M-character word, the largest record the caps
        allow), in pieces it holds one piece's. Within one token per cut of the whole-word count."""
        tokenize, step = self.model.tokenize, LONG_SEGMENT_CHARS
        return len(tokenize(prefix + key[:step])) + sum(len(tokenize(key[i:i + step]))
                                                         for i in range(step, len(key), step))

    def _section_count(self, norm: str) -> int:
        # Fast path: no "▁" run longer than one, so every segment but a leading one is "▁" + a piece of
        # norm.split("▁"); the pieces are the memo keys (no new strings, no regex).
        pieces = norm.split("\u2581")
        head = pieces[0]
        if pieces.count("") == (0 if head else 1):
            words = pieces[1:]
            wcache = self.wcache
            try:
                n = sum(map(wcache.__getitem__, words))
            except KeyError:
                n = sum(self._filled(wcache, words, "\u2581"))
            return n + (sum(self._counts([head])) if head else 0)
        return sum(self._counts(_SEG_RE.findall(norm)))

    def count_batch(self, texts: list[str], add_special_tokens: bool) -> list[int]:
        base = self.post if add_special_tokens else 0
        out = []
        for text in texts:
            n = base
            for _, _, norm, _ in self._split(text):
                n += 1 if norm is None else self._section_count(norm)
            out.append(n)
        return out

    def count(self, text: str, add_special_tokens: bool) -> int:
        return self.count_batch([text], add_special_tokens)[0]

    def count_spans_batch(self, texts: list[str], spans: list[list[tuple[int, int]]]) -> list[tuple[int, int]]:
        return [self.count_spans(t, sp) for t, sp in zip(texts, spans)]

    def count_spans(self, text: str, spans: list[tuple[int, int]]) -> tuple[int, int]:
        """(tokens, tokens overlapping any span): transformers' assistant-mask rule (a token counts when
        token_end > a and token_start < b, in characters of `text`), without special tokens added."""
        total = trainable = 0
        spans = [(a, b) for a, b in spans if b > a]
        for off, end, norm, d in self._split(text):
            touching = [(a, b) for a, b in spans if a < end and b > off]
            if norm is None:
                total += 1
                trainable += 1 if touching else 0
            elif not touching:
                total += self._section_count(norm)
            else:
                n, t = self._section_spans(norm, off, d, touching)
                total += n
                trainable += t
        return total, trainable

    @staticmethod
    def _segment_around(norm: str, p: int) -> tuple[int, int]:
        """[start, end) of the "▁*[^▁]+" segment holding normalized position p."""
        rep = "\u2581"
        q = p
        if norm[q] != rep:
            j = norm.rfind(rep, 0, q)
            q = 0 if j < 0 else j
        while q > 0 and norm[q - 1] == rep:
            q -= 1
        if q == 0 and norm[0] != rep:
            r = norm.find(rep)
        else:
            i = q
            while i < len(norm) and norm[i] == rep:
                i += 1
            r = norm.find(rep, i)
        return q, (len(norm) if r < 0 else r)

    def _section_spans(self, norm: str, off: int, d: int, spans: list[tuple[int, int]]) -> tuple[int, int]:
        """Tokens of one text section and those overlapping the spans. The section is cut at the span
        boundaries: whole segments on either side are counted from the memo; only a segment a boundary falls
        inside is tokenized with offsets."""
        n = len(norm)
        points = {0, n}
        straddled = set()
        for a, b in spans:
            for x in (a, b):
                p = x - off + d
                if 0 < p < n:
                    q, r = self._segment_around(norm, p)
                    if q == p:
                        points.add(p)
                    else:
                        straddled.add((q, r))
                        points.update((q, r))
        cuts = sorted(points)
        total = trainable = 0
        for x, y in zip(cuts, cuts[1:]):
            if (x, y) in straddled:
                seg = norm[x:y]
                total += self._counts([seg])[0]
                trainable += self._overlap(seg, x, off, d, spans)
                continue
            count = self._section_count(norm[x:y])
            total += count
            start, stop = off + max(x - d, 0), off + max(y - d, d)
            if any(a <= start and stop <= b for a, b in spans):
                trainable += count
        return total, trainable

    def _token_chars(self, seg: str) -> list[tuple[int, int]]:
        """Character ranges of the segment's tokens (a byte-fallback token covers its whole character)."""
        got = self.offsets_cache.get(seg)
        if got is None:
            from itertools import accumulate

            floor: list[int] = []             # byte position -> index of the character holding it
            for i, c in enumerate(seg):
                floor.extend([i] * len(c.encode("utf-8")))
            floor.append(len(seg))
            boundary = {0, *accumulate(len(c.encode("utf-8")) for c in seg)}
            got = [(floor[bs], floor[be] + (0 if be in boundary else 1))
                   for bs, be in (t.offsets for t in self.model.tokenize(seg))]
            if len(self.offsets_cache) > 200_000:
                self.offsets_cache.clear()
            self.offsets_cache[seg] = got
        return got

    def _overlap(self, seg: str, seg_start: int, off: int, d: int, spans: list[tuple[int, int]]) -> int:
        """Tokens of one segment overlapping any of the spans, in original characters."""
        n = 0
        for cs, ce in self._token_chars(seg):
            # a prepended "▁" is aligned with the section's first character, as the tokenizer's offsets do
            ts, te = off + max(seg_start + cs - d, 0), off + max(seg_start + ce - d, d)
            if any(te > a and ts < b for a, b in spans):
                n += 1
        return n


class HFHandle(TokenizerHandle):
    def __init__(self, spec: TokenizerSpec, cache_dir=None, chat_template: str | None = None):
        import transformers
        from transformers import AutoTokenizer

        transformers.logging.set_verbosity_error()
        self.spec = spec
        if spec.kind == "mistral-32k":
            location = str(sentencepiece_folder(spec.location, cache_dir))
            local_only = True
        else:
            location = spec.location
            local_only = spec.local_only or os.environ.get("HF_HUB_OFFLINE") == "1"
        self.tokenizer = tok = AutoTokenizer.from_pretrained(location, local_files_only=local_only)
        self.name = spec.name
        own = tok.chat_template if isinstance(tok.chat_template, str) else (
            tok.chat_template.get("default") if isinstance(tok.chat_template, dict) else None)
        self.template_source = ("override" if chat_template else "default" if not own or own == DEFAULT_CHAT_TEMPLATE
                                else "tokenizer")
        self.template = chat_template or own or DEFAULT_CHAT_TEMPLATE
        self.template_hash = template_hash(self.template)
        self.has_generation = bool(_GENERATION_RE.search(self.template))
        self.builtin_template = self.template == DEFAULT_CHAT_TEMPLATE
        self.special = dict(tok.special_tokens_map)
        self.eos = tok.eos_token
        backend = getattr(tok, "backend_tokenizer", None) if getattr(tok, "is_fast", False) else None
        if backend is not None:
            from tokenizers import Tokenizer

            serialized = backend.to_str()
            self.backend = Tokenizer.from_str(serialized)
            self.backend.no_truncation()
            self.backend.no_padding()
            ident = serialized
            try:
                self.fast = SentencePieceCounter(self.backend)
            except ValueError:
                self.fast = None
        else:  # slow tokenizer: per-record calls through transformers
            self.backend = None
            self.fast = None
            ident = json.dumps(sorted(tok.get_vocab().items()), ensure_ascii=False)
        meta = json.dumps({"class": type(tok).__name__, "special": self.special,
                           "add_bos": getattr(tok, "add_bos_token", None),
                           "add_eos": getattr(tok, "add_eos_token", None)}, sort_keys=True, default=str)
        self.fingerprint = _sha(ident + "\x00" + meta + "\x00" + COUNT_METHOD_VERSION)

    # -- rendering
    def render(self, conversations: list[list[dict]], add_generation_prompt: bool = False,
               spans: bool = False, tools: list[dict] | None = None
               ) -> tuple[list[str], list[list[tuple[int, int]]] | None]:
        """What apply_chat_template(conversations, tools=tools, tokenize=False) renders (one tools list for
        the batch, as there)."""
        from transformers.utils.chat_template_utils import render_jinja_template

        rendered, indices = render_jinja_template(
            conversations=conversations, tools=tools, chat_template=self.template,
            return_assistant_tokens_mask=spans, add_generation_prompt=add_generation_prompt, **self.special)
        return rendered, (indices if spans else None)

    def _prompt_before(self, msgs: list[dict], i: int, tools: list[dict] | None = None) -> str:
        """The rendered conversation before message i, with the generation prompt (what precedes an answer)."""
        try:
            (before,), _ = self.render([msgs[:i]], add_generation_prompt=True, tools=tools)
        except Exception:  # noqa: BLE001 - some templates reject an empty conversation
            before = ""
        return before

    def _prefix_spans(self, msgs: list[dict], full: str, tools: list[dict] | None = None
                      ) -> list[tuple[int, int]] | None:
        """Assistant spans for a template without generation blocks; None when the template is not
        prefix-consistent (then counts fall back to token differences)."""
        spans = []
        for i, m in enumerate(msgs):
            if m.get("role") != "assistant":
                continue
            before = self._prompt_before(msgs, i, tools)
            (upto,), _ = self.render([msgs[: i + 1]], tools=tools)
            if not (full.startswith(upto) and upto.startswith(before)):
                return None
            spans.append((len(before), len(upto)))
        return spans

    def _count_tokens(self, texts: list[str], add_special_tokens: bool) -> list[int]:
        if self.fast is not None:
            return self.fast.count_batch(texts, add_special_tokens)
        if self.backend is not None:
            return [len(e) for e in self.backend.encode_batch_fast(texts, add_special_tokens=add_special_tokens)]
        return [len(self.tokenizer(t, add_special_tokens=add_special_tokens)["input_ids"]) for t in texts]

    def _text_inputs(self, records: list[dict]) -> list[str]:
        eos = self.eos
        out = []
        for r in records:
            text = r.get("text") or ""
            if r.get("messages") and not text:
                text = "\n".join(m.get("content") or "" for m in r["messages"])
            if eos and not text.endswith(eos):
                text += eos
            out.append(text)
        return out

    def measure(self, records: list[dict]) -> list[tuple[int, int] | Exception]:
        results: list[Any] = [None] * len(records)
        chat_idx = [i for i, r in enumerate(records) if is_chat(r)]
        text_idx = [i for i, r in enumerate(records) if not is_chat(r)]
        if text_idx:
            counts = self._count_tokens(self._text_inputs([records[i] for i in text_idx]), True)
            for i, n in zip(text_idx, counts):
                results[i] = (n, n)
        if chat_idx:
            convs = [template_inputs(records[i]) for i in chat_idx]   # (messages, tools)
            if self.builtin_template:
                bos, eos = self.special.get("bos_token"), self.special.get("eos_token")
                rendered, spans, ok = [], [], []
                for j, (conv, tools) in enumerate(convs):
                    try:
                        text, sp = render_default(conv, bos, eos, tools)
                    except Exception as exc:  # noqa: BLE001 - e.g. content that is not a string
                        results[chat_idx[j]] = exc
                        continue
                    rendered.append(text)
                    spans.append(sp)
                    ok.append(j)
                for j, n, t in zip(ok, *self._chat_counts(rendered, spans, [convs[j] for j in ok])):
                    results[chat_idx[j]] = (n, t)
                return results
            # apply_chat_template takes one tools list per call: render each group of records with the same
            # tools together (records without tools are one group)
            groups: dict[str, list[int]] = {}
            for j, (_, tools) in enumerate(convs):
                key = json.dumps(tools, ensure_ascii=False) if tools else ""
                groups.setdefault(key, []).append(j)
            done: dict[int, tuple[str, Any]] = {}
            for members in groups.values():
                tools = convs[members[0]][1]
                try:
                    texts, sps = self.render([convs[j][0] for j in members], spans=self.has_generation, tools=tools)
                    for k, j in enumerate(members):
                        done[j] = (texts[k], sps[k] if sps else [])
                except Exception:  # render one by one to isolate the records the template rejects
                    for j in members:
                        try:
                            (text,), sp = self.render([convs[j][0]], spans=self.has_generation, tools=tools)
                        except Exception as exc:  # noqa: BLE001 - reported per record
                            results[chat_idx[j]] = exc
                            continue
                        done[j] = (text, sp[0] if sp else [])
            ok = sorted(done)
            rendered = [done[j][0] for j in ok]
            spans = [done[j][1] for j in ok]
            if not self.has_generation:
                spans = [self._prefix_spans(convs[j][0], text, convs[j][1]) for j, text in zip(ok, rendered)]
            for (j, n, t) in zip(ok, *self._chat_counts(rendered, spans, [convs[j] for j in ok])):
                results[chat_idx[j]] = (n, t)
        return results

    def _chat_counts(self, rendered: list[str], spans: list, convs: list) -> tuple[list[int], list[int]]:
        totals, trainable = [], []
        if self.fast is not None and all(sp is not None for sp in spans):
            for n, t in self.fast.count_spans_batch(rendered, spans):
                totals.append(n)
                trainable.append(t)
            return totals, trainable
        if self.backend is None:
            for text, sp, (conv, tools) in zip(rendered, spans, convs):
                enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=False)
                ids = enc["input_ids"]
                totals.append(len(ids))
                trainable.append(self._slow_trainable(conv, sp, text, tools))
            return totals, trainable
        encs = self.backend.encode_batch(rendered, add_special_tokens=False)
        fallback = []
        for k, (enc, sp, text) in enumerate(zip(encs, spans, rendered)):
            totals.append(len(enc))
            if sp is None:
                trainable.append(0)
                fallback.append(k)
            else:
                trainable.append(sum(_tokens_overlapping(enc, a, b, len(text)) for a, b in sp if b > a))
        for k in fallback:  # template not prefix-consistent: token differences per assistant turn
            trainable[k] = self._diff_trainable(*convs[k])
        return totals, trainable

    def _diff_trainable(self, msgs: list[dict], tools: list[dict] | None = None) -> int:
        total = 0
        for i, m in enumerate(msgs):
            if m.get("role") != "assistant":
                continue
            before = self._prompt_before(msgs, i, tools)
            (upto,), _ = self.render([msgs[: i + 1]], tools=tools)
            a, b = self._count_tokens([before, upto], False)
            total += max(b - a, 0)
        return total

    def _slow_trainable(self, msgs: list[dict], spans, text: str, tools: list[dict] | None = None) -> int:
        if self.has_generation:
            out = self.tokenizer.apply_chat_template(
                msgs, tools=tools, chat_template=self.template, tokenize=True, return_dict=True,
                return_assistant_tokens_mask=True)
            return int(sum(out["assistant_masks"]))
        return self._diff_trainable(msgs, tools)

    def _piece_ends(self, text: str) -> list[int]:
        if not text:
            return []
        if self.backend is not None:
            offsets = self.backend.encode(text, add_special_tokens=False).offsets
        else:  # a slow tokenizer has no offsets: cut at word ends (each cut is measured anyway)
            offsets = [(m.start(), m.end()) for m in re.finditer(r"\S+\s*|\s+", text)]
        ends = sorted({e for _, e in offsets if 0 < e <= len(text)})
        if not ends or ends[-1] != len(text):
            ends.append(len(text))
        return ends


def _tokens_overlapping(enc, a: int, b: int, n_chars: int) -> int:
    """Tokens of `enc` overlapping chars [a, b): the rule of transformers' assistant mask (a token counts when
    token_end > a and token_start < b), computed from char_to_token instead of walking all offsets."""
    j = None  # first token ending after a = first token covering the first covered char >= a
    for c in range(a, min(b, n_chars)):
        j = enc.char_to_token(c)
        if j is not None:
            break
    if j is None:
        return 0
    k = len(enc)  # tokens starting before b
    for c in range(b, n_chars):
        t = enc.char_to_token(c)
        if t is not None:
            k = t + (1 if enc.token_to_chars(t)[0] < b else 0)
            break
    return max(k - j, 0)


class MistralCommonHandle(TokenizerHandle):
    """Tekken through mistral-common in fine-tuning mode (a conversation may end with an assistant turn)."""

    def __init__(self, spec: TokenizerSpec):
        import mistral_common
        from mistral_common.protocol.instruct.validator import ValidationMode
        from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

        self.spec = spec
        self.name = spec.name
        self.mistral = MistralTokenizer.from_file(spec.location, mode=ValidationMode.finetuning)
        self.instruct = self.mistral.instruct_tokenizer
        self.raw = self.instruct.tokenizer
        self.fingerprint = _sha(Path(spec.location).read_bytes() + COUNT_METHOD_VERSION.encode())
        self.template = f"mistral-common {mistral_common.__version__} {type(self.instruct).__name__}"
        self.template_hash = template_hash(self.template)
        self.template_source = "mistral-common"

    def _request(self, messages: list[dict], tools: list[dict] | None = None):
        from mistral_common.protocol.instruct.messages import AssistantMessage, SystemMessage, ToolMessage, UserMessage
        from mistral_common.protocol.instruct.request import ChatCompletionRequest
        from mistral_common.protocol.instruct.tool_calls import Function, FunctionCall, Tool, ToolCall

        out, call_no, pending = [], 0, []
        for m in messages:
            role, content = m.get("role"), m.get("content") or ""
            if role == "system":
                out.append(SystemMessage(content=content))
            elif role == "user":
                out.append(UserMessage(content=content))
            elif role == "assistant":
                calls = []
                for c in m.get("tool_calls") or ():
                    call_no += 1
                    # mistral-common takes 9-alphanumeric ids only (formats generates those where the source
                    # has none); other ids are replaced here, as mistral-finetune's validation would refuse them
                    cid = c.get("id") if re.fullmatch(r"[A-Za-z0-9]{9}", str(c.get("id") or "")) \
                        else f"call{call_no:05d}"
                    pending.append(cid)
                    fn = c.get("function") or c
                    args = fn.get("arguments")
                    calls.append(ToolCall(id=cid, function=FunctionCall(
                        name=fn.get("name") or "",
                        arguments=args if isinstance(args, str) else json.dumps(args or {}, ensure_ascii=False))))
                out.append(AssistantMessage(content=content or None, tool_calls=calls or None))
            elif role == "tool":
                cid = pending.pop(0) if pending else f"call{call_no + 1:05d}"
                out.append(ToolMessage(content=content, tool_call_id=cid, name=m.get("name")))
        defs = None
        if tools:
            defs = [Tool(function=Function(name=t["function"]["name"],
                                           description=t["function"].get("description") or "",
                                           parameters=t["function"].get("parameters") or {}))
                    for t in tools]
        return ChatCompletionRequest(messages=out, tools=defs), out

    def measure(self, records: list[dict]) -> list[tuple[int, int] | Exception]:
        results: list[Any] = []
        for r in records:
            try:
                if is_chat(r):
                    request, msgs = self._request(*template_inputs(r))
                    tokens = self.mistral.encode_chat_completion(request).tokens
                    last_user = max((i for i, m in enumerate(msgs) if m.role == "user"), default=-1)
                    trainable = 0
                    for i, m in enumerate(msgs):
                        if m.role == "assistant":
                            trainable += len(self.instruct.encode_assistant_message(m, i < last_user))  # incl. its EOS
                    results.append((len(tokens), min(trainable, len(tokens))))
                else:
                    text = r.get("text") or ""
                    n = len(self.raw.encode(text, bos=True, eos=True))
                    results.append((n, n))
            except Exception as exc:  # noqa: BLE001
                results.append(exc)
        return results

    def _piece_ends(self, text: str) -> list[int]:
        import codecs

        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        ends, pos = [], 0
        for i in self.raw.encode(text, bos=False, eos=False):
            pos += len(decoder.decode(self.raw.id_to_byte_piece(i)))
            ends.append(min(pos, len(text)))
        ends = sorted({e for e in ends if e > 0})
        if not ends or ends[-1] != len(text):
            ends.append(len(text))
        return ends
