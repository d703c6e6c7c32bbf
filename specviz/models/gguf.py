"""GGUF model files as models: what a file holds (read from its header alone), whether two files pair as
target and draft, the memory a pair needs, where GGUF files lie on this computer, and what a GGUF spec names.

The format is ggml's own GGUF specification. The header (key–value metadata, then one record per tensor) is parsed
here with `struct` over a memory map rather than through `gguf.GGUFReader`, which builds a numpy view of every array
element and takes seconds over a large vocabulary and its merges; the constants (value types, quantization block
sizes, llama.cpp's file types) are the `gguf` package's. A pair is checked before anything heavy loads, as
llama.cpp's `llama-speculative` and LM Studio's draft picker check it: the same vocabulary, the same special tokens,
and here the same chat template.

Places: the Hugging Face cache (huggingface_hub's layout, `models--ORG--NAME/snapshots/REV/...`), LM Studio's
models folder (`PUBLISHER/REPO/*.gguf`), Ollama's store (`manifests/HOST/NAMESPACE/NAME/TAG` → `blobs/sha256-HEX`)
and a folder named by $SPECVIZ_MODELS_DIR. Nothing here reads the environment: it is handed in.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
import struct
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import gguf

from specviz.errors import ConfigError, IncompatibleModelsError, ModelError
from specviz.models.hub import HubUnreachableError, ModelTooLargeError, first_line, require_hub

Progress = Callable[[str], None]

HF_CACHE = "Hugging Face cache"
LM_STUDIO = "LM Studio"
OLLAMA = "Ollama"
MODELS_DIR_ENV = "SPECVIZ_MODELS_DIR"
MODELS_DIR = f"${MODELS_DIR_ENV}"
FOLDER = "folder"  # any other folder of GGUF files, listed as $SPECVIZ_MODELS_DIR is (a class's, specviz's cache)
DEFAULT_TOKENS = 2048  # positions of KV cache a session holds: specviz.models.llamacpp.DEFAULT_CONTEXT
KV_BYTES_PER_VALUE = 4  # the llama.cpp runtime keeps its KV cache in float32
MAX_DEPTH = 4  # folders below a place that discovery descends
MAX_FILES = 500  # GGUF files listed per place
OLLAMA_REGISTRY = "registry.ollama.ai"
OLLAMA_LIBRARY = "library"
OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
SHOWN_DIFFERENCES = 4  # differences an IncompatibleModelsError names

_SPLIT = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)
_HF_REF = re.compile(r"^hf:([\w.-]+/[\w.-]+):(.+)$")
_SCALARS = {
    gguf.GGUFValueType.UINT8: "B",
    gguf.GGUFValueType.INT8: "b",
    gguf.GGUFValueType.UINT16: "H",
    gguf.GGUFValueType.INT16: "h",
    gguf.GGUFValueType.UINT32: "I",
    gguf.GGUFValueType.INT32: "i",
    gguf.GGUFValueType.FLOAT32: "f",
    gguf.GGUFValueType.BOOL: "?",
    gguf.GGUFValueType.UINT64: "Q",
    gguf.GGUFValueType.INT64: "q",
    gguf.GGUFValueType.FLOAT64: "d",
}
_KEPT_ARRAY = 4096  # longer arrays (merges, token types, scores) are skipped, not read; the vocabulary is read whole
_TOKENS = "tokenizer.ggml.tokens"


class NotEnoughMemoryError(ModelTooLargeError):
    """A pair of models needs more memory than this machine has free."""


@dataclass(frozen=True, kw_only=True)
class GGUFInfo:
    """What a GGUF file's header says about its model; no tensor is read."""

    path: Path  # the file (for a split model: its first part)
    architecture: str  # general.architecture: "llama", "qwen2", ...
    name: str  # general.name, else the file's stem
    parameters: int  # elements of every tensor (every part of a split model)
    read_per_pass: int  # elements one decoding pass reads: all but the input embedding table where the file has its
    # own output matrix (a pass reads k rows of that table); where the two are tied, the table once
    quantization: str  # llama.cpp's name of the file type: "F32", "Q8_0", "Q4_K_M", ...
    file_bytes: int  # size on disk (every part), the memory its weights take mapped
    context_length: int | None  # positions it was trained for
    n_layer: int | None  # transformer blocks
    n_embd: int | None  # hidden size
    kv_bytes_per_token: int | None  # float32 KV cache per position: keys and values of every KV head and layer
    vocab_size: int  # tokens in its vocabulary
    bos_id: int | None  # beginning-of-sequence token
    bos_text: str | None
    eos_id: int | None  # end-of-sequence token
    eos_text: str | None
    pad_id: int | None  # padding token
    pad_text: str | None
    chat_template: str | None  # the Jinja template of tokenizer.chat_template
    vocab_fingerprint: str  # SHA-256 of the token list (texts in id order): equal lists, equal fingerprints


