"""The probes benchmark's watchers (benchmarks.probes): a loopback listener standing for another host, and the
server's resident memory (its process and children) sampled while the probes run."""

from __future__ import annotations

import http.server
import threading
import time
from pathlib import Path
from typing import Any

# --------------------------------------------------------------------------------------
# The loopback listener: another host on the network, as far as the server can tell
# --------------------------------------------------------------------------------------


class Listener:
    """An HTTP server on 127.0.0.1 that answers 404 to everything and counts each connection and request (with the
    time it came, so requests can be told apart by phase)."""

    def __init__(self) -> None:
        self.connections: list[float] = []
        self.requests: list[tuple[float, str, str]] = []  # (time, method, path)
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                listener.requests.append((time.perf_counter(), self.command, self.path))
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_HEAD = do_PUT = do_OPTIONS = _answer

            def log_message(self, *_args: Any) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def verify_request(self, request: Any, client_address: Any) -> bool:
                listener.connections.append(time.perf_counter())
                return True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def __enter__(self) -> Listener:
        self.thread.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def since(self, t0: float) -> tuple[int, list[str]]:
        """Connections since t0, and the requests since then as "METHOD path"."""
        return sum(t >= t0 for t in self.connections), [f"{m} {p}" for t, m, p in self.requests if t >= t0]


# --------------------------------------------------------------------------------------
# What the server holds
# --------------------------------------------------------------------------------------


def _status_kb(pid: int, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:  # the process ended between reading its children and its status
        pass
    return 0


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            kids += [int(k) for k in (task / "children").read_text().split()]
    except OSError:
        pass
    return kids


def tree_rss_gb(pid: int) -> float:
    """Resident memory of the process and all its descendants now, GB (the sum of their VmRSS)."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += _status_kb(p, "VmRSS")
        todo += _children(p)
    return total / 1e6


class RssSampler:
    """The process tree's RSS every `every` seconds in a thread, as (time, GB)."""

    def __init__(self, pid: int, every: float = 0.5) -> None:
        self.pid, self.every = pid, every
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.perf_counter(), tree_rss_gb(self.pid)))
            self._stop.wait(self.every)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: Any) -> None:
        self._stop.set()
        self._thread.join()

    def peak(self, t0: float, t1: float = float("inf")) -> float:
        return max((gb for t, gb in self.samples if t0 <= t <= t1), default=float("nan"))


def folder_bytes(folder: Path) -> int:
    """Bytes of every file under `folder` (links not followed; 0 when it does not exist)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
