"""Graded drafts: quantized copies of a GGUF target, made here with llama.cpp's own quantizer.

A quantized copy of the target is a real, separate draft model: the same architecture and vocabulary
with narrower numbers, so it agrees with the target less the fewer bits it keeps (docs/performance.md, "The
quantized copies' sizes" gives measured sizes and greedy agreement). Each is made once from the
float32 GGUF with `llama_model_quantize` (about a second, no network) and kept in a cache folder
beside it: written under a temporary name and renamed into place, while a lock file makes two
threads or processes that ask at once make it once.

The K-quants need rows divisible by 256; where a model's rows are not (SmolLM2-135M's are 576 wide),
llama.cpp falls back to Q4_0 for those tensors, so such a "Q3_K_M" or "Q2_K" is a mixture.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from specviz.errors import ModelError

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Grade:
    """One quantization a draft can be made with."""

    bits: int  # bits per weight of the grade's main type (a K-quant mixes in others)
    label: str  # how the app names it: "4-bit"
    ftype: str  # the llama_ftype constant of llama-cpp-python that makes it


KINDS: dict[str, Grade] = {
    "Q8_0": Grade(bits=8, label="8-bit", ftype="LLAMA_FTYPE_MOSTLY_Q8_0"),
    "Q4_0": Grade(bits=4, label="4-bit", ftype="LLAMA_FTYPE_MOSTLY_Q4_0"),
    "Q3_K_M": Grade(bits=3, label="3-bit", ftype="LLAMA_FTYPE_MOSTLY_Q3_K_M"),
    "Q2_K": Grade(bits=2, label="2-bit", ftype="LLAMA_FTYPE_MOSTLY_Q2_K"),
}

_thread_locks: dict[Path, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


def grade(kind: str) -> Grade:
    """The grade called `kind` ("Q4_0"); a ModelError naming the known ones otherwise."""
    try:
        return KINDS[kind]
    except (KeyError, TypeError):
        known = ", ".join(KINDS)
        raise ModelError(f"unknown quantization {kind!r}: choose one of {known}") from None


def quantized_path(src: Path, kind: str, cache_dir: Path) -> Path:
    """Where the `kind` copy of `src` is kept: `<cache_dir>/<stem>.<KIND>.gguf`."""
    grade(kind)
    return Path(cache_dir) / f"{Path(src).stem}.{kind}.gguf"


def quantized(src: Path, kind: str, cache_dir: Path, progress: Progress | None = None) -> Path:
    """The `kind` quantization of the GGUF file `src` ("Q8_0", "Q4_0", "Q3_K_M", "Q2_K"), made once
    into `cache_dir` and the cached file afterwards (remade when `src` is newer than it)."""
    src = Path(src)
    target = quantized_path(src, kind, cache_dir)
    if not src.is_file():
        raise ModelError(f"cannot make a {kind} draft: the model file {src} does not exist")
    if _is_current(target, src):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target):
        if _is_current(target, src):  # made by another thread or process while this one waited
            return target
        made = KINDS[kind]
        (progress or (lambda _msg: None))(f"Making the {made.label} draft ({kind}) from the target, about a second…")
        handle, staging = tempfile.mkstemp(prefix=f".{target.name}-", dir=target.parent)
        os.close(handle)
        try:
            _quantize(src, Path(staging), kind)
            os.replace(staging, target)
        finally:
            if os.path.exists(staging):
                os.unlink(staging)
    return target


def embedded_quantized(kind: str, progress: Progress | None = None) -> Path:
    """The `kind` quantization of the embedded target's float32 GGUF, kept beside it in the cache."""
    from specviz.models import embedded

    grade(kind)  # before writing the float32 file, which takes seconds the first time
    return quantized(embedded.ensure_f32_gguf(progress), kind, embedded.cache_root(), progress)


def _quantize(src: Path, dst: Path, kind: str) -> None:
    from specviz.models import llamacpp

    lib = llamacpp.backend()  # the runtime's llama_cpp: initialised once, its log silenced
    params = lib.llama_model_quantize_default_params()
    params.ftype = getattr(lib, KINDS[kind].ftype)
    params.nthread = llamacpp.default_threads()
    code = lib.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(params))
    if code != 0:
        raise ModelError(
            f"llama.cpp could not quantize {src.name} to {kind} (code {code}); "
            "set SPECVIZ_LLAMA_LOG=1 to see llama.cpp's log"
        )


def _is_current(target: Path, src: Path) -> bool:
    try:
        return target.stat().st_mtime >= src.stat().st_mtime
    except OSError:
        return False


@contextlib.contextmanager
def _locked(target: Path) -> Iterator[None]:
    """Held by one thread of one process at a time for `target`: a lock per path among this process's
    threads, and an advisory lock on `.<target name>.lock` beside it among processes (POSIX; elsewhere the rename
    still keeps a half-written file from being read, and two processes may both make it)."""
    with _thread_locks_guard:
        lock = _thread_locks.setdefault(target.absolute(), threading.Lock())
    with lock, open(target.with_name(f".{target.name}.lock"), "a+b") as handle:
        try:
            import fcntl
        except ImportError:
            yield
            return
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