@dataclass(frozen=True, kw_only=True)
class Place:
    """A folder where GGUF files may lie, and how it is laid out."""

    source: str  # HF_CACHE, LM_STUDIO, OLLAMA or MODELS_DIR
    path: Path


@dataclass(frozen=True, kw_only=True)
class FoundModel:
    """A GGUF file found on this computer, read or not."""

    spec: str  # what load code is given: the file's path, or "ollama:NAME:TAG"
    name: str  # as the user knows it: "ORG/REPO FILE", "PUBLISHER/REPO FILE", "NAME:TAG", a relative path
    source: str  # where it was found: HF_CACHE, LM_STUDIO, OLLAMA or MODELS_DIR
    path: Path  # the GGUF file (an Ollama blob for Ollama models)
    info: GGUFInfo | None  # None when the file could not be read
    error: str | None = None  # why not


# --- the header ----------------------------------------------------------------------------------------------


class _Truncated(Exception):
    pass


@dataclass(frozen=True)
class _Header:
    metadata: dict[str, Any]  # scalars, strings, and arrays up to _KEPT_ARRAY long
    tokens: list[bytes]  # the vocabulary, in id order
    tensors: list[tuple[str, int, int]]  # (name, elements, GGML type)
    data_end: int  # where the last tensor's data ends: the least size of a whole file


class _Cursor:
    """Reads GGUF values from a buffer, moving forward; running past its end raises _Truncated."""

    def __init__(self, buf: mmap.mmap, at: int, endian: str) -> None:
        self.buf, self.at, self.endian, self.size = buf, at, endian, len(buf)

    def scalar(self, code: str) -> Any:
        fmt = struct.Struct(self.endian + code)
        if self.at + fmt.size > self.size:
            raise _Truncated
        (value,) = fmt.unpack_from(self.buf, self.at)
        self.at += fmt.size
        return value

    def string(self) -> bytes:
        n = self.scalar("Q")
        if self.at + n > self.size:
            raise _Truncated
        self.at += n
        return self.buf[self.at - n : self.at]

    def value(self, kind: int, keep: bool = False) -> Any:
        if kind == gguf.GGUFValueType.STRING:
            return self.string().decode("utf-8", "replace")
        if kind == gguf.GGUFValueType.ARRAY:
            return self.array(keep)
        if kind not in _SCALARS:
            raise ModelError(f"unknown GGUF value type {kind}")
        return self.scalar(_SCALARS[kind])

    def array(self, keep: bool) -> Any:
        kind, count = self.scalar("I"), self.scalar("Q")
        keep = keep or count <= _KEPT_ARRAY
        if kind == gguf.GGUFValueType.STRING:
            return self.strings(count, keep)
        if kind in _SCALARS:
            fmt = struct.Struct(f"{self.endian}{count}{_SCALARS[kind]}")
            if self.at + fmt.size > self.size:
                raise _Truncated
            values = fmt.unpack_from(self.buf, self.at) if keep else None
            self.at += fmt.size
            return values
        return tuple(self.value(kind) for _ in range(count))  # arrays of arrays: rare and short

    def strings(self, count: int, keep: bool) -> list[bytes] | None:
        # the hot loop of a header: 150k tokens and as many merges; kept tight
        buf, at, unpack = self.buf, self.at, struct.Struct(self.endian + "Q").unpack_from
        out: list[bytes] = []
        try:
            for _ in range(count):
                n = unpack(buf, at)[0]
                at += 8 + n
                if keep:
                    out.append(buf[at - n : at])
        except struct.error:
            raise _Truncated from None
        if at > self.size:
            raise _Truncated
        self.at = at
        return out if keep else None


