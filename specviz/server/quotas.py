"""Each student's share of a class server: their tabs, their open runs and the memory those runs hold, counted per
student, so that one student's 28 tabs neither fill the server nor lock the class out (docs/class-server.md,
"Each student's share").

A student is what the app hands in as `student`: the browser (its tabs share one key; pages/_serving/compute.py says
which). The lecturer's session is exempt from every quota and goes first for memory: before the lecturer is refused a
run, the students' runs that have not stepped for longest are given back (`give_back(session)`, the page drops the run),
a student's idle runs first. A refusal names the student's own use only, never another session's.

Memory is counted as runs use it: a run's estimate (`RunMemory`, from its token counts and its models' KV bytes per
token, not a constant) is set against the operator's budget beside what the models hold, before the run starts; it
is released when the run ends or its tab closes (`reap`). What a model allocates for a run's sessions when they open
(llama.cpp's contexts and buffers, counted by the store once open) is counted by the run until its sessions are open
(`opened`), and by the store after: never twice, never missed in between.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from specviz.class_policy import RefusedError

GB = 1e9
TOP_ENTRY_BYTES = 200  # one (token, probability, text) entry of a step's top-n lists, as Python objects


def browser_token(cookie: str) -> str:
    """The token a Tornado XSRF cookie holds, unmasked ("2|mask|masked token|time": the same token whatever mask it
    was written with), or the cookie itself in another form."""
    parts = cookie.split("|")
    with contextlib.suppress(ValueError, ZeroDivisionError):
        if len(parts) == 4 and parts[0] == "2":
            mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
            return bytes(b ^ mask[i % len(mask)] for i, b in enumerate(masked)).hex()
    return cookie


def kv_bytes_per_token(model: Any, depth: int = 4) -> int:
    """The KV cache bytes one token takes in `model`: llama.cpp's own figure (its float32 K and V per layer and KV
    head), or a transformers model's from its config and dtype (layers × 2 × KV heads × head dim × bytes), looked for
    through wrappers (`.model`: specviz's HFModel, a typed draft); 0 for a model that keeps no cache (prompt lookup, a
    table, a served model)."""
    if (own := getattr(model, "kv_bytes_per_token", None)) is not None:
        return int(own)
    config = getattr(model, "config", None)
    if config is None or not hasattr(config, "num_hidden_layers"):
        inner = getattr(model, "model", None)
        return kv_bytes_per_token(inner, depth - 1) if inner is not None and inner is not model and depth else 0
    config = getattr(config, "text_config", None) or config
    layers = getattr(config, "num_hidden_layers", 0) or 0
    heads = getattr(config, "num_attention_heads", 0) or 0
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or (config.hidden_size // heads if heads else 0)
    size = getattr(getattr(model, "dtype", None), "itemsize", 4) or 4
    return int(layers * 2 * kv_heads * head_dim * size)


@dataclass(frozen=True, kw_only=True)
class RunMemory:
    """What one run holds, estimated before it starts: `kv` the KV caches that grow as it goes (torch's, target and
    draft), `rest` what else grows with it (one pass's kept logits, its trace's top-n lists), `opens` what its models
    allocate when its sessions open (llama.cpp: a context of its own with its buffers, or the shared batched context
    where this run opens it; ModelPair.opening_bytes), which the store counts from then on."""

    kv: int
    rest: int
    opens: int = 0

    @property
    def total(self) -> int:
        return self.kv + self.rest + self.opens

    @property
    def grows(self) -> int:
        """What the budget counts for it beside the store's count once its sessions are open."""
        return self.kv + self.rest


