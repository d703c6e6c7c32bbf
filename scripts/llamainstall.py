"""After `make llama` (or `make server`) installs llama-cpp-python: make the installed package find its own CPU library.

The build (GGML_BACKEND_DL with GGML_CPU_ALL_VARIANTS, see the Makefile) keeps one ggml CPU library per x86 level
beside libggml in the package's lib folder. llama.cpp loads its backends only from beside the Python executable and
from the working directory (ggml_backend_load_all), so a user's own script, `llama_cpp.Llama("model.gguf")`, found no
backend and failed with "Failed to load model" unless specviz had loaded one first. This adds a few lines to the
installed llama_cpp/llama_cpp.py: its `llama_backend_init` (called by every Llama()) first loads the best variant for
this CPU from the package's own folder, as specviz.models.llamacpp does, where no backend is loaded yet. Run by the
Makefile with each environment's Python, so it imports nothing but the standard library; run twice, it changes nothing.
GGML_BACKEND_PATH=<that folder>/libggml-cpu-<variant>.so (llama.cpp's own variable) then loads that variant instead;
without the block, it is how to run a plain script at all (or run it from that folder).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

MARK = "# --- specviz: load ggml's CPU variant from this package's own folder"
BLOCK = f'''

{MARK} (added by `make llama`: scripts/llamainstall.py) ---
# This build keeps one CPU library per x86 level beside libggml in ./lib, where llama.cpp does not look (it looks beside
# the Python executable and in the working directory): llama_backend_init loads the best for this CPU from there first.
def _specviz_backend_init(_init=llama_backend_init):
    import ctypes as _ctypes
    import os as _os
    import pathlib as _pathlib

    def llama_backend_init():
        """Initialize the llama + ggml backend, ggml's CPU backend loaded from this package's lib folder first."""
        lib = _pathlib.Path(__file__).parent / "lib"
        for path in sorted(lib.glob("libggml.so.*"), key=lambda found: len(found.name)):
            try:  # the libggml llama.cpp loaded, by its name: another file of it would be a second copy
                ggml = _ctypes.CDLL(path.name, mode=_os.RTLD_NOLOAD | _os.RTLD_LAZY)
            except OSError:
                continue
            ggml.ggml_backend_reg_count.restype = _ctypes.c_size_t
            named = _os.environ.get("GGML_BACKEND_PATH")  # llama.cpp's own variable: that library, not the best here
            if ggml.ggml_backend_reg_count():
                pass
            elif named:
                ggml.ggml_backend_load.restype = _ctypes.c_void_p
                ggml.ggml_backend_load.argtypes = [_ctypes.c_char_p]
                ggml.ggml_backend_load(named.encode())
            else:  # the best by each library's own check of this CPU; sapphirerapids's AMX tiles trap on some hosts
                best, top = None, 0
                for variant in sorted(lib.glob("libggml-cpu-*.so")):
                    if variant.name == "libggml-cpu-sapphirerapids.so":
                        continue
                    try:
                        score = _ctypes.CDLL(str(variant), mode=_os.RTLD_LOCAL).ggml_backend_score
                    except (OSError, AttributeError):
                        continue
                    score.restype = _ctypes.c_int
                    if score() > top:
                        best, top = variant, score()
                ggml.ggml_backend_load.restype = _ctypes.c_void_p
                ggml.ggml_backend_load.argtypes = [_ctypes.c_char_p]
                if best is None or not ggml.ggml_backend_load(str(best).encode()):
                    ggml.ggml_backend_load_all_from_path.argtypes = [_ctypes.c_char_p]
                    ggml.ggml_backend_load_all_from_path(str(lib).encode())
            break
        _init()

    return llama_backend_init


llama_backend_init = _specviz_backend_init()
'''


def bindings(package: Path) -> Path:
    """The installed package's llama_cpp.py (the ctypes bindings that define llama_backend_init)."""
    return package / "llama_cpp.py"


def patch(package: Path) -> bool:
    """Add the block to the end of `package`'s bindings where it has CPU variants (an older block of this file's is
    replaced); True where the file changed."""
    target = bindings(package)
    text = target.read_text(encoding="utf-8")
    if not any((package / "lib").glob("libggml-cpu-*.so")):
        return False
    if "def llama_backend_init(" not in text:
        raise SystemExit(f"{target} defines no llama_backend_init: not the llama-cpp-python the Makefile pins")
    base = text[: text.find(MARK)] if MARK in text else text
    patched = base.rstrip("\n") + "\n" + BLOCK
    if patched == text:
        return False
    target.write_text(patched, encoding="utf-8")
    return True


def main() -> int:
    spec = importlib.util.find_spec("llama_cpp")  # found, not imported: nothing of llama.cpp is loaded here
    if spec is None or spec.origin is None:
        print("llama_cpp is not installed in this environment", file=sys.stderr)
        return 1
    package = Path(spec.origin).parent
    added = patch(package)
    print(f"{bindings(package)}: {'loads its CPU variant from its own folder now' if added else 'unchanged'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
