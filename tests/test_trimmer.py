"""What ended sessions freed goes back to the system (specviz.server.trimmer, specviz.models.store.trim_memory)."""

from __future__ import annotations

import threading
import time

import pytest

from specviz.models.store import trim_memory
from specviz.server import trimmer
from specviz.server.trimmer import Trimmer


def resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


def test_memory_a_finished_thread_freed_goes_back_only_once_trimmed():
    """A session's script runs in a thread of its own: 300 MB of 100 KB buffers made and dropped there (the last one
    kept, so the arena's top stays in use and glibc cannot give the rest back by itself) stay resident until
    trim_memory gives the free pages back."""
    kept = []

    def session() -> None:
        buffers = [bytearray(100_000) for _ in range(3000)]  # written: every page resident
        kept.append(buffers[-1])
        del buffers

    before = resident_mb()
    thread = threading.Thread(target=session)
    thread.start()
    thread.join()
    held = resident_mb()
    if held - before < 200:
        pytest.skip(f"this C library gave the memory back by itself ({held - before:.0f} MB held)")
    assert trim_memory()
    after = resident_mb()
    assert held - after > 200, (before, held, after)  # most of the 300 MB back
    assert kept and len(kept[0]) == 100_000  # what is still in use is untouched


def test_a_trimmer_trims_every_interval_until_stopped_and_refuses_a_wrong_interval():
    calls = []
    running = Trimmer(every_s=0.02, trim=lambda: calls.append(time.monotonic()) or True).start()
    time.sleep(0.3)
    running.stop(timeout=2)
    count = len(calls)
    assert count >= 3 and running.trims == count
    time.sleep(0.1)
    assert len(calls) == count  # stopped
    with pytest.raises(ValueError):
        Trimmer(every_s=0)


def test_a_trimmer_without_the_call_stops_at_once_and_the_process_has_one():
    calls = []
    running = Trimmer(every_s=0.01, trim=lambda: calls.append(1) or False).start()
    running._thread.join(timeout=2)
    assert calls == [1] and running.trims == 0 and not running._thread.is_alive()
    assert trimmer.ensure_running() is trimmer.ensure_running()


def test_sessions_kept_past_their_time_are_dropped_and_what_they_held_is_freed():
    """Streamlit keeps a closed tab's session for a reconnect and reaps it only when another session disconnects
    (on a quiet server: never); the app's trimmer reaps the expired ones itself (pages/_shell.drop_expired_sessions),
    and their state is freed."""
    import gc
    import weakref

    from streamlit.runtime.memory_session_storage import MemorySessionStorage
    from streamlit.runtime.session_manager import SessionInfo

    from pages._common.shell import drop_expired_sessions

    class Run:  # what a closed tab's state holds
        pass

    class Session:
        def __init__(self, sid: str) -> None:
            self.id, self.state = sid, {"run": Run()}
            self.state["me"] = self  # a cycle, as a real session's objects make

    class Manager:
        def __init__(self) -> None:
            self._session_storage = MemorySessionStorage(ttl_seconds=0.3)
            self._storage_lock = threading.Lock()

    manager = Manager()
    closed = Session("closed")
    held = weakref.ref(closed.state["run"])
    manager._session_storage.save(SessionInfo(client=None, session=closed, script_run_count=1))
    del closed
    assert drop_expired_sessions(manager) == 0  # within its time: kept for a reconnect
    time.sleep(0.4)
    gc.collect()
    assert held() is not None  # past its time, and still held: nothing else touched the storage
    later = Session("later")
    assert manager._session_storage.list() == []  # expired, out of sight, but not freed
    assert held() is not None
    assert drop_expired_sessions(manager) == 1
    assert held() is None  # the closed tab's run is freed
    manager._session_storage.save(SessionInfo(client=None, session=later, script_run_count=1))
    assert (
        drop_expired_sessions(manager) == 0 and manager._session_storage.get("later").session is later
    )  # within its time
    assert drop_expired_sessions(object()) == 0  # a manager without such a storage: nothing to do


def test_without_the_call_a_trimmer_still_drops_what_the_server_no_longer_keeps():
    """A C library without malloc_trim: the sessions are still reaped each interval (their memory freed by Python)."""
    reaped = []
    running = Trimmer(every_s=0.02, trim=lambda: False, before=lambda: reaped.append(1)).start()
    time.sleep(0.3)
    running.stop(timeout=2)
    assert len(reaped) >= 3 and running.trims == 0
