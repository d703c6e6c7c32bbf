"""Taking turns at the CPU: one compute-heavy call at a time (or `width`), the class's Steps before the heavy jobs.

Every browser session of one app server runs in its own thread and shares the same models. Left
alone, their forward passes contend for the same few cores (and the GIL) and every session's step
gets slow at once; served one step at a time, a session waits at most for the turns queued before its
own. Turns come in three kinds, served in this order and first come first served within a kind: the
lecturer's (a session opened with the class's lecturer key), a student's Step, and a heavy job's unit (a
sweep's run, a lossless check's trials, a lesson, Run to end). A heavy job takes one unit per turn, so
the Steps of the class go between its units. README ("Many sessions on one server") has the measurements.

Also here: `Slots`, the heavy jobs that may run at once on the whole server (the others wait their turn,
first come first served), and `Pacer`, a session's Steps a second.

Work ends with the session that asked for it: a caller passes `alive` (whether its browser session is still open),
and a turn or a slot is never given to a session that has ended: it gives its place back (SessionEndedError) on
arrival or while it waits, so a job taken a turn at a time (a sweep's steps, a link's steps) stops at its next turn.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from types import TracebackType
from typing import Literal

from specviz.class_policy import RefusedError
from specviz.errors import SessionEndedError

Kind = Literal["lecturer", "step", "heavy"]
PRIORITY: dict[str, int] = {"lecturer": 0, "step": 1, "heavy": 2}
Waiting = Callable[[int, float], None]  # (turns ahead of this one, the expected wait in seconds)
Alive = Callable[[], bool]  # whether the browser session that asked is still open


def _check(alive: Alive | None) -> None:
    if alive is not None and not alive():
        raise SessionEndedError("the session that asked for this work has ended")


class Turns:
    """A fair lock with kinds: `with turns.take("step"):` waits for every holder of an earlier kind, and of
    its own kind for those that asked earlier (a ticket lock: a plain threading.Lock lets the thread that
    just released it take it again at once). `with turns:` is a Step's turn."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, width: int = 1, note_every: float = 1.0) -> None:
        self._cond = threading.Condition()
        self._queue: list[tuple[int, int]] = []  # (priority, ticket), a heap
        self._tickets = itertools.count()
        self._holders: set[tuple[int, int]] = set()
        self.width = width  # turns held at once (a class server whose llama.cpp passes share decodes: several)
        self._clock = clock
        self._mean = {kind: 0.0 for kind in PRIORITY}  # recent time a turn of each kind was held, seconds
        self._plain = threading.local()  # `with turns:` in each thread
        self._mine = threading.local()  # the turns this thread holds: a turn inside one it holds is not taken again
        # A waiter hears of a change at most this often (seconds): under a class every turn taken changes 80
        # waiters' places, and each redraw of a waiting note is a message from the server's one Python thread.
        self.note_every = note_every

    @contextlib.contextmanager
    def take(self, kind: Kind = "step", waiting: Waiting | None = None, alive: Alive | None = None) -> Iterator[Turns]:
        """Hold the turn; while others hold or come first, `waiting(ahead, seconds)` is told how many turns are
        ahead and about how long they take, each time that changes (from this caller's own thread). SessionEndedError,
        the place given back, once `alive()` is false: on arrival, or while it waits (checked each time it wakes). A
        thread that holds a turn already takes no second one (a page's opening turn around its model steps)."""
        _check(alive)
        if getattr(self._mine, "depth", 0):
            self._mine.depth += 1
            try:
                yield self
            finally:
                self._mine.depth -= 1
            return
        me = (PRIORITY[kind], next(self._tickets))
        said, said_at = None, -float("inf")
        with self._cond:
            heapq.heappush(self._queue, me)
            self._cond.notify_all()  # those waiting hear one more ahead of them at once
        try:
            while True:
                _check(alive)
                with self._cond:
                    if self._took(me):
                        break
                    ahead = [t for t in self._queue if t < me] + sorted(self._holders)
                    if waiting is None or len(ahead) == said:
                        self._cond.wait(0.25)
                        continue
                    if (since := time.monotonic() - said_at) < self.note_every:  # said a moment ago: later
                        self._cond.wait(self.note_every - since)
                        continue
                    eta = sum(self._mean[_kind(t)] for t in ahead) / self.width
                said, said_at = len(ahead), time.monotonic()
                waiting(said, eta)  # outside the lock: it may draw on the page
        except BaseException:  # a rerun stopped this session while it waited: give up its place
            self._give_up(me)
            raise
        start = self._clock()
        self._mine.depth, self._mine.ticket = 1, me
        try:
            yield self
        finally:
            self._mine.depth, self._mine.ticket = 0, None
            with self._cond:
                self._holders.discard(me)
                name = _kind(me)
                self._mean[name] = 0.8 * self._mean[name] + 0.2 * (self._clock() - start)
                self._cond.notify_all()

    def make_way(self, alive: Alive | None = None) -> float:
        """From a thread that holds a turn, between two parts of its work (a long prompt's passes, a page opening's
        model work): while the lecturer's turn is held or waits, give this one back and wait; then take it back,
        ahead of the turns of its own kind that came after it. Only the lecturer's: a heavy job makes no way for
        students' Steps here (they already go before it in the queue; in a class that steps all the time it would
        never go on). The seconds it waited; none where this thread holds no turn, holds the lecturer's, or no
        lecturer's turn is there. SessionEndedError, the place given up, once `alive()` is false while it waits."""
        me = getattr(self._mine, "ticket", None)
        if me is None:
            return 0.0
        with self._cond:
            if not self._earlier(me):
                return 0.0
            self._holders.discard(me)
            heapq.heappush(self._queue, me)
            self._cond.notify_all()
        start = time.monotonic()
        try:
            while True:
                _check(alive)
                with self._cond:
                    if not self._earlier(me) and self._took(me):
                        return time.monotonic() - start
                    self._cond.wait(0.25)
        except BaseException:
            self._give_up(me)
            self._mine.ticket = None  # the turn is given up: its holder's exit has nothing to give back
            raise

    def _took(self, me: tuple[int, int]) -> bool:
        """(Holding the lock.) `me` is first in the queue and a turn is free: it holds one now."""
        if len(self._holders) < self.width and self._queue[0] == me:
            heapq.heappop(self._queue)
            self._holders.add(me)
            return True
        return False

    def _give_up(self, me: tuple[int, int]) -> None:
        """`me`'s place in the queue given up, and those waiting told."""
        with self._cond:
            if me in self._queue:
                self._queue.remove(me)
                heapq.heapify(self._queue)
            self._cond.notify_all()

    def _earlier(self, me: tuple[int, int]) -> bool:
        """(Holding the lock.) The lecturer's turn is held or waits, and `me` is not the lecturer's."""
        first = PRIORITY["lecturer"]
        return me[0] > first and any(t[0] == first for t in (*self._holders, *self._queue))

    def __enter__(self) -> Turns:
        self._plain.held = self.take("step")
        return self._plain.held.__enter__()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._plain.held.__exit__(exc_type, exc, tb)

    @property
    def waiting(self) -> int:
        """Callers holding or waiting for a turn."""
        with self._cond:
            return len(self._queue) + len(self._holders)