def _parse(buf: mmap.mmap, path: Path) -> _Header:
    magic = buf[:4]
    if magic != b"GGUF":
        raise ModelError(f"{path} is not a GGUF file: it begins with {magic!r}, not b'GGUF'")
    endian = _endian(buf, path)
    cursor = _Cursor(buf, 4, endian)
    cursor.scalar("I")  # the version, checked by _endian
    n_tensors, n_keys = cursor.scalar("Q"), cursor.scalar("Q")
    metadata: dict[str, Any] = {}
    tokens: list[bytes] = []
    for _ in range(n_keys):
        key = cursor.string().decode("utf-8", "replace")
        value = cursor.value(cursor.scalar("I"), keep=key == _TOKENS)
        if key == _TOKENS:
            tokens = value if isinstance(value, list) else []
        elif value is not None:
            metadata[key] = value
    tensors, data_end = _tensors(cursor, n_tensors, int(metadata.get("general.alignment", 32)))
    return _Header(metadata=metadata, tokens=tokens, tensors=tensors, data_end=data_end)


def _endian(buf: mmap.mmap, path: Path) -> str:
    if len(buf) < 8:
        raise _Truncated
    little, big = struct.unpack_from("<I", buf, 4)[0], struct.unpack_from(">I", buf, 4)[0]
    endian, version = ("<", little) if little < 0x10000 else (">", big)
    if version == 1:
        raise ModelError(f"{path} is a GGUF file of version 1 (2023), which is not read here: convert it again")
    if version not in (2, 3):
        raise ModelError(f"{path} is a GGUF file of version {version}, which this reader does not know")
    return endian


def _tensors(cursor: _Cursor, count: int, alignment: int) -> tuple[list[tuple[str, int, int]], int]:
    tensors, data_size = [], 0
    for _ in range(count):
        name = cursor.string().decode("utf-8", "replace")
        dims = [cursor.scalar("Q") for _ in range(cursor.scalar("I"))]
        kind, offset = cursor.scalar("I"), cursor.scalar("Q")
        elements = 1
        for dim in dims:
            elements *= dim
        tensors.append((name, elements, kind))
        data_size = max(data_size, offset + _tensor_bytes(kind, elements))
    start = -(-cursor.at // alignment) * alignment
    return tensors, start + data_size


def _tensor_bytes(kind: int, elements: int) -> int:
    try:
        block, size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(kind)]
    except (ValueError, KeyError):  # a type newer than the gguf package: its size is not known here
        return 0
    return elements // block * size


def _stat(path: Path) -> os.stat_result:
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise ModelError(f"no such GGUF file: {path}") from None
    except OSError as exc:
        raise ModelError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if path.is_dir():
        raise ModelError(f"{path} is a folder, not a GGUF file")
    return stat


def _read_header(path: Path) -> _Header:
    size = _stat(path).st_size
    if size == 0:
        raise ModelError(f"{path} is empty, not a GGUF file")
    try:
        with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            header = _parse(buf, path)
    except _Truncated:
        raise ModelError(
            f"{path} is truncated: its header runs past the end of the file ({size:,} bytes; an interrupted download?)"
        ) from None
    except OSError as exc:
        raise ModelError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if header.data_end > size:
        raise ModelError(
            f"{path} is truncated: its tensors end at byte {header.data_end:,}, the file holds {size:,} "
            "(an interrupted download?)"
        )
    return header


# --- what a file holds ---------------------------------------------------------------------------------------


def read_info(path: str | os.PathLike[str]) -> GGUFInfo:
    """What the GGUF file at `path` holds, from its header (and its other parts' headers for a split model);
    ModelError when it is missing, not a GGUF file or truncated. Cached per (path, mtime, size)."""
    path = Path(path).expanduser()
    _stat(path)
    return _cached_info(path, _versions(path))


def _versions(path: Path) -> tuple[tuple[int, int] | None, ...]:
    """(mtime, size) of the file and of the other parts its name announces (None: a part is missing)."""
    stats = []
    for part in _parts(path.name):
        try:
            stat = path.with_name(part).stat()
            stats.append((stat.st_mtime_ns, stat.st_size))
        except OSError:
            stats.append(None)
    return tuple(stats)


