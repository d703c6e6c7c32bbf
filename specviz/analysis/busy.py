"""Whether the machine was too busy for a time to mean anything, and where a time was measured.

A clock in this app is wall time: where more threads want to run than there are cores, each waits for a
core a share of the time, and the wait is counted as if it were work. Issue 47 saw it on a class server
with a second server on the same two cores: the target alone ran at 4.4 tokens/s instead of ~30, and the
race called speculation 12.4× faster. The load average says when that happens; a page shows the notice
wherever a live time is on screen (the numbers are handed in: nothing here reads a page's state).
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

# The 1-minute load average counts every thread that ran or waited for a core, this app's own included. While
# the app times something it keeps up to every core busy itself (llama.cpp runs a thread per core, up to 8), so
# a quiet machine that is measuring reads about 1 per core. Each thread beyond that makes some thread wait: at
# 1.5 per core a thread gets 2/3 of a core, so a time can read up to 1.5× its quiet value, as large as the
# differences the race, the sweep and the lessons are asked to tell apart (a draft that is 1.5× faster, or not).
# Below it the waiting that is left falls on both sides of a comparison alike, as they alternate step by step.
BUSY_PER_CORE = 1.5


@dataclass(frozen=True)
class MachineLoad:
    average: float  # the 1-minute load average: threads running or waiting for a core, this app's included
    cores: int  # os.cpu_count()

    @property
    def busy(self) -> bool:
        return self.average > BUSY_PER_CORE * self.cores

    def notice(self) -> str | None:
        """The page's warning where timings are not reliable, else None."""
        return busy_notice(self.average, self.cores)


def busy_notice(average: float, cores: int) -> str | None:
    """ "This server is busy (load L on C cores): timings are not reliable", with why, when the load average is
    above BUSY_PER_CORE threads per core; None below it."""
    if cores < 1 or average <= BUSY_PER_CORE * cores:
        return None
    return (
        f"**This server is busy** (load {average:.1f} on {cores} core{'s' if cores > 1 else ''}): timings are not "
        f"reliable. More threads want a core than there are cores, so every clock here also counts time spent "
        "waiting for one; times and speedups may be off by half or more. Measure again when it is quieter."
    )


def current_load() -> MachineLoad | None:
    """The load now (os.getloadavg), or None where the system does not say."""
    try:
        average = os.getloadavg()[0]
    except (OSError, AttributeError):
        return None
    return MachineLoad(average, os.cpu_count() or 1)


def machine() -> str:
    """This machine in words: its processor's name and core count."""
    name = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        name = next(
            (
                line.split(":", 1)[1].strip()
                for line in cpuinfo.read_text().splitlines()
                if line.startswith("model name")
            ),
            "",
        )
    return f"{name or platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def where_measured(runtime: str, load: MachineLoad | None = None) -> str:
    """Where a time on screen was measured, in words: the runtime, this machine and the load then, so that
    numbers from another prompt, machine or runtime (the README's, a snapshot's) are not read as the same."""
    at = "" if load is None else f", load {load.average:.1f}"
    return f"timed just now on {runtime}, {machine()}{at}"