def _kind(ticket: tuple[int, int]) -> str:
    return next(k for k, p in PRIORITY.items() if p == ticket[0])


class Slots:
    """At most `most` heavy jobs at once (None: no bound); the others wait, first come first served. A job names its
    `owner` (a client's address): one owner has at most `per_owner` jobs running or waiting, and at most `waiting_most`
    jobs wait in all; past either, a new job is refused (RefusedError) instead of queued, so a student who starts a
    sweep in every tab neither fills the queue nor keeps the class's jobs waiting behind theirs. A job may name more
    owners, each with its own bound (`owners`: the student's browser and its address, say)."""

    def __init__(self, most: int | None, per_owner: int | None = None, waiting_most: int | None = None) -> None:
        self.most, self.per_owner, self.waiting_most = most, per_owner, waiting_most
        self._cond = threading.Condition()
        self._queue: list[int] = []
        self._running = 0
        self._tickets = itertools.count()
        self._owners: dict[Hashable, int] = {}  # owner → jobs running or waiting

    def _admit(self, owners: dict[Hashable, int | None]) -> None:
        """Count the job in (under the lock), or refuse it with why."""
        for owner, most in owners.items():
            if most is not None and self._owners.get(owner, 0) >= most:
                raise RefusedError(
                    f"class mode: you already have {most} heavy job{'s' if most != 1 else ''} (a sweep, a lossless "
                    "check, a lesson or a race) running or waiting, maybe in another tab; wait for it to finish, or "
                    "stop it, then start this one."
                )
        if self.waiting_most is not None and len(self._queue) >= self.waiting_most:
            raise RefusedError(
                f"class mode: {len(self._queue)} heavy jobs already wait for this server; try again in a minute "
                "(Steps are not affected)."
            )
        for owner in owners:
            self._owners[owner] = self._owners.get(owner, 0) + 1

    def _leave(self, owners: dict[Hashable, int | None]) -> None:
        for owner in owners:
            self._owners[owner] -= 1
            if not self._owners[owner]:
                del self._owners[owner]

    @contextlib.contextmanager
    def hold(
        self,
        waiting: Callable[[int], None] | None = None,
        owner: Hashable | None = None,
        alive: Alive | None = None,
        owners: dict[Hashable, int | None] | None = None,
    ) -> Iterator[None]:
        """A slot for one heavy job; `waiting(ahead)` hears how many jobs run or wait before this one. RefusedError
        when `owner` holds its most jobs already (`per_owner`; or any of `owners`, each its own most), or the queue is
        full; SessionEndedError (the place given back) once `alive()` is false, on arrival or while it waits."""
        _check(alive)
        if self.most is None:
            yield
            return
        owners = {**({owner: self.per_owner} if owner is not None else {}), **(owners or {})}
        me, said = next(self._tickets), None
        with self._cond:
            self._admit(owners)
            self._queue.append(me)
        try:
            while True:
                _check(alive)
                with self._cond:
                    if self._running < self.most and self._queue[0] == me:
                        self._queue.pop(0)
                        self._running += 1
                        break
                    ahead = self._queue.index(me) + self._running
                    if waiting is None or ahead == said:
                        self._cond.wait(0.25)
                        continue
                said = ahead
                waiting(ahead)
        except BaseException:
            with self._cond:
                if me in self._queue:
                    self._queue.remove(me)
                self._leave(owners)
                self._cond.notify_all()
            raise
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._leave(owners)
                self._cond.notify_all()


class Pacer:
    """A session's Steps, at most `rate` a second (None: no bound): `wait()` sleeps until the next is due."""

    def __init__(self, rate: float | None, clock: Callable[[], float] = time.monotonic, sleep=time.sleep) -> None:
        self.rate, self._clock, self._sleep = rate, clock, sleep
        self._last: float | None = None

    def wait(self) -> float:
        """Sleep until a Step is due; returns the seconds slept."""
        if not self.rate:
            return 0.0
        now = self._clock()
        slept = 0.0
        if self._last is not None and (due := self._last + 1.0 / self.rate) > now:
            slept = due - now
            self._sleep(slept)
        self._last = self._clock()
        return slept
