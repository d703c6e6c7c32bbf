"""One copy of each model part, however many pairs use it, given back when the last pair using it closes.

A pair is made of parts: the target's weights in torch, the same target on llama.cpp (its mapped file and, on a
class server, the shared batched context's KV cache), a draft. Pairs that run the same target share its parts: a
server holding the embedded target with four drafts holds the target once, not four times. `load_pair` takes
each part from a `ModelStore` (`take`), and the pair gives each back when it is closed (`give`); a part nobody
holds any more is closed at once (a llama.cpp model frees its contexts and weights; torch weights are dropped and
the allocator's free pages returned to the system: `release_memory`). Without a store handed in, `load_pair`
makes one for the pair alone, so closing the pair frees everything it loaded.

The store knows what each part holds (`parts`, `total_bytes`): what a class server's operator reads, and what its
memory budget counts (specviz.server.paircache).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

T = TypeVar("T")


@dataclass(frozen=True, kw_only=True)
class Part:
    """What the store holds for one key: its name, the bytes it holds now, and how many pairs use it."""

    key: Hashable
    name: str
    bytes: int
    users: int


@dataclass(eq=False)
class _Entry:
    value: Any
    name: str
    size: Callable[[Any], int]
    users: int = 0


class ModelStore:
    """Parts shared by every pair that uses them, each loaded once (however many threads ask at once) and closed
    when the last pair gives it back."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, _Entry] = {}
        self._lock = threading.Lock()
        self._gates: dict[Hashable, threading.Lock] = {}

    def take(self, key: Hashable, make: Callable[[], T], *, name: str, size: Callable[[T], int]) -> T:
        """The part under `key`, made by `make()` if nobody holds it; the caller now holds it (give it back)."""
        with self._lock:
            if (entry := self._entries.get(key)) is not None:
                entry.users += 1
                return entry.value
            gate = self._gates.setdefault(key, threading.Lock())
        with gate:  # one load per part, however many pairs ask for it at once
            with self._lock:
                if (entry := self._entries.get(key)) is not None:
                    entry.users += 1
                    return entry.value
            value = make()
            with self._lock:
                self._entries[key] = _Entry(value, name, size, users=1)
                self._gates.pop(key, None)
            return value

    def give(self, key: Hashable) -> bool:
        """Give one hold of `key` back; the part is closed when nobody holds it. True when it was closed."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return False
            entry.users -= 1
            if entry.users > 0:
                return False
            del self._entries[key]
        close = getattr(entry.value, "close", None)
        if callable(close):
            close()
        return True

    def holds(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def parts(self) -> list[Part]:
        with self._lock:
            entries = list(self._entries.items())
        return [Part(key=k, name=e.name, bytes=int(e.size(e.value)), users=e.users) for k, e in entries]

    def total_bytes(self) -> int:
        return sum(p.bytes for p in self.parts())


def tensor_bytes(*objects: Any) -> int:
    """The bytes of the distinct tensors an object holds: torch modules' parameters and buffers, and the tensors in
    its attributes, lists and dicts (a lean draft's prepared copies), a few levels deep, and what an object that
    says its `held_bytes()` holds (packed int8 weights). A tensor shared by two of
    them (an early-exit draft's layers are the target's) is counted once."""
    seen: set[int] = set()
    visited: set[int] = set()
    total = 0

    def add(tensor: torch.Tensor) -> None:
        nonlocal total
        if tensor.device.type == "meta":
            return
        try:
            storage = tensor.untyped_storage()
            where, size = storage.data_ptr(), storage.nbytes()
        except (NotImplementedError, RuntimeError):  # an opaque tensor (oneDNN's prepacked weights)
            where, size = id(tensor), tensor.numel() * tensor.element_size()
        if where not in seen:
            seen.add(where)
            total += size

    def walk(obj: Any, depth: int) -> None:
        nonlocal total
        if id(obj) in visited or depth > 4:
            return
        visited.add(id(obj))
        if isinstance(obj, torch.Tensor):
            add(obj)
        elif isinstance(obj, torch.nn.Module):
            for tensor in (*obj.parameters(), *obj.buffers()):
                add(tensor)
            for value in vars(obj).values():
                if not isinstance(value, dict | torch.nn.Module):  # its modules and tensors are counted above
                    walk(value, depth + 1)
        elif isinstance(obj, list | tuple):
            for item in obj:
                walk(item, depth + 1)
        elif isinstance(obj, dict):
            for item in obj.values():
                walk(item, depth + 1)
        elif callable(getattr(obj, "held_bytes", None)):  # a kernel's packed weights, opaque to torch (Int8Linear)
            total += int(obj.held_bytes())
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            for value in vars(obj).values():
                walk(value, depth + 1)

    for obj in objects:
        walk(obj, 0)
    return total


_libc = None


def release_memory() -> None:
    """Collect what was dropped and give the allocator's free pages back to the system (glibc keeps them
    otherwise, so a server's resident memory would never fall after a pair is given back)."""
    gc.collect()
    trim_memory()


def trim_memory() -> bool:
    """Give the C allocator's free pages back to the system, in every thread's arena (glibc's malloc_trim; a
    server runs each session's script in a thread of its own, and what a closed session freed stays in that
    thread's arena until trimmed). False where the C library has no such call."""
    global _libc
    if _libc is None:
        name = ctypes.util.find_library("c")
        _libc = ctypes.CDLL(name) if name else False
    if not (_libc and hasattr(_libc, "malloc_trim")):
        return False
    _libc.malloc_trim(0)
    return True