def run_memory(
    *,
    prompt_tokens: int,
    max_new_tokens: int,
    tau: int,
    target_kv: int,
    draft_kv: int,
    vocab: int,
    top: int = 10,
    opens: int = 0,
) -> RunMemory:
    """A run's memory from its real sizes; `tau`: the draft positions a step scores (SpecConfig.scored_per_step: a
    tree's nodes). Its growing caches (`target_kv`, `draft_kv`: bytes a token, 0 for a model whose sessions are
    sized when they open: those are `opens`) hold the prompt, the new tokens and a draft's τ + 1 positions past them.
    A step keeps τ + 1 rows of float32 logits from each model while it decides, and its trace keeps, per position,
    the top-n of q, p and the residual (`top` entries of TOP_ENTRY_BYTES); a run makes at most `max_new_tokens`
    steps."""
    tokens = prompt_tokens + max_new_tokens + tau + 1
    kv = tokens * (target_kv + draft_kv)
    logits = 2 * (tau + 1) * vocab * 4
    trace = max_new_tokens * (tau + 1) * 3 * top * TOP_ENTRY_BYTES
    return RunMemory(kv=kv, rest=logits + trace, opens=opens)


@dataclass
class _Session:
    student: Hashable
    lecturer: bool
    run: RunMemory | None = None
    used: float = 0.0  # when its run last started or stepped
    open: bool = False  # its run's sessions are open: what they allocated is in the store's count

    @property
    def counts(self) -> int:
        """What its run adds to the store's count."""
        run = self.run
        return 0 if run is None else run.grows + (0 if self.open else run.opens)


