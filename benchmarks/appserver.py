"""A real app server and a real browser, for the browser tests and the sessions benchmark:
`streamlit run app.py` on a free loopback port, and Debian's headless Chromium for Playwright."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def niced_chromium(folder: Path, niceness: int = 19) -> str:
    """A Chromium that runs at the lowest CPU priority (a wrapper script in `folder`): when a benchmark
    drives the app from the same machine, the browser then takes only the CPU the server leaves, as
    if it ran on another machine (in a classroom it runs on the students')."""
    wrapper = folder / "chromium-niced"
    wrapper.write_text(f'#!/bin/sh\nexec nice -n {niceness} {CHROMIUM} "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


# The app's root element once its script run has finished (the status widget can detach before
# the run ends, and a button clicked then is the previous run's).
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError("streamlit did not become healthy")


@contextlib.contextmanager
def serve(log: Path, env: dict[str, str] | None = None, procs: list | None = None) -> Iterator[str]:
    """The app on 127.0.0.1 (never another address), with the repo's .streamlit/config.toml;
    yields its URL and stops it on exit. Its output goes to `log`; `procs`, if given, receives the
    server's Popen (benchmarks read its CPU time)."""
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(ROOT / "app.py"),
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
    ]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=environment, stdout=out, stderr=subprocess.STDOUT)
        if procs is not None:
            procs.append(proc)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, proc)
            yield url
        except BaseException:  # what the server said, beside the failure (pytest shows a failed test's stderr)
            out.flush()
            print(f"--- the app server's output ({log}), its end ---", file=sys.stderr)
            print(log.read_text(errors="replace")[-6000:], file=sys.stderr)
            raise
        finally:
            proc.terminate()
            proc.wait(timeout=30)
