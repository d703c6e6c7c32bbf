"""A real serving engine on this CPU, for tests/test_remote_server.py and benchmarks/remote.py:
llama-cpp-python's OpenAI-compatible server (built portable by `make server` into .venv-llama)
serving the embedded GGUF on a free loopback port, with prompt log-probabilities switched on.

`f32_gguf` writes the embedded GGUF with every tensor de-quantised to float32: the very weights
the local target runs (transformers de-quantises the same file with the same gguf code). Served
with a float32 KV cache, llama.cpp then computes what the local target computes, in float32 both,
and only the order of the sums differs; served as shipped (Q4_1), llama.cpp multiplies the weights
with 8-bit activations and keeps the KV cache in float16."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from benchmarks.appserver import free_port
from specviz.models.embedded import FILE_TYPE, GGML_F32, f32_gguf  # noqa: F401  (re-exported)

ROOT = Path(__file__).resolve().parents[1]
PYTHON_ENV = "SPECVIZ_LLAMA_PYTHON"  # the interpreter that has llama_cpp[server]
DEFAULT_PYTHON = ROOT / ".venv-llama" / "bin" / "python"


def server_python() -> Path:
    path = Path(os.environ.get(PYTHON_ENV, DEFAULT_PYTHON))
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: run `make server` (builds llama-cpp-python[server] into .venv-llama)"
        )
    return path


@contextlib.contextmanager
def llama_server(model: Path | None = None, n_ctx: int = 2048, timeout: float = 120) -> Iterator[str]:
    """Yield the base URL (http://127.0.0.1:PORT/v1) of a running server; stop it afterwards.
    `model`: a GGUF file, by default the embedded one; a float32 file gets a float32 KV cache."""
    from specviz.models import embedded

    model = (model or embedded.gguf_path()).resolve()
    port = free_port()
    python = server_python()
    cmd = [
        str(python),
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--logits_all",
        "true",
        "--n_ctx",
        str(n_ctx),
        "--verbose",
        "false",
    ]
    if _is_f32(model):
        cmd += ["--type_k", str(GGML_F32), "--type_v", str(GGML_F32)]
    log = open(os.devnull, "wb")  # noqa: SIM115
    # run from the package's library folder: ggml looks for its CPU variants (`make server` builds one library per
    # x86 level) beside the executable and in the working directory only
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=_library_folder(python))
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama-cpp-python's server exited with code {proc.returncode}: {' '.join(cmd)}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
                break
            except OSError:
                if time.time() > deadline:
                    raise TimeoutError(f"llama-cpp-python's server did not start within {timeout:g} s") from None
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _library_folder(python: Path) -> str | None:
    """llama_cpp/lib of the server's interpreter (None: where it cannot say)."""
    ask = "import importlib.util as u, os; print(os.path.dirname(u.find_spec('llama_cpp').origin))"
    done = subprocess.run([str(python), "-c", ask], capture_output=True, text=True, timeout=60)
    folder = Path(done.stdout.strip()) / "lib"
    return str(folder) if done.returncode == 0 and folder.is_dir() else None


def _is_f32(model: Path) -> bool:
    import gguf

    field = gguf.GGUFReader(model).get_field(FILE_TYPE)
    return field is not None and field.contents() == GGML_F32
