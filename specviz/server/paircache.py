"""The pairs a server holds, shared by every session: the class's default pair always loaded, the others bounded.

Models are shared objects (one copy, every session uses it). A student who asks for a pair nobody else uses
makes the server load it; left alone that would let a few students evict the default pair everyone uses, or
fill the memory. Here the default pair is pinned (never evicted), at most `most` others are held, and the
least recently used one is evicted only once nobody has asked for it for `idle_s` seconds; when every slot is
in use, a new pair is refused with a message that names the pairs held. A pair is loaded once even when
several sessions ask for it at the same moment.

Memory, not only a count: pairs share their parts through a `ModelStore` (one copy of the target however many
drafts run with it), an evicted pair is closed (its parts nobody else uses freed at once, then `released()`), and
with a budget a pair whose new parts would take the store past it evicts idle pairs first, or is refused with the
numbers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from specviz.models.pair import ModelPair
from specviz.models.store import ModelStore
from specviz.server.class_policy import RefusedError
from specviz.specs import ModelSpec

Spec = str | ModelSpec
Key = tuple[Spec, Spec, str]  # (target, draft, runtime): the app keys on parsed specs, which compare by value


class PairCache:
    def __init__(
        self,
        load: Callable[[Spec, Spec, str], ModelPair],
        pinned: Callable[[Key], bool],
        most: int = 3,
        idle_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        *,
        store: ModelStore | None = None,
        budget_bytes: int | None = None,
        estimate: Callable[[Key], list[tuple[tuple, int]]] | None = None,
        released: Callable[[], None] | None = None,
    ) -> None:
        """`store`: where the pairs' parts are (what the budget counts); `budget_bytes`: the most they may hold
        (None: no bound); `estimate(key)`: the parts a pair would take with their estimated bytes
        (specviz.loading.planned_parts); `released()`: called after an evicted pair was closed (the app collects
        and returns the memory)."""
        self._load, self._pinned, self.most, self.idle_s, self._clock = load, pinned, most, idle_s, clock
        self.store, self.budget_bytes, self._estimate, self._released = store, budget_bytes, estimate, released
        self._pairs: dict[Key, ModelPair] = {}
        self._used: dict[Key, float] = {}
        self._lock = threading.Lock()
        self._loading: dict[Key, threading.Lock] = {}

    def get(self, target: Spec, draft: Spec, runtime: str) -> ModelPair:
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
                    self._close(self._make_room())
                self._make_memory(key)
            pair = self._load(target, draft, runtime)
            with self._lock:
                self._pairs[key] = pair
                self._used[key] = self._clock()
                self._loading.pop(key, None)
            return pair

    def _idle(self) -> list[Key]:
        """Pairs that may be evicted, the least recently used first."""
        now = self._clock()
        idle = [k for k in self._pairs if not self._pinned(k) and now - self._used[k] >= self.idle_s]
        return sorted(idle, key=self._used.__getitem__)

    def _make_room(self) -> list[ModelPair]:
        others = [k for k in self._pairs if not self._pinned(k)]
        if len(others) < self.most:
            return []
        idle = self._idle()
        if not idle:
            held = "; ".join(f"{t} + {d} ({r})" for t, d, r in others)
            raise RefusedError(
                f"this server holds its most pairs besides the default ({self.most}: {held}) and each was used in the "
                f"last {self.idle_s:.0f} s. Use one of them, the default pair, or try again in a minute."
            )
        return [self._evict(idle[0])]

    def room_for_run(self, more: int = 0) -> None:
        """Before a run starts: what the store holds now (the runs' own KV caches included: llama.cpp counts every
        context it opened) and the `more` bytes the run is estimated to add, against the budget like a pair's parts:
        idle pairs given back first; RefusedError with the numbers when it still would not fit."""
        with self._lock:
            self._fit(lambda held: more, "a new run", "The runs open hold it: try again in a minute.")

    def _make_memory(self, key: Key) -> None:
        """Evict idle pairs until the parts `key` would add fit the budget; refuse, with the numbers, when they
        cannot."""
        if self._estimate is not None:
            needed = lambda held: sum(size for part, size in self._estimate(key) if part not in held)  # noqa: E731
            self._fit(needed, "this pair", "Use one of them, or try again in a minute.")

    def _fit(self, needed_of: Callable[[set], int], what: str, advice: str) -> None:
        if self.budget_bytes is None or self.store is None:
            return
        while True:
            held = {part.key: part.bytes for part in self.store.parts()}
            needed = needed_of(set(held))
            total = sum(held.values())
            if total + needed <= self.budget_bytes:
                return
            idle = self._idle()
            if not idle:
                gb = 1e9
                pairs = "; ".join(f"{t} + {d} ({r})" for t, d, r in self._pairs) or "none"
                raise RefusedError(
                    f"{what} needs about {needed / gb:.1f} GB more memory; the server's models hold "
                    f"{total / gb:.1f} GB of the {self.budget_bytes / gb:.1f} GB its operator allows (pairs: {pairs}), "
                    f"and each was used in the last {self.idle_s:.0f} s. {advice}"
                )
            self._close([self._evict(idle[0])])  # freed now: the store's count falls

    def _evict(self, key: Key) -> ModelPair:
        pair = self._pairs.pop(key)
        del self._used[key]
        return pair

    def _close(self, pairs: list[ModelPair]) -> None:
        """Close evicted pairs (their parts no other pair holds are freed) and let the app return the memory."""
        for pair in pairs:
            pair.close()
        if pairs and self._released is not None:
            self._released()

    def close(self) -> None:
        """Close every pair held (a server shutting down, a test)."""
        with self._lock:
            pairs = list(self._pairs.values())
            self._pairs.clear()
            self._used.clear()
        self._close(pairs)

    def held(self) -> list[Key]:
        with self._lock:
            return list(self._pairs)
