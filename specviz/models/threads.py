"""Every torch forward pass on its model's own thread count, whatever thread runs it.

The bits of a float32 product depend on how many threads compute it: MKL splits a product's sums over its
threads (a product of a few rows of the embedded model's shapes rounds differently on 1 and 2 threads, by ~1e-6;
docs/performance.md, "Same seed, same trace, beside any load"), and on some CPUs it picks another kernel by the
count.

The count is per thread. `torch.set_num_threads(n)` sets the calling thread's OpenMP count (the team of every
`at::parallel_for` and oneDNN kernel the thread starts) and MKL's count for that thread
(`mkl_set_num_threads_local`), and stores n as the count any other thread takes at its first parallel
operation (`at::init_num_threads`). Until then a new thread's products run on MKL's own default: every core.
So a Streamlit script thread, a class server's turn or a test's thread computed with whichever count it
happened to have (a fragment's rerun, in a thread of its own, ran the feature draft's first product on every
core after app.py had set one), and a run's numbers depended on where it ran.

A model fixes its count when it is made (`threads=`, else the count of the thread that makes it), and its
every forward pass runs `pinned` to that count: the same bits from any thread, whatever count the process
or the thread was set to since, beside any other run. llama.cpp's threads are its contexts' own
(specviz.models.llamacpp), and its sums do not depend on their number. The engine's own tensor work between the
passes (specviz.core.engine's steps, specviz.analysis.measure.TargetAlone) and a llama.cpp session's copy of its
rows run `on_one_thread`: the same bits wherever they run, and no team of torch threads left busy-waiting on the
cores a llama.cpp pass needs next.

The bits also depend, without MKL's conditional numerical reproducibility, on where a product's rows lie in
memory: the same run, same counts, gave the feature draft's q other bits in its last digits in about one run of
three while other processes held the cores (the allocations fall differently; docs/performance.md, "Same
seed, same trace, beside any load"). `reproducible_blas` sets MKL's mode to AUTO with STRICT once, when this
module is imported, before any product (as `MKL_CBWR=AUTO,STRICT` would): a kernel picked by the CPU, not by
an array's alignment.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import torch

F = TypeVar("F", bound=Callable)

CBWR_AUTO = 2  # MKL_CBWR_AUTO: the code path MKL picks for this CPU, the same each run
CBWR_STRICT = 0x10000  # MKL_CBWR_STRICT: results independent of the arrays' alignment too


def mkl_service() -> ctypes.CDLL | None:
    """torch's own MKL (linked into libtorch_cpu), where it exports MKL's service functions; None elsewhere."""
    library = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    try:
        lib = ctypes.CDLL(str(library))
        lib.mkl_serv_cbwr_set, lib.mkl_serv_cbwr_get  # noqa: B018 (both must be there)
    except (OSError, AttributeError):
        return None
    return lib


def reproducible_blas() -> bool:
    """MKL's conditional numerical reproducibility on (AUTO with STRICT); whether it is on now."""
    lib = mkl_service()
    if lib is None:
        return False
    lib.mkl_serv_cbwr_set(CBWR_AUTO | CBWR_STRICT)
    return lib.mkl_serv_cbwr_get(1) == CBWR_AUTO  # MKL_CBWR_BRANCH: the branch, without the STRICT flag


REPRODUCIBLE = reproducible_blas()


def current() -> int:
    """This thread's torch count; a thread that has not computed yet takes the process's count here, as its
    first parallel operation would (so that MKL's count for the thread is set, not MKL's default)."""
    return torch.get_num_threads()


@contextlib.contextmanager
def pinned(threads: int) -> Iterator[None]:
    """Within: this thread computes on `threads` threads (torch's OpenMP count and MKL's count for the thread);
    after: on its own count again. Setting a count costs ~0.1 µs, and nothing when it is already the count."""
    own = current()
    if own != threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if own != threads:
            torch.set_num_threads(own)


def on_one_thread(function: F) -> F:
    """`function`, its own tensor work pinned to one thread (a model it calls still pins its own count): the same bits
    wherever it runs, and no team of torch threads started there to busy-wait, after it, on the cores a llama.cpp
    pass needs next."""

    @functools.wraps(function)
    def run(*args, **kwargs):
        with pinned(1):
            return function(*args, **kwargs)

    return run  # type: ignore[return-value]
