"""A GGUF file's header (key–value metadata, then one record per tensor), parsed with `struct` over a memory map.

The format is ggml's own GGUF specification. The header is parsed here rather than through `gguf.GGUFReader`,
which builds a numpy view of every array element and takes seconds over a large vocabulary and its merges; the
constants (value types, quantization block sizes) are the `gguf` package's."""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gguf

from specviz.errors import ModelError

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
TOKENS = "tokenizer.ggml.tokens"
MAGIC = b"GGUF"  # every GGUF file's first four bytes, whatever its name


class _Truncated(Exception):
    pass


@dataclass(frozen=True)
class Header:
    """What read_header hands to the info reader: the metadata, the vocabulary and the tensor records."""

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


def _parse(buf: mmap.mmap, path: Path) -> Header:
    magic = buf[:4]
    if magic != MAGIC:
        raise ModelError(f"{path} is not a GGUF file: it begins with {magic!r}, not b'GGUF'")
    endian = _endian(buf, path)
    cursor = _Cursor(buf, 4, endian)
    cursor.scalar("I")  # the version, checked by _endian
    n_tensors, n_keys = cursor.scalar("Q"), cursor.scalar("Q")
    metadata: dict[str, Any] = {}
    tokens: list[bytes] = []
    for _ in range(n_keys):
        key = cursor.string().decode("utf-8", "replace")
        value = cursor.value(cursor.scalar("I"), keep=key == TOKENS)
        if key == TOKENS:
            tokens = value if isinstance(value, list) else []
        elif value is not None:
            metadata[key] = value
    tensors, data_end = _tensors(cursor, n_tensors, int(metadata.get("general.alignment", 32)))
    return Header(metadata=metadata, tokens=tokens, tensors=tensors, data_end=data_end)


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


def has_magic(path: Path) -> bool:
    """Whether `path` is a file that begins with GGUF's magic bytes: a GGUF file under any name (an Ollama blob,
    `sha256-<hex>` with no extension; a file named `.bin`). Reads four bytes; False for anything it cannot read."""
    try:
        with path.open("rb") as file:
            return file.read(len(MAGIC)) == MAGIC
    except (OSError, ValueError):  # no such file, a folder, a name the system refuses
        return False


def stat_file(path: Path) -> os.stat_result:
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise ModelError(f"no such GGUF file: {path}") from None
    except OSError as exc:
        raise ModelError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if path.is_dir():
        raise ModelError(f"{path} is a folder, not a GGUF file")
    return stat


def read_header(path: Path) -> Header:
    size = stat_file(path).st_size
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
