"""The Decode page's controls as a plain state machine: Step, Run to end, Back and Reset, queued as
they are clicked and taken in order.

Why a queue: Streamlit answers a click by running the page's script again, and a click that arrives
while a run is still drawing stops that run at its next widget, often before it has stepped. Clicked
quickly, twelve Steps gave one step and no word of the other eleven. A button's `on_click` callback
runs at the start of every run, before anything can stop it, so `press` (the callback) queues each
click, and `process` takes the queue in order, removing an action only once it has been done: a run
stopped halfway goes on where it stopped, and every click is one action.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

Action = Literal["step", "run", "back", "reset"]
ACTIONS: tuple[Action, ...] = ("step", "run", "back", "reset")


@dataclass(frozen=True)
class Note:
    kind: Literal["info", "toast"]
    text: str


KEY = "decode_stepper"  # the Decode page's Stepper in a browser session's state


class RunSettings(NamedTuple):
    """What a Decode run was started with, by name: a new run starts when any of it changes (the specs compare by
    value: a found file's spec equals the same file written out; a new runtime is a new run)."""

    target: Any  # its ModelSpec, None where the sidebar has no pair
    draft: Any
    runtime: str | None
    prompt: str
    chat: bool
    config: Any  # its SpecConfig


@dataclass(frozen=True, kw_only=True)
class LiveRun:
    """The live form of the page's run: the settings it runs with, how a new run starts (`start`: a Decoder, or None
    when it cannot: the page says why), how one Step is taken (`step`: False when it failed: the page says why), Run to
    end's steps (`run_step`, default `step`: a server gives them a heavy job's turns) and what waits before each Step
    (`pace`: a class server's Steps a second)."""

    settings: Hashable
    start: Callable[[], Any]
    step: Callable[[Any], bool]
    run_step: Callable[[Any], bool] | None = None
    pace: Callable[[], Any] | None = None


@dataclass(frozen=True, kw_only=True)
class ReplayRun:
    """The replay form: a loaded trace (specviz.classroom.replay.Replay) stepped through; it starts and computes
    nothing."""

    trace: Any


@dataclass
class Stepper:
    """One browser session's run on the Decode page (a live decoder, or a replayed trace), and the clicks
    waiting for it; `process` takes them on the run's live or replay form (LiveRun, ReplayRun)."""

    decoder: Any = None  # the live run: a specviz.Decoder
    settings: Hashable = None  # the settings it was started with
    queue: list[Action] = field(default_factory=list)
    taken: int = 0  # actions taken since the queue was last empty
    given_back: bool = False  # the server took the run back for memory (a class server): the page says so once

    def give_back(self) -> None:
        """The server needs the run's memory (another session's run, the lecturer's): drop it; the next Step starts a
        new one, and the page says why once."""
        self.decoder, self.settings, self.given_back = None, None, True

    def press(self, action: Action) -> None:
        """A click: queued, never lost (a button's on_click)."""
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}")
        self.queue.append(action)

    def stale(self, settings: Hashable) -> bool:
        """The settings changed since this run started: the next Step starts a new run."""
        return self.decoder is not None and self.settings != settings

    def process(self, run: LiveRun | ReplayRun, progress: Callable[[int, int], None] | None = None) -> list[Note]:
        """Take every queued action in order, on the replay if `run` is one, else on the live run (a new one where
        there is none or its settings changed). `progress(tokens, limit)` is told after each of Run to end's steps."""
        notes: list[Note] = []
        while self.queue:
            if isinstance(run, LiveRun) and run.pace is not None and self.queue[0] == "step":
                run.pace()
            if not self._do(self.queue[0], run, progress, notes):
                self.queue.clear()  # a failure: the page shows it; the clicks after it are dropped, and said so
                break
            self.queue.pop(0)
            self.taken += 1
        if self.taken > 1:
            notes.append(Note("toast", f"{self.taken} clicks taken, one after another."))
        self.taken = 0
        return list(dict.fromkeys(notes))  # a note said once, however many clicks met it

    def open_link(self, live: LiveRun, steps: int) -> None:
        """A shared link: a new run with its settings, and its number of steps taken, each as a click's would be:
        `pace` before each (the session's Steps a second, the clicks' own), `step` in its turn (it stops the link's
        steps by returning False, as when its session has ended)."""
        if self._start(live):
            while len(self.decoder.steps) < steps and not self.decoder.done:
                if live.pace is not None:
                    live.pace()
                if not live.step(self.decoder):
                    break

    def _start(self, live: LiveRun) -> bool:
        decoder = live.start()
        if decoder is None:
            return False
        self.decoder, self.settings = decoder, live.settings
        return True

    def _do(self, action: Action, form: LiveRun | ReplayRun, progress, notes: list[Note]) -> bool:
        replay = form.trace if isinstance(form, ReplayRun) else None
        run = replay if replay is not None else self.decoder
        if action == "reset":
            if replay is not None:
                replay.cursor = 0
                return True
            return self._start(form)
        if action in ("step", "run") and replay is None and (run is None or self.stale(form.settings)):
            if not self._start(form):
                return False
            run = self.decoder
        if run is None:
            return True
        if action == "back":
            if run.undo() is None:
                notes.append(Note("toast", "Already at the start of the run."))
            return True
        if run.done:
            notes.append(Note("info", f"This run has finished ({run.stop_reason}). Press **Reset** to start again."))
            return True
        if action == "step":
            if replay is not None:
                replay.step()
                return True
            return form.step(run)
        while not run.done:  # Run to end: a step at a time (a stopped run goes on from where it is)
            if replay is not None:
                run.step()
            elif not (form.run_step or form.step)(run):
                return False
            if progress is not None:
                progress(len(run.new_tokens), run.config.max_new_tokens)
        return True


def session_stepper(state: MutableMapping[str, Any]) -> Stepper:
    """The Decode page's Stepper in a browser session's `state` (Streamlit's session_state, handed in), made there the
    first time: the one typed way every page reaches the Decode run."""
    return state.setdefault(KEY, Stepper())


def held_stepper(state: Mapping[str, Any]) -> Stepper | None:
    """The session's Stepper if the Decode page made one (another page reading the Decode run: None before)."""
    return state.get(KEY)
