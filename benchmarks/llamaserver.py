"""A real serving engine on this CPU, for tests/test_remote_server.py and benchmarks/remote.py:
llama-cpp-python's OpenAI-compatible server (built portable by `make server` into .venv-llama)
serving the embedded GGUF on a free loopback port, with prompt log-probabilities switched on."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from benchmarks.appserver import free_port

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
def llama_server(n_ctx: int = 2048, timeout: float = 120) -> Iterator[str]:
    """Yield the base URL (http://127.0.0.1:PORT/v1) of a running server; stop it afterwards."""
    from specviz.models import embedded

    port = free_port()
    cmd = [str(server_python()), "-m", "llama_cpp.server", "--model", str(embedded.gguf_path()), "--host", "127.0.0.1",
           "--port", str(port), "--logits_all", "true", "--n_ctx", str(n_ctx), "--verbose", "false"]  # fmt: skip
    log = open(os.devnull, "wb")  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
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