@lru_cache(maxsize=256)
def _cached_info(path: Path, _versions: tuple[tuple[int, int] | None, ...]) -> GGUFInfo:
    header = _read_header(path)
    parts = [(path, header)] + [(part, _read_header(part)) for part in _other_parts(path, header)]
    tensors = [tensor for _part, part_header in parts for tensor in part_header.tensors]
    return _info(path, header, tensors, file_bytes=sum(part.stat().st_size for part, _h in parts))


def _other_parts(path: Path, header: _Header) -> list[Path]:
    count = int(header.metadata.get("split.count", 1))
    match = _SPLIT.search(path.name)
    if count <= 1 or match is None:
        return []
    stem = path.name[: match.start()]
    parts = [path.with_name(f"{stem}-{index:05d}-of-{count:05d}.gguf") for index in range(2, count + 1)]
    for index, part in enumerate(parts, start=2):
        if not part.is_file():
            raise ModelError(f"{path} is part 1 of {count} of a split model, and part {index} ({part.name}) is missing")
    return parts


def _info(path: Path, header: _Header, tensors: list[tuple[str, int, int]], file_bytes: int) -> GGUFInfo:
    md = header.metadata
    arch = md.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise ModelError(f"{path} names no architecture (general.architecture): not a model llama.cpp can run")
    if not header.tokens:
        raise ModelError(f"{path} holds no vocabulary ({_TOKENS}): not a language model llama.cpp can run")
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
    stat = _stat(path)
    return _cached_vocabulary(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _cached_vocabulary(path: Path, _mtime_ns: int, _size: int) -> tuple[str, ...]:
    return tuple(_text(token) for token in _read_header(path).tokens)


# --- pairing -------------------------------------------------------------------------------------------------


def check_pair(target: GGUFInfo, draft: GGUFInfo) -> None:
    """Raise IncompatibleModelsError naming the first differences unless `draft` can draft for `target`: the
    same vocabulary (size, and every token's text at its id), the same BOS, EOS and padding tokens, and the
    same chat template."""
    differences = pair_differences(target, draft)
    if differences:
        shown = "; ".join(differences[:SHOWN_DIFFERENCES])
        more = len(differences) - SHOWN_DIFFERENCES
        raise IncompatibleModelsError(
            f"{draft.name} ({draft.path.name}) cannot draft for {target.name} ({target.path.name}): {shown}"
            + (f"; and {more} more" if more > 0 else "")
        )


def can_pair(target: GGUFInfo, draft: GGUFInfo) -> bool:
    """True when check_pair passes; reads nothing."""
    return (
        target.vocab_fingerprint == draft.vocab_fingerprint
        and _specials(target) == _specials(draft)
        and target.chat_template == draft.chat_template
    )


def pair_differences(target: GGUFInfo, draft: GGUFInfo) -> list[str]:
    """What keeps `draft` from drafting for `target`, in words, most telling first (empty: they pair). The
    token lists are read (cached) only where the fingerprints differ."""
    differences = []
    if target.vocab_size != draft.vocab_size:
        differences.append(f"vocabulary: {target.vocab_size} tokens in the target, {draft.vocab_size} in the draft")
    if target.vocab_fingerprint != draft.vocab_fingerprint:
        differences += _token_differences(target, draft)
    for role, mine, theirs in zip(("BOS", "EOS", "padding"), _specials(target), _specials(draft), strict=True):
        if mine != theirs:
            differences.append(f"{role}: {_describe(mine)} in the target, {_describe(theirs)} in the draft")
    if target.chat_template != draft.chat_template:
        differences.append(_template_difference(target.chat_template, draft.chat_template))
    return differences


def _specials(info: GGUFInfo) -> tuple[tuple[int | None, str | None], ...]:
    return (info.bos_id, info.bos_text), (info.eos_id, info.eos_text), (info.pad_id, info.pad_text)


def _describe(special: tuple[int | None, str | None]) -> str:
    token, text = special
    if token is None:
        return "none"
    return f"id {token} {text!r}" if text is not None else f"id {token} (past the end of the vocabulary)"


def _token_differences(target: GGUFInfo, draft: GGUFInfo, shown: int = 3) -> list[str]:
    mine, theirs = vocabulary(target.path), vocabulary(draft.path)
    differing = [i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b]
    differing += range(min(len(mine), len(theirs)), max(len(mine), len(theirs)))
    if not differing:  # a file changed since its info was read
        return ["vocabulary: the token lists' fingerprints differ"]
    words = [f"token {i}: {_token(mine, i)} in the target, {_token(theirs, i)} in the draft" for i in differing[:shown]]
    if len(differing) > shown:
        words.append(f"{len(differing) - shown} more tokens differ")
    return words


def _token(tokens: tuple[str, ...], index: int) -> str:
    return repr(tokens[index]) if index < len(tokens) else "absent"


def _template_difference(mine: str | None, theirs: str | None) -> str:
    if mine is None or theirs is None:
        has = {True: "none", False: "one"}
        return f"chat template: {has[mine is None]} in the target, {has[theirs is None]} in the draft"
    at = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), min(len(mine), len(theirs)))
    return (
        f"chat template: differs from character {at}: {mine[at : at + 24]!r} in the target, "
        f"{theirs[at : at + 24]!r} in the draft"
    )


