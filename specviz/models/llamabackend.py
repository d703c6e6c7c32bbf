"""llama.cpp's library in this process: whether llama-cpp-python is installed, its one-time start (its log silenced,
the CPU variant chosen), and which of the build's ggml CPU variants this CPU runs (`make llama` builds one per x86
level; specviz.models.llamacpp runs models on it).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
from pathlib import Path

from specviz.errors import ModelError
from specviz.models.llamasettings import CPU_ENV

INSTALL_HINT = "run `make llama` (builds llama-cpp-python 0.3.36 into .venv, about 8 minutes) and restart the app"


_init_lock = threading.Lock()
_initialised = False
_log_callback = None  # kept alive: llama.cpp holds the pointer


def available() -> bool:
    """True when llama-cpp-python can be imported here (it is built by `make llama`)."""
    return importlib.util.find_spec("llama_cpp") is not None


def backend(log: bool = False, cpu: str = ""):
    """The llama_cpp module, initialised once: quiet unless `log` (its log on stderr), its CPU backend the variant
    `cpu` names, else the best for this CPU (LlamaSettings; the first call's settings hold for the process)."""
    global _initialised, _log_callback
    try:
        import llama_cpp
    except ImportError as exc:
        raise ModelError(f"the llama.cpp runtime is not installed: {INSTALL_HINT}") from exc
    with _init_lock:
        if not _initialised and not log:
            _log_callback = llama_cpp.llama_log_callback(lambda _level, _text, _data: None)
            llama_cpp.llama_log_set(_log_callback, ctypes.c_void_p(0))
        if not _initialised:
            _load_cpu_backend(Path(llama_cpp.__file__).parent / "lib", cpu)
            llama_cpp.llama_backend_init()
            _initialised = True
    return llama_cpp


# ggml's sapphirerapids library runs quantized products on AMX tiles, and on hosts that advertise AMX but trap on its
# tile instructions (a virtual machine's, docs/performance.md) the process dies with SIGILL at the first quantized
# pass. Unless asked for by name ($SPECVIZ_LLAMA_CPU), such a library is passed over for the best of the others.
PASSED_OVER = ("sapphirerapids",)


def best_variant(lib: Path) -> Path | None:
    """The CPU variant library in `lib` that scores highest on this CPU by its own check (ggml_backend_score: 0 where
    the CPU lacks what it needs), those of PASSED_OVER left out; None where none scores."""
    best, top = None, 0
    for path in sorted(lib.glob("libggml-cpu-*.so")):
        if path.name[len("libggml-cpu-") : -len(".so")] in PASSED_OVER:
            continue
        try:
            score = ctypes.CDLL(str(path), mode=os.RTLD_LOCAL).ggml_backend_score
        except (OSError, AttributeError):
            continue
        score.restype = ctypes.c_int
        if (points := score()) > top:
            best, top = path, points
    return best


def _load_cpu_backend(lib: Path, variant: str = "") -> None:
    """ggml's CPU backend, where the build made one library per x86 level (`make llama`: GGML_BACKEND_DL with
    GGML_CPU_ALL_VARIANTS, libggml-cpu-haswell.so … libggml-cpu-sapphirerapids.so): the one with the widest
    vectors this CPU has (PASSED_OVER left out), chosen by each library's own check of the CPU (or
    `variant`'s, $SPECVIZ_LLAMA_CPU on a server), loaded from
    the package's own folder (ggml itself looks only beside the Python executable and in the working directory).
    A build with its CPU backend linked in (no variants) has it registered already: nothing to do."""
    ggml = _loaded_ggml(lib)
    if ggml is None:
        return
    ggml.ggml_backend_reg_count.restype = ctypes.c_size_t
    if ggml.ggml_backend_reg_count():
        return
    if variant:
        chosen = lib / f"libggml-cpu-{variant}.so"
        names = ", ".join(cpu_variants(lib)) or "none"
        if not chosen.exists():
            raise ModelError(f"{CPU_ENV}={variant!r}: no such CPU variant in this build (it has: {names})")
        ggml.ggml_backend_load.restype = ctypes.c_void_p
        ggml.ggml_backend_load.argtypes = [ctypes.c_char_p]
        if not ggml.ggml_backend_load(str(chosen).encode()):
            raise ModelError(f"{CPU_ENV}={variant!r}: this CPU cannot run that variant (the build has: {names})")
        return
    best = best_variant(lib)
    if best is not None:
        ggml.ggml_backend_load.restype = ctypes.c_void_p
        ggml.ggml_backend_load.argtypes = [ctypes.c_char_p]
        if ggml.ggml_backend_load(str(best).encode()):
            return
    ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
    ggml.ggml_backend_load_all_from_path(str(lib).encode())


def _loaded_ggml(lib: Path) -> ctypes.CDLL | None:
    """The libggml that llama.cpp's library has loaded, found by its SONAME (libggml.so.0): the wheel holds the
    library under three names as three files, and opening another of them would load a second copy, with a backend
    registry of its own that llama.cpp never sees."""
    for path in sorted(lib.glob("libggml.so.*"), key=lambda found: len(found.name)):
        try:
            return ctypes.CDLL(path.name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:  # not loaded under this name
            continue
    return None


def cpu_variants(lib: Path | None = None) -> list[str]:
    """The names of the CPU variants the installed llama.cpp build has (none: one CPU backend linked in)."""
    if lib is None:
        spec = importlib.util.find_spec("llama_cpp")
        if spec is None or spec.origin is None:
            return []
        lib = Path(spec.origin).parent / "lib"
    return sorted(path.name[len("libggml-cpu-") : -len(".so")] for path in lib.glob("libggml-cpu-*.so"))


def cpu_variant() -> str | None:
    """The CPU variant this process runs llama.cpp on (the library it loaded), None before it is loaded or where
    the build has none."""
    maps = Path("/proc/self/maps")  # Linux: the libraries mapped into this process
    for line in maps.read_text().splitlines() if maps.exists() else []:
        name = line.rsplit("/", 1)[-1]
        if name.startswith("libggml-cpu-") and name.endswith(".so"):
            return name[len("libggml-cpu-") : -len(".so")]
    return None
