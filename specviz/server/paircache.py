"""The pairs a server holds, shared by every session: the class's default pair always loaded, the others bounded.

Models are shared objects (one copy, every session uses it). A student who asks for a pair nobody else uses
makes the server load it; left alone that would let a few students evict the default pair everyone uses, or
fill the memory. Here the default pair is pinned (never evicted), at most `most` others are held, and the
least recently used one is evicted only once nobody has asked for it for `idle_s` seconds; when every slot is
in use, a new pair is refused with a message that names only the asking student's own (never another session's).
A pair is loaded once even when several sessions ask for it at the same moment.

Per student: a pair is held by the students who asked for it (`owner`), one student holds at most `per_owner`
places (asking for another gives their oldest back), and the lecturer (`lecturer=True`) is exempt and goes first:
when no place or memory is free for the lecturer's pair, a student's pair is given back (the idle ones first, then
the least recently used), never the lecturer's refused while a student holds one.

Memory, not only a count: pairs share their parts through a `ModelStore` (one copy of the target however many
drafts run with it), an evicted pair is closed (its parts nobody else uses freed at once, then `released()`), and
with a budget a pair whose new parts would take the store past it evicts idle pairs first, or is refused with the
numbers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable

from specviz.class_policy import RefusedError
from specviz.models.pair import ModelPair
from specviz.models.store import ModelStore
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
        per_owner: int | None = None,
        runs_bytes: Callable[[], int] | None = None,
    ) -> None:
        """`store`: where the pairs' parts are (what the budget counts); `budget_bytes`: the most they may hold
        (None: no bound); `estimate(key)`: the parts a pair would take with their estimated bytes
        (specviz.loading.planned_parts); `released()`: called after an evicted pair was closed (the app collects
        and returns the memory); `per_owner`: the places one student holds at most (None: no bound); `runs_bytes()`:
        what open runs hold beside the store's count (specviz.server.quotas), counted against the budget too."""
        self._load, self._pinned, self.most, self.idle_s, self._clock = load, pinned, most, idle_s, clock
        self.store, self.budget_bytes, self._estimate, self._released = store, budget_bytes, estimate, released
        self.per_owner, self.runs_bytes = per_owner, runs_bytes or (lambda: 0)
        self._pairs: dict[Key, ModelPair] = {}
        self._used: dict[Key, float] = {}
        self._owners: dict[Key, set] = {}  # the students who asked for each pair ("lecturer": the lecturer)
        self._lock = threading.Lock()
        self._loading: dict[Key, threading.Lock] = {}

    def get(
        self, target: Spec, draft: Spec, runtime: str, owner: Hashable | None = None, lecturer: bool = False
    ) -> ModelPair:
        """The pair, loaded if no session has it yet; RefusedError when every slot is held by a pair in use (an
        `owner`, a student, holding their most places gives their own oldest back first). The lecturer's (`lecturer`)
        is refused only when no student's pair can make room."""
        key = (target, draft, runtime)
        who = "lecturer" if lecturer else owner
        with self._lock:
            if key in self._pairs:
                return self._use(key, who)
            gate = self._loading.setdefault(key, threading.Lock())
        with gate:  # one load per pair, however many sessions ask at once
            with self._lock:
                if key in self._pairs:
                    return self._use(key, who)
                if not self._pinned(key):
                    self._close(self._release_own(who))
                    self._close(self._make_room(lecturer))
                self._make_memory(key, lecturer, who)
            pair = self._load(target, draft, runtime)
            with self._lock:
                self._pairs[key] = pair
                self._loading.pop(key, None)
                return self._use(key, who)

    def _use(self, key: Key, who: Hashable | None) -> ModelPair:
        self._used[key] = self._clock()
        if who is not None and not self._pinned(key):
            self._owners.setdefault(key, set()).add(who)
        return self._pairs[key]

    def _mine(self, who: Hashable | None) -> list[Key]:
        return [k for k, owners in self._owners.items() if who in owners and k in self._pairs]

    def _release_own(self, who: Hashable | None) -> list[ModelPair]:
        """A student who holds their most places and asks for another gives back their own oldest one: evicted when
        nobody else asked for it, else only no longer theirs. So one student's tabs of early-exit:2, :3 and :4 hold
        one place, not three."""
        if who is None or who == "lecturer" or self.per_owner is None:
            return []
        closed = []
        while len(mine := sorted(self._mine(who), key=self._used.__getitem__)) >= self.per_owner:
            oldest = mine[0]
            self._owners[oldest].discard(who)
            if not self._owners[oldest]:
                closed.append(self._evict(oldest))
        return closed

    def _idle(self) -> list[Key]:
        """Pairs that may be evicted, the least recently used first."""
        now = self._clock()
        idle = [k for k in self._pairs if not self._pinned(k) and now - self._used[k] >= self.idle_s]
        return sorted(idle, key=self._used.__getitem__)

    def _students(self) -> list[Key]:
        """For the lecturer: the pairs no lecturer's session asked for, the least recently used first."""
        held = [k for k in self._pairs if not self._pinned(k) and "lecturer" not in self._owners.get(k, ())]
        return sorted(held, key=self._used.__getitem__)

    def _victims(self, lecturer: bool) -> list[Key]:
        """What may give its place back: idle pairs; for the lecturer, then any student's pair."""
        idle = self._idle()
        return idle + [k for k in self._students() if k not in idle] if lecturer else idle

    def _make_room(self, lecturer: bool = False) -> list[ModelPair]:
        others = [k for k in self._pairs if not self._pinned(k)]
        if len(others) < self.most:
            return []
        victims = self._victims(lecturer)
        if not victims:
            raise RefusedError(
                f"this server holds its most pairs besides the default ({self.most}), each used in the last "
                f"{self.idle_s:.0f} s by the class. Use the default pair, or try again in a minute."
            )
        return [self._evict(victims[0])]

    def room_for_run(self, more: int = 0, lecturer: bool = False) -> None:
        """Before a run starts: what the store holds now (the runs' own KV caches included: llama.cpp counts every
        context it opened), what open runs hold beside it, and the `more` bytes the run is estimated to add, against
        the budget like a pair's parts: idle pairs given back first (for the lecturer, any student's); RefusedError
        with the numbers when it still would not fit."""
        with self._lock:
            self._fit(lambda held: more, "a new run", "The runs open hold it: try again in a minute.", lecturer)

    def held_bytes(self) -> int:
        """What the models hold now (the store's count)."""
        return self.store.total_bytes() if self.store is not None else 0

    def _make_memory(self, key: Key, lecturer: bool = False, who: Hashable | None = None) -> None:
        """Evict idle pairs (for the lecturer, students' pairs too) until the parts `key` would add fit the budget;
        refuse, with the numbers and the asker's own pairs, when they cannot."""
        if self._estimate is not None:
            needed = lambda held: sum(size for part, size in self._estimate(key) if part not in held)  # noqa: E731
            mine = "; ".join(_named(k) for k in self._mine(who)) if who not in (None, "lecturer") else ""
            advice = f"You hold {mine}: use it, or the default pair." if mine else "Use the default pair."
            self._fit(needed, "this pair", f"{advice} Or try again in a minute.", lecturer)

    def _fit(self, needed_of: Callable[[set], int], what: str, advice: str, lecturer: bool = False) -> None:
        if self.budget_bytes is None or self.store is None:
            return
        while True:
            held = {part.key: part.bytes for part in self.store.parts()}
            needed = needed_of(set(held))
            total = sum(held.values()) + self.runs_bytes()
            if total + needed <= self.budget_bytes:
                return
            victims = self._victims(lecturer)
            if not victims:
                gb = 1e9
                raise RefusedError(
                    f"{what} needs about {needed / gb:.1f} GB more memory; the server's models and the class's open "
                    f"runs hold {total / gb:.1f} GB of the {self.budget_bytes / gb:.1f} GB its operator allows, and "
                    f"every pair besides the default was used in the last {self.idle_s:.0f} s. {advice}"
                )
            self._close([self._evict(victims[0])])  # freed now: the store's count falls

    def _evict(self, key: Key) -> ModelPair:
        pair = self._pairs.pop(key)
        del self._used[key]
        self._owners.pop(key, None)
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
            self._owners.clear()
        self._close(pairs)

    def held(self) -> list[Key]:
        with self._lock:
            return list(self._pairs)


def _named(key: Key) -> str:
    target, draft, runtime = key
    return f"{target} + {draft} ({runtime})"
