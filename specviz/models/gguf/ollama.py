"""Ollama's store: `manifests/HOST/NAMESPACE/NAME/TAG` → `blobs/sha256-HEX`, the model's GGUF file; Ollama's names
completed as Ollama completes them."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from specviz.errors import ModelError
from specviz.models.gguf.records import MAX_FILES, OLLAMA, Entry, Place
from specviz.models.hub import first_line

OLLAMA_REGISTRY = "registry.ollama.ai"
OLLAMA_LIBRARY = "library"
OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"


def ollama_models(root: Path) -> Iterator[Entry]:
    manifests = root / "manifests"
    for manifest in sorted(manifests.glob("*/*/*/*"))[:MAX_FILES]:
        if not manifest.is_file():
            continue
        host, namespace, model, tag = manifest.relative_to(manifests).parts
        name = ollama_name(host, namespace, model, tag)
        try:
            yield f"ollama:{name}", name, _ollama_blob(root, manifest), None
        except ModelError as exc:
            yield f"ollama:{name}", name, manifest, str(exc)


def _ollama_blob(root: Path, manifest: Path) -> Path:
    """The model blob an Ollama manifest names (its layer of media type OLLAMA_MODEL_LAYER)."""
    try:
        layers = json.loads(manifest.read_text())["layers"]
        digest = next(layer["digest"] for layer in layers if layer.get("mediaType") == OLLAMA_MODEL_LAYER)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else first_line(exc)  # not its file's path
        raise ModelError(f"the Ollama manifest {shown(manifest)} cannot be read: {why}") from exc
    except StopIteration:
        raise ModelError(f"the Ollama manifest {shown(manifest)} names no model layer ({OLLAMA_MODEL_LAYER})") from None
    blob = root / "blobs" / str(digest).replace(":", "-")
    if not blob.is_file():
        raise ModelError(
            f"the model blob {blob.name} of the Ollama manifest {shown(manifest)} is missing from {shown(blob.parent)}"
        )
    return blob


def shown(path: Path) -> str:
    """A path as a message shows it: under the home folder as ~/…, so that a message a class server shows its
    students does not name the account it runs as."""
    try:
        home = Path.home()
    except RuntimeError:  # no home folder known
        return str(path)
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) and path != home else str(path)


def ollama_name(host: str, namespace: str, model: str, tag: str) -> str:
    if host != OLLAMA_REGISTRY:
        return f"{host}/{namespace}/{model}:{tag}"
    return f"{model}:{tag}" if namespace == OLLAMA_LIBRARY else f"{namespace}/{model}:{tag}"


def ollama_ref(ref: str) -> tuple[str, str, str, str]:
    """(host, namespace, model, tag) of "[[HOST/]NAMESPACE/]MODEL[:TAG]", as Ollama completes a name."""
    path, _colon, tag = ref.rpartition(":") if ":" in ref.rsplit("/", 1)[-1] else (ref, "", "latest")
    parts = path.split("/")
    if not tag or not all(parts) or len(parts) > 3 or any(c.isspace() for c in ref):
        raise ModelError(f"{ref!r} is not an Ollama model name: give NAME[:TAG], as in ollama:llama3.2:1b")
    host, namespace = OLLAMA_REGISTRY, OLLAMA_LIBRARY
    if len(parts) == 3:
        host, namespace = parts[0], parts[1]
    elif len(parts) == 2:
        namespace = parts[0]
    return host, namespace, parts[-1], tag


def resolve_ollama(name: str, places: Sequence[Place]) -> Path:
    """The GGUF blob of the Ollama model `name` ("NAME[:TAG]", with or without "ollama:") in the Ollama
    stores among `places`; ModelError naming where it looked."""
    ref = name.removeprefix("ollama:")
    host, namespace, model, tag = ollama_ref(ref)
    stores = [place.path for place in places if place.source == OLLAMA]
    for store in stores:
        manifest = store / "manifests" / host / namespace / model / tag
        if manifest.is_file():
            return _ollama_blob(store, manifest)
    looked = ", ".join(shown(store / "manifests" / host / namespace / model / tag) for store in stores)
    raise ModelError(
        f"no Ollama model {ollama_name(host, namespace, model, tag)!r} here: looked for "
        f"{looked or 'an Ollama store, and none is known (set OLLAMA_MODELS)'}; pull it with `ollama pull {ref}`"
    )
