"""Whether another process holds this machine's cores now, and where a time was measured.

A clock in this app is wall time: where another process takes a core this app's passes need, each waits for it a
share of the time, and the wait is counted as if it were work (issue 47: the target alone at 4.4 tokens/s instead
of ~30, a race 12.4× faster). The signal is the one every timed piece carries (specviz.analysis.clock): the cores
other processes kept busy over the last few tenths of a second (specviz.models.cpu.CoreWatch), not the one-minute
load average, which lags a minute and counts this app's own threads. A page shows the notice wherever a live time
is on screen (the numbers are handed in: nothing here reads a page's state).
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from pathlib import Path

from specviz.models import cpu

# Another process holding half a core or more: a pass on every core waits at its barriers for it (llama.cpp's two
# threads: 2.4× slower and worse), and any time measured then says more about that process than about the models.
BUSY_OTHERS = 0.5


@dataclass(frozen=True)
class MachineLoad:
    others: float  # the cores other processes kept busy, in the last few tenths of a second
    cores: int  # the cores this process may run on

    @property
    def busy(self) -> bool:
        return self.others >= BUSY_OTHERS

    def notice(self) -> str | None:
        """The page's warning where timings are not reliable, else None."""
        return busy_notice(self.others, self.cores)

    def words(self) -> str:
        """'no other process on its 2 cores' or 'other processes on 1.0 of its 2 cores'."""
        plural = "s" if self.cores != 1 else ""
        if not self.busy:
            return f"no other process on its {self.cores} core{plural}"
        return f"other processes on {self.others:.1f} of its {self.cores} core{plural}"


def busy_notice(others: float, cores: int) -> str | None:
    """ "This server is busy (other processes keep X of C cores busy): timings are not reliable", with why, where
    other processes held BUSY_OTHERS of a core or more; None below it."""
    if cores < 1 or others < BUSY_OTHERS:
        return None
    return (
        f"**This server is busy** (other processes keep {others:.1f} of its {cores} core{'s' if cores > 1 else ''} "
        "busy): timings are not reliable. The passes here wait for a core while those processes hold it, so every "
        "clock also counts time spent waiting; a time measured now is timed again or withheld, and one that got "
        "through may still be off. Measure again when it is quieter."
    )


def current_load() -> MachineLoad | None:
    """The cores other processes hold now (specviz.models.cpu.CoreWatch), or None where the system does not say."""
    watch = cpu.watch()
    window = watch.window()
    return None if window is None else MachineLoad(window.others, window.cores)


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
    at = "" if load is None else f", {load.words()}"
    return f"timed just now on {runtime}, {machine()}{at}"
