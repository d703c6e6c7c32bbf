"""Memory that ended sessions freed, given back to the system while the server runs.

Streamlit runs each session's script in a thread of its own, and glibc gives each thread an arena of its own: what
a session's runs, tables and charts held is freed when the session ends (a tab closed, then Streamlit's hold of
disconnected sessions), but it stays in that thread's arena, so a class server's resident memory only ever rose.
A Trimmer gives those free pages back every `every_s` seconds (specviz.models.store.trim_memory), on one daemon
thread; what is still in use is never touched.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from specviz.models.store import trim_memory

EVERY_S = 10.0  # seconds between two trims


class Trimmer:
    def __init__(
        self, every_s: float = EVERY_S, trim: Callable[[], bool] = trim_memory, before: Callable[[], None] | None = None
    ) -> None:
        """`before`: called first each time (the app drops the sessions its server no longer keeps, so that what
        they held is freed before the trim)."""
        if every_s <= 0:
            raise ValueError(f"every_s must be positive, not {every_s}")
        self.every_s, self._trim, self._before = every_s, trim, before
        self._stop = threading.Event()
        self.trims = 0  # how many times it has trimmed
        self._thread = threading.Thread(target=self._run, name="specviz-trimmer", daemon=True)

    def start(self) -> Trimmer:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            if self._before is not None:
                self._before()
            if self._trim():
                self.trims += 1
            elif self._before is None:
                return  # no such call in this C library and nothing else to do: ever

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        self._thread.join(timeout)


_running: Trimmer | None = None
_lock = threading.Lock()


def ensure_running(every_s: float = EVERY_S, before: Callable[[], None] | None = None) -> Trimmer:
    """The process's one Trimmer, started on first call (a server's first session)."""
    global _running
    with _lock:
        if _running is None:
            _running = Trimmer(every_s, before=before).start()
        return _running
