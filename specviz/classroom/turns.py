"""Taking turns at the CPU: one compute-heavy call at a time, in order of arrival.

Every browser session of one app server runs in its own thread and shares the same models. Left
alone, their forward passes contend for the same few cores (and the GIL) and every session's step
gets slow at once; served one step at a time, first come first served, a session waits at most for
the steps queued before its own. README ("Many sessions on one server") has the measurements.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TypeVar

T = TypeVar("T")
_DONE = object()


def each_in_turn(items: Iterator[T], turn: Callable[[], AbstractContextManager]) -> Iterator[T]:
    """The items of a generator that computes each one (a sweep unit, a trial), each computed
    inside a turn of its own: others step in between, and each item's timing is its own."""
    while True:
        with turn():
            item = next(items, _DONE)
        if item is _DONE:
            return
        yield item


class Turns:
    """A fair (FIFO) lock: `with turns:` waits for every holder that asked earlier (a ticket lock;
    a plain threading.Lock lets the thread that just released it take it again at once)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next = 0  # the ticket the next arrival draws
        self._serving = 0  # the ticket whose turn it is

    def __enter__(self) -> Turns:
        with self._cond:
            ticket = self._next
            self._next += 1
            while ticket != self._serving:
                self._cond.wait()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        with self._cond:
            self._serving += 1
            self._cond.notify_all()

    @property
    def waiting(self) -> int:
        """Callers holding or waiting for a turn."""
        with self._cond:
            return self._next - self._serving
