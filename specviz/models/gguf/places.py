"""Where GGUF files lie on this computer, and the models found there: the Hugging Face cache (huggingface_hub's
layout, `models--ORG--NAME/snapshots/REV/...`), LM Studio's models folder (`PUBLISHER/REPO/*.gguf`), Ollama's store
(specviz.models.gguf.ollama) and a folder named by $SPECVIZ_MODELS_DIR. Nothing here reads the environment: it is
handed in."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from specviz.errors import ModelError
from specviz.models.gguf.info import SPLIT, read_info
from specviz.models.gguf.ollama import ollama_models
from specviz.models.gguf.records import (
    FOLDER,
    HF_CACHE,
    LM_STUDIO,
    MAX_DEPTH,
    MAX_FILES,
    MODELS_DIR,
    MODELS_DIR_ENV,
    OLLAMA,
    Entry,
    FoundModel,
    Place,
)


def default_places(env: Mapping[str, str], home: Path, hf_cache: Path | None = None) -> list[Place]:
    """The usual places, as huggingface_hub, LM Studio and Ollama choose them from `env` and `home`: the Hugging
    Face cache ($HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
    ~/.cache/huggingface/hub; `hf_cache` where the caller knows it: huggingface_hub's own setting), LM Studio's two
    models folders, Ollama's store ($OLLAMA_MODELS, else ~/.ollama/models and the Linux service's
    /usr/share/ollama/.ollama/models), and $SPECVIZ_MODELS_DIR. The one place that locates them all."""

    def path(value: str) -> Path:
        return home / value[2:] if value.startswith("~/") else Path(value)

    if hf_cache is not None:
        hf = hf_cache
    elif env.get("HF_HUB_CACHE"):
        hf = path(env["HF_HUB_CACHE"])
    elif env.get("HF_HOME"):
        hf = path(env["HF_HOME"]) / "hub"
    else:
        hf = (path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else home / ".cache") / "huggingface" / "hub"
    places = [Place(source=HF_CACHE, path=hf)]
    places += [Place(source=LM_STUDIO, path=home / ".lmstudio" / "models")]
    places += [Place(source=LM_STUDIO, path=home / ".cache" / "lm-studio" / "models")]
    if env.get("OLLAMA_MODELS"):
        places.append(Place(source=OLLAMA, path=path(env["OLLAMA_MODELS"])))
    else:
        places.append(Place(source=OLLAMA, path=home / ".ollama" / "models"))
        places.append(Place(source=OLLAMA, path=Path("/usr/share/ollama/.ollama/models")))
    if env.get(MODELS_DIR_ENV):
        places.append(Place(source=MODELS_DIR, path=path(env[MODELS_DIR_ENV])))
    return places


def find_models(places: Sequence[Place]) -> list[FoundModel]:
    """Every GGUF model in `places` (folders that do not exist are passed over), each read or with the reason
    it could not be; multimodal projectors (mmproj) and split parts after the first are not models of their own."""
    listers = {
        HF_CACHE: _hf_models,
        LM_STUDIO: _folder_models,
        OLLAMA: ollama_models,
        MODELS_DIR: _folder_models,
        FOLDER: _folder_models,
    }
    found, seen = [], set()
    for place in places:
        if place.path in seen or not place.path.is_dir():
            continue
        seen.add(place.path)
        lister = listers.get(place.source)
        if lister is None:
            raise ModelError(f"unknown kind of place {place.source!r}: use one of {', '.join(listers)}")
        found += [_found(spec, name, place.source, path, error) for spec, name, path, error in lister(place.path)]
    return found


def _found(spec: str, name: str, source: str, path: Path, error: str | None) -> FoundModel:
    if error is None:
        try:
            return FoundModel(spec=spec, name=name, source=source, path=path, info=read_info(path))
        except ModelError as exc:
            error = str(exc)
    return FoundModel(spec=spec, name=name, source=source, path=path, info=None, error=error)


def is_model_file(name: str) -> bool:
    """A .gguf file that is a model of its own: not a multimodal projector, not a split part after the first."""
    split = SPLIT.search(name)
    lower = name.lower()
    return lower.endswith(".gguf") and "mmproj" not in lower and (split is None or int(split.group(1)) == 1)


def _gguf_files(root: Path, depth: int = MAX_DEPTH) -> Iterator[Path]:
    """The model files under `root`, at most `depth` folders down and MAX_FILES in all, in name order."""
    count = 0
    for folder, dirs, files in os.walk(root):
        level = len(Path(folder).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if level < depth else []
        for name in sorted(files):
            if count == MAX_FILES:
                return
            if is_model_file(name):
                count += 1
                yield Path(folder) / name


def _folder_models(root: Path) -> Iterator[Entry]:
    for path in _gguf_files(root):
        relative = path.relative_to(root)
        name = f"{relative.parent.as_posix()} {relative.name}" if relative.parent != Path(".") else relative.name
        yield str(path), name, path, None


def _hf_models(root: Path) -> Iterator[Entry]:
    for repo_dir in sorted(root.glob("models--*")):
        repo = "/".join(repo_dir.name.split("--")[1:])
        for relative, path in sorted(hf_snapshot_files(repo_dir).items()):
            if is_model_file(Path(relative).name):
                yield str(path), f"{repo} {relative}", path, None


def hf_snapshot_files(repo_dir: Path) -> dict[str, Path]:
    """The .gguf files of a cached repo by their path in the repo; where several revisions hold one, the
    revision refs/main names, else the newest."""
    snapshots = repo_dir / "snapshots"
    if not snapshots.is_dir():
        return {}
    try:
        main = (repo_dir / "refs" / "main").read_text().strip()
    except OSError:
        main = ""
    revisions = sorted(
        (r for r in snapshots.iterdir() if r.is_dir()), key=lambda r: (r.name == main, r.stat().st_mtime)
    )
    return {path.relative_to(rev).as_posix(): path for rev in revisions for path in _all_gguf(rev)}


def _all_gguf(root: Path) -> Iterator[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(dirs) if len(Path(folder).relative_to(root).parts) < MAX_DEPTH else []
        yield from (Path(folder) / name for name in sorted(files) if name.lower().endswith(".gguf"))
