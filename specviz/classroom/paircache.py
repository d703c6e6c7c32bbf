"""The pairs a server holds, shared by every session: the class's default pair always loaded, the others bounded.

Models are shared objects (one copy, every session uses it). A student who asks for a pair nobody else uses
makes the server load it; left alone that would let a few students evict the default pair everyone uses, or
fill the memory. Here the default pair is pinned (never evicted), at most `most` others are held, and the
least recently used one is evicted only once nobody has asked for it for `idle_s` seconds; when every slot is
in use, a new pair is refused with a message that names the pairs held. A pair is loaded once even when
several sessions ask for it at the same moment.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from specviz.models.pair import ModelPair
from specviz.policy import RefusedError

Key = tuple[str, str, str]  # (target, draft, runtime)


class PairCache:
    def __init__(
        self,
        load: Callable[[str, str, str], ModelPair],
        pinned: Callable[[Key], bool],
        most: int = 3,
        idle_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load, self._pinned, self.most, self.idle_s, self._clock = load, pinned, most, idle_s, clock
        self._pairs: dict[Key, ModelPair] = {}
        self._used: dict[Key, float] = {}
        self._lock = threading.Lock()
        self._loading: dict[Key, threading.Lock] = {}

    def get(self, target: str, draft: str, runtime: str) -> ModelPair:
        """The pair, loaded if no session has it yet; RefusedError when every slot is held by a pair in use."""
        key = (target, draft, runtime)
        with self._lock:
            if key in self._pairs:
                self._used[key] = self._clock()
                return self._pairs[key]
            gate = self._loading.setdefault(key, threading.Lock())
        with gate:  # one load per pair, however many sessions ask at once
            with self._lock:
                if key in self._pairs:
                    self._used[key] = self._clock()
                    return self._pairs[key]
                if not self._pinned(key):
                    self._make_room()
            pair = self._load(target, draft, runtime)
            with self._lock:
                self._pairs[key] = pair
                self._used[key] = self._clock()
                self._loading.pop(key, None)
            return pair

    def _make_room(self) -> None:
        others = [k for k in self._pairs if not self._pinned(k)]
        if len(others) < self.most:
            return
        now = self._clock()
        idle = [k for k in others if now - self._used[k] >= self.idle_s]
        if not idle:
            held = "; ".join(f"{t} + {d} ({r})" for t, d, r in others)
            raise RefusedError(
                f"this server holds its most pairs besides the default ({self.most}: {held}) and each was used in the "
                f"last {self.idle_s:.0f} s. Use one of them, the default pair, or try again in a minute."
            )
        oldest = min(idle, key=self._used.__getitem__)
        del self._pairs[oldest], self._used[oldest]

    def held(self) -> list[Key]:
        with self._lock:
            return list(self._pairs)