@dataclass
class Quotas:
    """The sessions and runs of a class server, per student. `sessions`, `runs`: the most tabs and open runs one
    student has (None: no bound); `budget_bytes`: what the models and the runs may hold together (None: no bound);
    `held()`: what the models hold now (the pair store's count); `give_back(session)`: drop that session's run (the
    page's Stepper forgets its decoder), called for a student's run the lecturer's needs the memory of."""

    sessions: int | None = None
    runs: int | None = None
    budget_bytes: int | None = None
    held: Callable[[], int] = lambda: 0
    give_back: Callable[[Hashable], None] = lambda session: None
    idle_s: float = 60.0  # a run not stepped for this long is idle: given back before any other
    clock: Callable[[], float] = time.monotonic
    _sessions: dict[Hashable, _Session] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    # --- sessions -------------------------------------------------------------------------------------

    def open_session(self, session: Hashable, student: Hashable, lecturer: bool = False) -> None:
        """A tab opened (a session's first run); RefusedError when the student has their most open already."""
        with self._lock:
            if session in self._sessions:
                return
            mine = self._mine(student)
            if not lecturer and self.sessions is not None and len(mine) >= self.sessions:
                raise RefusedError(
                    f"class mode: you have {len(mine)} tabs of this app open already, the most one student may "
                    f"have ({self.sessions}), so that the server stays quick for the whole class. Close one of "
                    "them, then reload this one."
                )
            self._sessions[session] = _Session(student, lecturer)

    def close_session(self, session: Hashable) -> None:
        """A tab closed: its run's memory is given back to the budget."""
        with self._lock:
            self._sessions.pop(session, None)

    def reap(self, alive: Callable[[Hashable], bool]) -> int:
        """Forget every session that is no longer open (`alive(session)` false), its run given back at once (the page
        drops it: its memory is freed now, not when Streamlit lets the closed session go); returns how many."""
        with self._lock:
            gone = [(k, s) for k, s in self._sessions.items() if not alive(k)]
            for key, session in gone:
                del self._sessions[key]
                if session.run is not None:
                    self.give_back(key)
            return len(gone)

    # --- runs -----------------------------------------------------------------------------------------

    def start_run(self, session: Hashable, memory: RunMemory) -> RunMemory | None:
        """Before a session starts a run (replacing its own run, if any): within the student's open runs, and its
        memory within the budget beside what the models and the other runs hold. For the lecturer, students' runs
        are given back first (the idle ones, then the least recently stepped); RefusedError otherwise, naming the
        student's own use. Returns the run it replaced, for `restore_run` if the new one then fails to start."""
        with self._lock:
            me = self._sessions.get(session)
            if me is None:  # a session the app did not open (a script, a test): counted from now
                raise RefusedError("this session is not registered with the class server: reload the page")
            mine = [s for s in self._mine(me.student) if s.run is not None and s is not me]
            if not me.lecturer and self.runs is not None and len(mine) >= self.runs:
                raise RefusedError(
                    f"class mode: you have {len(mine)} runs open in your other tabs, the most one student may have "
                    f"({self.runs}). Close a tab you no longer use, then start this one."
                )
            previous, me.run = me.run, None  # this session's own run is replaced: its memory is free for the new
            try:
                self._fit(me, memory)
            except RefusedError:
                me.run = previous
                raise
            me.run, me.used, me.open = memory, self.clock(), False
            return previous

    def restore_run(self, session: Hashable, run: RunMemory | None) -> None:
        """A run `start_run` counted did not start (its prompt could not be read, a draft failed): the session holds
        the run it had before (the page keeps it, its sessions open), or none."""
        with self._lock:
            if (me := self._sessions.get(session)) is not None:
                me.run, me.open = run, True

    def opened(self, session: Hashable) -> None:
        """The session's run has opened its sessions: the store counts what they allocated from now on."""
        with self._lock:
            if (me := self._sessions.get(session)) is not None:
                me.open = True

    def touch(self, session: Hashable) -> None:
        """A session's run stepped: it is in use."""
        with self._lock:
            if (me := self._sessions.get(session)) is not None:
                me.used = self.clock()

    def end_run(self, session: Hashable) -> None:
        with self._lock:
            if (me := self._sessions.get(session)) is not None:
                me.run = None

    def runs_bytes(self) -> int:
        """What the open runs add to the store's count."""
        with self._lock:
            return sum(s.counts for s in self._sessions.values())

    def use(self, student: Hashable) -> tuple[int, int, int]:
        """(tabs, open runs, bytes of those runs) of one student."""
        with self._lock:
            mine = self._mine(student)
            runs = [s.run for s in mine if s.run is not None]
            return len(mine), len(runs), sum(r.total for r in runs)

    def _mine(self, student: Hashable) -> list[_Session]:
        return [s for s in self._sessions.values() if s.student == student and not s.lecturer]

    def _fit(self, me: _Session, memory: RunMemory) -> None:
        if self.budget_bytes is None:
            return
        while True:
            held, runs = self.held(), self.runs_bytes()
            if held + runs + memory.total <= self.budget_bytes:
                return
            victim = self._victim(me)
            if victim is None:
                _, count, own = self.use(me.student)
                own_words = (
                    f"your {count} other open run{'s' if count != 1 else ''} hold about {own / GB:.2f} GB"
                    if count and not me.lecturer
                    else "you have no other run open"
                )
                raise RefusedError(
                    f"Cannot start this run: it needs about {memory.total / GB:.2f} GB, and the server's models and "
                    f"the class's open runs already hold {(held + runs) / GB:.1f} GB of the "
                    f"{self.budget_bytes / GB:.1f} GB its operator allows; {own_words}. Try a shorter prompt or "
                    "fewer new tokens, close a tab you no longer use, or try again in a minute."
                )
            key = next(k for k, s in self._sessions.items() if s is victim)
            victim.run = None
            self.give_back(key)

    def _victim(self, me: _Session) -> _Session | None:
        """Whose run gives its memory back for `me`'s: a student's idle run (the longest idle first); for the
        lecturer, any student's run (the least recently stepped first). None: nobody's."""
        now = self.clock()
        runs = [s for s in self._sessions.values() if s.run is not None and not s.lecturer]
        runs.sort(key=lambda s: s.used)
        for s in runs:
            if now - s.used >= self.idle_s and s is not me:
                return s
        if me.lecturer:
            return next(iter(runs), None)
        return None
