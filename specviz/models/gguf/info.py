"""What a GGUF file holds, read from its header alone (and its other parts' headers for a split model): GGUFInfo,
and a file's vocabulary. llama.cpp's names of file types are the `gguf` package's."""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

import gguf

from specviz.errors import ModelError
from specviz.models.gguf.header import TOKENS, Header, read_header, stat_file
from specviz.models.gguf.records import GGUFInfo

KV_BYTES_PER_VALUE = 4  # the llama.cpp runtime keeps its KV cache in float32
SPLIT = re.compile(r"-([0-9]{5})-of-([0-9]{5})\.gguf$", re.IGNORECASE)  # a split model's part: NAME-00001-of-00003.gguf


def read_info(path: str | os.PathLike[str]) -> GGUFInfo:
    """What the GGUF file at `path` holds, from its header (and its other parts' headers for a split model);
    ModelError when it is missing, not a GGUF file or truncated. Cached per (path, mtime, size)."""
    path = Path(path).expanduser()
    stat_file(path)
    return _cached_info(path, _versions(path))


def _versions(path: Path) -> tuple[tuple[int, int] | None, ...]:
    """(mtime, size) of the file and of the other parts its name announces (None: a part is missing)."""
    stats = []
    for part in split_parts(path.name):
        try:
            stat = path.with_name(part).stat()
            stats.append((stat.st_mtime_ns, stat.st_size))
        except OSError:
            stats.append(None)
    return tuple(stats)


@lru_cache(maxsize=256)
def _cached_info(path: Path, _versions: tuple[tuple[int, int] | None, ...]) -> GGUFInfo:
    header = read_header(path)
    parts = [(path, header)] + [(part, read_header(part)) for part in _other_parts(path, header)]
    tensors = [tensor for _part, part_header in parts for tensor in part_header.tensors]
    return _info(path, header, tensors, file_bytes=sum(part.stat().st_size for part, _h in parts))


def _other_parts(path: Path, header: Header) -> list[Path]:
    count = int(header.metadata.get("split.count", 1))
    match = SPLIT.search(path.name)
    if count <= 1 or match is None:
        return []
    stem = path.name[: match.start()]
    parts = [path.with_name(f"{stem}-{index:05d}-of-{count:05d}.gguf") for index in range(2, count + 1)]
    for index, part in enumerate(parts, start=2):
        if not part.is_file():
            raise ModelError(f"{path} is part 1 of {count} of a split model, and part {index} ({part.name}) is missing")
    return parts


def _info(path: Path, header: Header, tensors: list[tuple[str, int, int]], file_bytes: int) -> GGUFInfo:
    md = header.metadata
    arch = md.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise ModelError(f"{path} names no architecture (general.architecture): not a model llama.cpp can run")
    if not header.tokens:
        raise ModelError(f"{path} holds no vocabulary ({TOKENS}): not a language model llama.cpp can run")
    specials = {role: _special(md, header.tokens, role) for role in ("bos", "eos", "padding")}
    return GGUFInfo(
        path=path,
        architecture=arch,
        name=str(md.get("general.name") or path.stem),
        parameters=sum(elements for _name, elements, _kind in tensors),
        read_per_pass=_read_per_pass(tensors),
        quantization=_quantization(md.get("general.file_type"), tensors),
        file_bytes=file_bytes,
        context_length=_int(md.get(f"{arch}.context_length")),
        n_layer=_int(md.get(f"{arch}.block_count")),
        n_embd=_int(md.get(f"{arch}.embedding_length")),
        kv_bytes_per_token=_kv_bytes(md, arch),
        vocab_size=len(header.tokens),
        bos_id=specials["bos"][0],
        bos_text=specials["bos"][1],
        eos_id=specials["eos"][0],
        eos_text=specials["eos"][1],
        pad_id=specials["padding"][0],
        pad_text=specials["padding"][1],
        chat_template=md.get("tokenizer.chat_template"),
        vocab_fingerprint=_fingerprint(header.tokens),
        n_head=_heads(md, arch),
    )


