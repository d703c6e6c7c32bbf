"""What the CPU is doing now: this process's own CPU time, and how many cores other processes keep busy.

A wall clock counts the time a thread waits for a core as if it were work. Where another process takes one of
two cores, a runtime whose threads meet at barriers (llama.cpp: hundreds a pass) waits at every one of them for
a time slice, and a pass reads several times its quiet time. Two readings tell it at once, without the lagging
one-minute load average:

- **This process's CPU time** (`getrusage`): over a pass on n threads that each had a core it is about n × the
  wall time (ggml's threads spin at barriers, and spinning counts); a thread that waited for a core adds wall time
  and no CPU time. `ru_nivcsw` counts the times the kernel took a core from one of this process's threads.
- **The cores other processes keep busy** (`CoreWatch`): the busy time of the cores this process may run on
  (/proc/stat, steal included: a virtual machine's neighbours), less this process's own CPU time, over the most
  recent window of at least WINDOW_S seconds.

Both are read, never written; nothing here holds a run's state (a `CoreWatch` is one process's reading of its
machine, shared by every model and run in it).
"""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

WINDOW_S = 0.2  # the shortest window CoreWatch reads /proc/stat over (its counters tick 100 times a second)
STALE_S = 2.0  # an older reading is not "now": a fresh window is read before answering


@dataclass(frozen=True)
class Usage:
    """One reading of this process: the wall clock, its CPU time and its involuntary context switches."""

    wall: float  # time.perf_counter(), seconds
    cpu: float  # user + system seconds of every thread of this process
    involuntary: int  # times the kernel took a core from one of its threads

    def since(self, earlier: Usage) -> Usage:
        wall, cpu = self.wall - earlier.wall, self.cpu - earlier.cpu
        return Usage(wall=wall, cpu=cpu, involuntary=self.involuntary - earlier.involuntary)


def usage() -> Usage:
    """This process now (getrusage: microsecond CPU times, the scheduler's own accounting)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return Usage(wall=time.perf_counter(), cpu=own.ru_utime + own.ru_stime, involuntary=own.ru_nivcsw)


def allowed_cores() -> set[int]:
    """The cores this process may run on."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def read_busy(cores: set[int], stat: Path = Path("/proc/stat")) -> float | None:
    """Seconds the given cores have spent busy since boot (user, nice, system, irq, softirq and steal; not idle or
    iowait), or None where /proc/stat does not say (not Linux)."""
    try:
        lines = stat.read_text().splitlines()
    except OSError:
        return None
    hertz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    busy, seen = 0, False
    for line in lines:
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cores:
            continue
        fields = [int(x) for x in rest.split()]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
        busy += user + nice + system + irq + softirq + steal
        seen = True
    return busy / hertz if seen else None


def runnable_now(stat: Path = Path("/proc/stat"), tasks: Path = Path("/proc/self/task")) -> tuple[int, int] | None:
    """(tasks runnable on the machine at this instant, those of them that are this process's threads), or None
    where the system does not say."""
    try:
        everyone = next(
            int(line.split()[1]) for line in stat.read_text().splitlines() if line.startswith("procs_running")
        )
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    own = 0
    for task in tasks.glob("*/stat") if tasks.exists() else []:
        try:
            own += task.read_text().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            continue
    return everyone, max(own, 1)


@dataclass(frozen=True)
class Window:
    """Over `seconds` of wall time: the cores kept busy by other processes (and, as steal, by a virtual machine's
    neighbours), of `cores` this process may run on."""

    others: float
    cores: int
    seconds: float

    @property
    def free(self) -> float:
        return max(0.0, self.cores - self.others)


class CoreWatch:
    """The cores other processes keep busy now: over the most recent window of at least WINDOW_S seconds, read
    anew whenever asked after that much time (so a run's passes, tens of milliseconds apart, see a window at most a
    few tenths of a second old). Thread-safe; `read` and `own` are injectable (tests)."""

    def __init__(
        self,
        cores: set[int] | None = None,
        read: Callable[[set[int]], float | None] = read_busy,
        own: Callable[[], Usage] = usage,
        runnable: Callable[[], tuple[int, int] | None] | None = None,
    ) -> None:
        self.cores = cores or allowed_cores()
        self._read, self._own = read, own
        self._runnable = runnable or runnable_now
        self._lock = threading.Lock()
        self._mark: tuple[Usage, float] | None = None  # (this process, the cores' busy seconds) at the window's start
        self._last: Window | None = None

    def window(self) -> Window | None:
        """The latest window's reading, or None where the system does not say. A first call, or one after STALE_S
        without any, starts a new window and answers from the tasks runnable at this instant (`runnable`)."""
        with self._lock:
            own, mark = self._own(), self._mark
            if mark is not None and self._last is not None and own.wall - mark[0].wall < WINDOW_S:
                return self._last  # the window still open: the reading of the one before it
            busy = self._read(self.cores)
            if busy is None:
                return None
            if mark is None or own.wall - mark[0].wall > STALE_S:
                self._mark = (own, busy)
                others = self._instant()
                self._last = None if others is None else Window(others=others, cores=len(self.cores), seconds=0.0)
                return self._last
            elapsed = own.wall - mark[0].wall
            if elapsed >= WINDOW_S or self._last is None:
                others = (busy - mark[1] - (own.cpu - mark[0].cpu)) / max(elapsed, 1e-9)
                others = min(max(others, 0.0), len(self.cores))
                self._last = Window(others=others, cores=len(self.cores), seconds=elapsed)
                self._mark = (own, busy)
            return self._last

    def _instant(self) -> float | None:
        counts = self._runnable()
        if counts is None:
            return None
        everyone, own = counts
        return float(min(max(everyone - own, 0), len(self.cores)))

    def free_cores(self) -> int:
        """Cores no other process holds now (at least 1): where the system does not say, every core."""
        window = self.window()
        if window is None:
            return len(self.cores)
        return max(1, min(len(self.cores), round(window.free)))


_watch: CoreWatch | None = None
_watch_lock = threading.Lock()


def watch() -> CoreWatch:
    """This process's CoreWatch (one per process: its readings are of the machine, not of a run)."""
    global _watch
    with _watch_lock:
        if _watch is None:
            _watch = CoreWatch()
        return _watch