def compatible_drafts(target: FoundModel, found: Sequence[FoundModel]) -> list[FoundModel]:
    """The models in `found` that can draft for `target`: they pass check_pair and are smaller (fewer
    parameters or a smaller file)."""
    if target.info is None:
        return []
    mine = target.info
    return [
        model
        for model in found
        if model.info is not None
        and (model.info.parameters < mine.parameters or model.info.file_bytes < mine.file_bytes)
        and can_pair(mine, model.info)
    ]


# --- memory --------------------------------------------------------------------------------------------------


def memory_needed(target: GGUFInfo, draft: GGUFInfo, tokens: int = DEFAULT_TOKENS) -> int:
    """Bytes a pair takes: both files as mapped (once where both sides are one file) and a float32 KV cache of
    `tokens` positions for each side."""
    if tokens < 0:
        raise ConfigError(f"tokens must be 0 or more, not {tokens}")
    same = target.path.resolve() == draft.path.resolve()
    files = target.file_bytes + (0 if same else draft.file_bytes)
    return files + tokens * ((target.kv_bytes_per_token or 0) + (draft.kv_bytes_per_token or 0))


def free_memory(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """MemAvailable of /proc/meminfo in bytes: what can be taken without swapping; None where it is not known."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # given in KiB
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_fits(needed: int, available: int | None = None) -> None:
    """Raise NotEnoughMemoryError, with the numbers, where `needed` bytes exceed `available` (by default the
    free memory, free_memory(); nothing is refused where that is not known)."""
    free = free_memory() if available is None else available
    if free is not None and needed > free:
        raise NotEnoughMemoryError(
            f"this pair needs {format_bytes(needed)} of memory; {format_bytes(free)} is free: choose a smaller "
            "draft or target (fewer parameters, or fewer bits), or close other programs"
        )


def format_bytes(count: float) -> str:
    """1234 → "1.2 KB" (decimal units, as file managers and model pages give sizes)."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{int(count)} bytes"


# --- places --------------------------------------------------------------------------------------------------


def default_places(env: Mapping[str, str], home: Path) -> list[Place]:
    """The usual places, as huggingface_hub, LM Studio and Ollama choose them from `env` and `home`: the Hugging
    Face cache ($HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
    ~/.cache/huggingface/hub), LM Studio's two models folders, Ollama's store ($OLLAMA_MODELS, else
    ~/.ollama/models and the Linux service's /usr/share/ollama/.ollama/models), and $SPECVIZ_MODELS_DIR."""

    def path(value: str) -> Path:
        return home / value[2:] if value.startswith("~/") else Path(value)

    if env.get("HF_HUB_CACHE"):
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
        OLLAMA: _ollama_models,
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


_Entry = tuple[str, str, Path, str | None]  # spec, name, path, error


def is_model_file(name: str) -> bool:
    """A .gguf file that is a model of its own: not a multimodal projector, not a split part after the first."""
    split = _SPLIT.search(name)
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


def _folder_models(root: Path) -> Iterator[_Entry]:
    for path in _gguf_files(root):
        relative = path.relative_to(root)
        name = f"{relative.parent.as_posix()} {relative.name}" if relative.parent != Path(".") else relative.name
        yield str(path), name, path, None


def _hf_models(root: Path) -> Iterator[_Entry]:
    for repo_dir in sorted(root.glob("models--*")):
        repo = "/".join(repo_dir.name.split("--")[1:])
        for relative, path in sorted(_hf_snapshot_files(repo_dir).items()):
            if is_model_file(Path(relative).name):
                yield str(path), f"{repo} {relative}", path, None


def _hf_snapshot_files(repo_dir: Path) -> dict[str, Path]:
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


# --- Ollama --------------------------------------------------------------------------------------------------


def _ollama_models(root: Path) -> Iterator[_Entry]:
    manifests = root / "manifests"
    for manifest in sorted(manifests.glob("*/*/*/*"))[:MAX_FILES]:
        if not manifest.is_file():
            continue
        host, namespace, model, tag = manifest.relative_to(manifests).parts
        name = _ollama_name(host, namespace, model, tag)
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


def _ollama_name(host: str, namespace: str, model: str, tag: str) -> str:
    if host != OLLAMA_REGISTRY:
        return f"{host}/{namespace}/{model}:{tag}"
    return f"{model}:{tag}" if namespace == OLLAMA_LIBRARY else f"{namespace}/{model}:{tag}"


def _ollama_ref(ref: str) -> tuple[str, str, str, str]:
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
    host, namespace, model, tag = _ollama_ref(ref)
    stores = [place.path for place in places if place.source == OLLAMA]
    for store in stores:
        manifest = store / "manifests" / host / namespace / model / tag
        if manifest.is_file():
            return _ollama_blob(store, manifest)
    looked = ", ".join(shown(store / "manifests" / host / namespace / model / tag) for store in stores)
    raise ModelError(
        f"no Ollama model {_ollama_name(host, namespace, model, tag)!r} here: looked for "
        f"{looked or 'an Ollama store, and none is known (set OLLAMA_MODELS)'}; pull it with `ollama pull {ref}`"
    )


# --- specs ---------------------------------------------------------------------------------------------------


def parse_spec(spec: str) -> str | None:
    """The GGUF spec `spec` names, written out whole: a path ending in ".gguf" (~ expanded),
    "ollama:NAME:TAG" (TAG "latest" where none is given) or "hf:ORG/REPO:FILE_OR_QUANT"; None when it names no
    GGUF file (a hub id, a folder, "embedded"). ModelError for an ollama: or hf: spec that is not well formed."""
    text = spec.strip()
    if text.startswith("ollama:"):
        return f"ollama:{_ollama_name(*_ollama_ref(text.removeprefix('ollama:')))}"
    if text.startswith("hf:"):
        repo, wanted = _hf_ref(text)
        return f"hf:{repo}:{wanted}"
    if text.lower().endswith(".gguf"):
        return str(Path(text).expanduser())
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
    _stat(path)
    return path


def _resolve_hf(repo: str, wanted: str, caches: list[Path], progress: Progress | None) -> Path:
    for cache in caches:
        cached = _hf_snapshot_files(cache / f"models--{repo.replace('/', '--')}")
        chosen = _choose(repo, wanted, list(cached), where="the Hugging Face cache", missing_ok=True)
        if chosen and all(part in cached for part in _parts(chosen)):
            return cached[chosen]
    _require_hub(repo, wanted, caches)
    chosen = _choose(repo, wanted, _repo_files(repo), where="the repository", missing_ok=False)
    paths = [_download(repo, part, caches[0] if caches else None, progress) for part in _parts(chosen)]
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


def _parts(name: str) -> list[str]:
    """A split model's parts, given its first; else the file alone."""
    match = _SPLIT.search(name)
    if match is None:
        return [name]
    count, stem = int(match.group(2)), name[: match.start()]
    return [f"{stem}-{index:05d}-of-{count:05d}.gguf" for index in range(1, count + 1)]


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
