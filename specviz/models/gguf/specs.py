"""What a GGUF spec names ("PATH.gguf", "ollama:NAME[:TAG]", "hf:ORG/REPO:FILE_OR_QUANT") and the local file it
resolves to: the file itself, an Ollama model's blob, or a hub file, cached or downloaded."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from specviz.errors import ModelError
from specviz.models.gguf.header import has_magic, stat_file
from specviz.models.gguf.info import split_parts
from specviz.models.gguf.memory import format_bytes
from specviz.models.gguf.ollama import ollama_name, ollama_ref, resolve_ollama
from specviz.models.gguf.places import hf_snapshot_files, is_model_file
from specviz.models.gguf.records import HF_CACHE, Place
from specviz.models.hub import HubUnreachableError, first_line, require_hub

Progress = Callable[[str], None]

_HF_REF = re.compile(r"^hf:([\w.-]+/[\w.-]+):(.+)$")


def parse_spec(spec: str) -> str | None:
    """The GGUF spec `spec` names, written out whole: a path ending in ".gguf" (~ expanded), a file of any other name
    that begins with GGUF's magic bytes (an Ollama blob `sha256-<hex>`, a GGUF named `.bin`: read by its first four
    bytes, not its suffix), "ollama:NAME:TAG" (TAG "latest" where none is given) or "hf:ORG/REPO:FILE_OR_QUANT";
    None when it names no GGUF file (a hub id, a folder, "embedded"). ModelError for an ollama: or hf: spec that is
    not well formed."""
    text = spec.strip()
    if text.startswith("ollama:"):
        return f"ollama:{ollama_name(*ollama_ref(text.removeprefix('ollama:')))}"
    if text.startswith("hf:"):
        repo, wanted = _hf_ref(text)
        return f"hf:{repo}:{wanted}"
    path = Path(text).expanduser()
    if text.lower().endswith(".gguf") or has_magic(path):
        return str(path)
    return None


def _hf_ref(spec: str) -> tuple[str, str]:
    match = _HF_REF.match(spec)
    if match is None or "--" in match.group(1) or ".." in match.group(1):
        raise ModelError(
            f"{spec!r} is not a GGUF file on the hub: give hf:ORG/REPO:FILE.gguf or hf:ORG/REPO:QUANT, as in "
            "hf:bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M"
        )
    return match.group(1), match.group(2).strip()


def resolve(spec: str, places: Sequence[Place], progress: Progress | None = None) -> Path:
    """The local GGUF file a GGUF spec names: the file itself, an Ollama model's blob, or a hub file, found in
    the Hugging Face caches among `places` or else downloaded into the first of them (with `progress`).
    HubUnreachableError where a hub file is neither cached nor reachable; ModelError for anything else."""
    parsed = parse_spec(spec)
    if parsed is None:
        raise ModelError(
            f"{spec!r} names no GGUF file: give a .gguf file, ollama:NAME[:TAG] or hf:ORG/REPO:FILE_OR_QUANT"
        )
    if parsed.startswith("ollama:"):
        return resolve_ollama(parsed, places)
    if parsed.startswith("hf:"):
        repo, wanted = _hf_ref(parsed)
        return _resolve_hf(repo, wanted, [place.path for place in places if place.source == HF_CACHE], progress)
    path = Path(parsed)
    stat_file(path)
    return path


def _resolve_hf(repo: str, wanted: str, caches: list[Path], progress: Progress | None) -> Path:
    for cache in caches:
        cached = hf_snapshot_files(cache / f"models--{repo.replace('/', '--')}")
        chosen = _choose(repo, wanted, list(cached), where="the Hugging Face cache", missing_ok=True)
        if chosen and all(part in cached for part in split_parts(chosen)):
            return cached[chosen]
    _require_hub(repo, wanted, caches)
    chosen = _choose(repo, wanted, _repo_files(repo), where="the repository", missing_ok=False)
    paths = [_download(repo, part, caches[0] if caches else None, progress) for part in split_parts(chosen)]
    return paths[0]


def _choose(repo: str, wanted: str, files: list[str], where: str, missing_ok: bool) -> str | None:
    """The file of `files` that `wanted` names: that file, or the one model file whose name holds the
    quantization `wanted` (Q4_K_M, q8_0, ...) as a whole word."""
    if wanted.lower().endswith(".gguf"):
        matches = [name for name in files if name == wanted]
    else:
        words = {wanted.lower()}
        matches = [name for name in files if is_model_file(name) and words & set(re.split(r"[-./]", name.lower()))]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise ModelError(f"{wanted!r} names several files in {where} of {repo}: {', '.join(matches)}; name one")
    if missing_ok:
        return None
    offered = [name for name in files if is_model_file(name)]
    raise ModelError(
        f"{repo} has no GGUF file {wanted!r}; it has {', '.join(offered) if offered else 'no GGUF files at all'}"
    )


def _require_hub(repo: str, wanted: str, caches: list[Path]) -> None:
    looked = ", ".join(str(cache) for cache in caches) or "no cache folder given"
    missing = f"{wanted} of {repo} is not in the Hugging Face cache ({looked})"
    require_hub(
        f"hf:{repo}:{wanted}", missing, "choose a GGUF file on this computer, or the embedded pair (works offline)"
    )


def _repo_files(repo: str) -> list[str]:
    from huggingface_hub import list_repo_files

    return _on_hub(repo, lambda: list_repo_files(repo))


def _download(repo: str, filename: str, cache: Path | None, progress: Progress | None) -> Path:
    from huggingface_hub import hf_hub_download

    bar = progress_bar(progress, f"{repo} {filename}") if progress else None
    return Path(_on_hub(repo, lambda: hf_hub_download(repo, filename, cache_dir=cache, tqdm_class=bar)))


def _on_hub(repo: str, call: Callable[[], Any]) -> Any:
    """`call`, with the hub's failures turned into specviz's errors."""
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        return call()
    except GatedRepoError as exc:
        raise ModelError(f"{repo} is gated: accept its terms on huggingface.co and log in (`hf auth login`)") from exc
    except RepositoryNotFoundError as exc:
        raise ModelError(f"no repository {repo} on the Hugging Face hub (or it is private)") from exc
    except Exception as exc:
        # connection failures arrive as OSError or as the HTTP client's own errors (httpx, requests)
        if isinstance(exc, OSError) or type(exc).__module__.split(".")[0] in {"httpx", "httpx2", "requests"}:
            raise HubUnreachableError(f"the download of {repo} failed: {first_line(exc)}") from exc
        raise


def progress_bar(progress: Progress, what: str) -> type:
    """A tqdm class (for huggingface_hub's `tqdm_class`) that tells `progress` how far the download of `what`
    has come, once per whole percent (or per 10 MB where the size is not known), and draws nothing."""
    from tqdm.std import tqdm

    class _Quiet:
        def write(self, _text: str) -> None:
            pass

        def flush(self) -> None:
            pass

    class Bar(tqdm):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.pop("name", None)
            super().__init__(*args, **{**kwargs, "disable": False, "file": _Quiet()})
            self._told: int | None = None

        def update(self, n: float | None = 1) -> bool | None:
            shown = super().update(n)
            done, total = self.n, self.total
            mark = int(100 * done / total) if total else int(done // 10_000_000)
            if mark != self._told:
                self._told = mark
                size = f" of {format_bytes(total)} ({mark} %)" if total else ""
                progress(f"Downloading {what}: {format_bytes(done)}{size}")
            return shown

    return Bar
