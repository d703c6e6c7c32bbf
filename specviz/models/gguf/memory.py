"""The memory a pair of GGUF models needs, the memory this machine has free, and sizes in words."""

from __future__ import annotations

from pathlib import Path

from specviz.errors import ConfigError
from specviz.models.gguf.records import GGUFInfo
from specviz.models.hub import ModelTooLargeError

DEFAULT_TOKENS = 2048  # positions of KV cache a session holds: specviz.models.llamacpp.DEFAULT_CONTEXT


class NotEnoughMemoryError(ModelTooLargeError):
    """A pair of models needs more memory than this machine has free."""


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
