"""One model's loading: the embedded target, a local folder or a Hugging Face hub id, with the size
guard (estimated from the config before any weight loads), the hub check (fails fast offline), and
device and dtype choice. Weights load with trust_remote_code=False and prefer safetensors. Pairing two
models (and the drafts made from a target) is specviz.loading's job, a layer above."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import torch

from specviz import limits
from specviz.errors import ModelError
from specviz.models import embedded
from specviz.models.text import HFCodec

EMBEDDED = "embedded"
HUB_TIMEOUT_S = 3.0


class ModelTooLargeError(ModelError):
    """A model's estimated parameter count exceeds the configured limit."""


class HubUnreachableError(ModelError):
    """A hub id was asked for but the Hugging Face hub cannot be reached."""


def load_model(
    spec: str,
    max_params: int,
    device: torch.device,
    dtype: torch.dtype,
    progress: embedded.Progress | None = None,
) -> tuple[Any, Any]:
    """(model, tokenizer) for "embedded", a local directory or a hub id."""
    from transformers import AutoTokenizer

    source = _resolve_source(spec, progress)
    config = _load_config(source, spec)
    estimate = estimate_parameters(config)
    if estimate > max_params:
        raise ModelTooLargeError(
            f"{spec} has about {estimate / 1e9:.2f} B parameters, over the limit of "
            f"{max_params / 1e9:.2f} B; raise it with {limits.MAX_PARAMS_ENV}={int(estimate * 1.1)} "
            f"(or max_params=...) if this machine has the memory"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False)
        model = _auto_model(source, dtype)
    except (OSError, ValueError, KeyError, ImportError) as exc:
        raise ModelError(f"could not load {spec!r}: {first_line(exc)}") from exc
    return model.to(device).eval(), tokenizer


def _auto_model(source: str, dtype: torch.dtype) -> Any:
    from transformers import AutoModelForCausalLM

    try:
        return AutoModelForCausalLM.from_pretrained(source, trust_remote_code=False, use_safetensors=True, dtype=dtype)
    except OSError:  # no safetensors weights: fall back to PyTorch files
        return AutoModelForCausalLM.from_pretrained(source, trust_remote_code=False, dtype=dtype)


def _resolve_source(spec: str, progress: embedded.Progress | None) -> str:
    if not spec or not spec.strip():
        raise ModelError("no model given: choose a preset, or type a hub id or a local folder")
    spec = spec.strip()
    if spec == EMBEDDED:
        return str(embedded.ensure_cache(progress))
    path = Path(spec).expanduser()
    if path.is_dir():
        _not_a_gguf_folder(path)
        return str(path)
    if path.is_absolute() or spec.startswith((".", "~")) or spec.count("/") > 1:
        raise ModelError(f"no such folder: {spec}")
    if not _is_cached_on_disk(spec):
        _require_hub(spec)
    return spec


def _not_a_gguf_folder(path: Path) -> None:
    """A folder of GGUF files (an LM Studio model's, say) without a transformers config: ModelError naming the file to
    give instead, since llama.cpp runs a file (transformers said only "Should have a `model_type` key")."""
    if (path / "config.json").exists():
        return
    files = sorted(path.glob("*.gguf")) or sorted(path.glob("*/*.gguf"))
    if files:
        names = ", ".join(str(f.relative_to(path)) for f in files[:4]) + (", …" if len(files) > 4 else "")
        raise ModelError(
            f"{path} holds GGUF files, not a transformers model: give the file itself, e.g. {files[0]} "
            f"({len(files)} file{'s' if len(files) != 1 else ''}: {names})"
        )


def load_config(spec: str) -> Any:
    """The transformers config of "embedded", a local folder or a hub id (no weights loaded); ModelError otherwise."""
    return _load_config(_resolve_source(spec, None), spec)


def _load_config(source: str, spec: str) -> Any:
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(source, trust_remote_code=False)
    except (OSError, ValueError, KeyError) as exc:
        raise ModelError(f"{spec!r} is not a model folder or hub id transformers can read: {first_line(exc)}") from exc


def _is_cached_on_disk(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    try:
        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except ValueError:  # not a valid repo id
        return False


def _require_hub(repo_id: str) -> None:
    require_hub(repr(repo_id), "", "choose the embedded pair (works offline) or a local folder")


def require_hub(what: str, missing: str, hint: str) -> None:
    """HubUnreachableError unless the Hugging Face hub can be reached: "cannot download WHAT: why[ and MISSING];
    HINT" (hub switched off by HF_HUB_OFFLINE, or no connection within HUB_TIMEOUT_S)."""
    from huggingface_hub import constants

    also = f" and {missing}" if missing else ""
    if constants.HF_HUB_OFFLINE:
        raise HubUnreachableError(f"cannot download {what}: the hub is switched off (HF_HUB_OFFLINE){also}; {hint}")
    url = urlparse(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=HUB_TIMEOUT_S).close()
    except OSError as exc:
        raise HubUnreachableError(
            f"cannot download {what}: the Hugging Face hub is unreachable ({exc.strerror or exc}){also}; {hint}"
        ) from exc


def estimate_parameters(config: Any) -> int:
    """Parameter count of the architecture, from its config alone (built on the meta device)."""
    from transformers import AutoModelForCausalLM

    try:
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config, trust_remote_code=False)
        return sum(p.numel() for p in model.parameters())
    except (ValueError, KeyError, TypeError, RuntimeError) as exc:
        raise ModelError(f"cannot build a causal LM from this config: {first_line(exc)}") from exc


def codec_for(target: str) -> HFCodec | None:
    """The tokenizer of a target named in a saved trace, where one is at hand with no network: the embedded
    target's, a local model folder's, or a hub id's already in the local cache; else None."""
    from transformers import AutoTokenizer

    if target == embedded.NAME:
        source = str(embedded.ensure_cache())
    elif Path(target).expanduser().is_dir() or _is_cached_on_disk(target):
        source = str(Path(target).expanduser()) if Path(target).expanduser().is_dir() else target
    else:
        return None
    try:
        return HFCodec(AutoTokenizer.from_pretrained(source, trust_remote_code=False), target)
    except (OSError, ValueError, KeyError):
        return None


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as exc:
        raise ModelError(f"unknown device {device!r}: use auto, cpu or cuda") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelError("device cuda was asked for, but no GPU is available here: use auto or cpu")
    return dev


def resolve_dtype(dtype: str, device: str = "auto") -> torch.dtype:
    if dtype == "auto":
        return torch.bfloat16 if resolve_device(device).type == "cuda" else torch.float32
    choices = {name: getattr(torch, name) for name in ("float32", "float16", "bfloat16", "float64")}
    if dtype not in choices:
        raise ModelError(f"unknown dtype {dtype!r}: use auto, {', '.join(choices)}")
    return choices[dtype]


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