def _read_per_pass(tensors: list[tuple[str, int, int]]) -> int:
    names = {name for name, _elements, _kind in tensors}
    untied = "output.weight" in names  # llama.cpp's name of the output matrix; absent: tied to token_embd
    return sum(elements for name, elements, _kind in tensors if not (untied and name == "token_embd.weight"))


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) else None


def _special(md: dict[str, Any], tokens: list[bytes], role: str) -> tuple[int | None, str | None]:
    token = _int(md.get(f"tokenizer.ggml.{role}_token_id"))
    if token is None or token < 0:  # llama.cpp's -1: no such token
        return None, None
    return token, _text(tokens[token]) if 0 <= token < len(tokens) else None


def _text(token: bytes) -> str:
    return token.decode("utf-8", "backslashreplace")


def _fingerprint(tokens: list[bytes]) -> str:
    # length-prefixed, so that no two different lists hash the same bytes
    digest = hashlib.sha256(len(tokens).to_bytes(8, "little"))
    digest.update(b"".join(len(token).to_bytes(8, "little") + token for token in tokens))
    return digest.hexdigest()


def _quantization(file_type: Any, tensors: list[tuple[str, int, int]]) -> str:
    """llama.cpp's name of the file type; where the file names none (or one unknown here), the tensor type
    holding the most elements."""
    try:
        if isinstance(file_type, int) and file_type != gguf.LlamaFileType.GUESSED:
            return gguf.LlamaFileType(file_type).name.removeprefix("MOSTLY_").removeprefix("ALL_")
    except ValueError:
        pass
    elements: Counter[str] = Counter()
    for _name, count, kind in tensors:
        try:
            elements[gguf.GGMLQuantizationType(kind).name] += count
        except ValueError:
            elements[f"type {kind}"] += count
    return elements.most_common(1)[0][0] if elements else "unknown"


def _heads(md: dict[str, Any], arch: str) -> int | None:
    heads = md.get(f"{arch}.attention.head_count")
    if heads is None:
        return None
    return max(heads) if isinstance(heads, tuple) else int(heads)


def _kv_bytes(md: dict[str, Any], arch: str) -> int | None:
    """Float32 KV cache per position: for every layer, a key and a value vector per KV head
    (2 × n_layer × n_head_kv × head_dim × 4 bytes where keys and values have the same width)."""
    layers, embd = _int(md.get(f"{arch}.block_count")), _int(md.get(f"{arch}.embedding_length"))
    heads = md.get(f"{arch}.attention.head_count")
    kv_heads = md.get(f"{arch}.attention.head_count_kv", heads)
    if layers is None or heads is None or kv_heads is None:
        return None
    head_count = max(heads) if isinstance(heads, tuple) else int(heads)
    head_dim = embd // head_count if embd and head_count else None
    key_dim = _int(md.get(f"{arch}.attention.key_length")) or head_dim
    value_dim = _int(md.get(f"{arch}.attention.value_length")) or head_dim
    if key_dim is None or value_dim is None:
        return None
    per_layer = list(kv_heads) if isinstance(kv_heads, tuple) else [int(kv_heads)] * layers
    return sum(per_layer[:layers]) * (key_dim + value_dim) * KV_BYTES_PER_VALUE


def vocabulary(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The token texts of a GGUF file, in id order. Cached per (path, mtime, size)."""
    path = Path(path).expanduser()
    stat = stat_file(path)
    return _cached_vocabulary(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _cached_vocabulary(path: Path, _mtime_ns: int, _size: int) -> tuple[str, ...]:
    return tuple(_text(token) for token in read_header(path).tokens)


def split_parts(name: str) -> list[str]:
    """A split model's parts, given its first; else the file alone."""
    match = SPLIT.search(name)
    if match is None:
        return [name]
    count, stem = int(match.group(2)), name[: match.start()]
    return [f"{stem}-{index:05d}-of-{count:05d}.gguf" for index in range(1, count + 1)]
