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

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Literal

Action = Literal["step", "run", "back", "reset"]
ACTIONS: tuple[Action, ...] = ("step", "run", "back", "reset")


@dataclass(frozen=True)
class Note:
    kind: Literal["info", "toast"]
    text: str


@dataclass
class Stepper:
    """One browser session's run on the Decode page (a live decoder, or a replayed trace), and the clicks
    waiting for it. `start` makes a new run with the page's settings (None when it cannot: the page says
    why); `step` takes one step (False when it failed: the page says why)."""

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

    def process(
        self,
        settings: Hashable,
        start: Callable[[], Any],
        step: Callable[[Any], bool],
        replay: Any = None,
        progress: Callable[[int, int], None] | None = None,
        run_step: Callable[[Any], bool] | None = None,
        pace: Callable[[], Any] | None = None,
    ) -> list[Note]:
        """Take every queued action in order, on the replay if one is loaded, else on the live run. `run_step`
        takes Run to end's steps (default: `step`; a server gives them a heavy job's turns); `pace` is called
        before each Step (a class server's Steps a second)."""
        notes: list[Note] = []
        while self.queue:
            if pace is not None and self.queue[0] == "step" and replay is None:
                pace()
            if not self._do(self.queue[0], settings, start, (step, run_step or step), replay, progress, notes):
                self.queue.clear()  # a failure: the page shows it; the clicks after it are dropped, and said so
                break
            self.queue.pop(0)
            self.taken += 1
        if self.taken > 1:
            notes.append(Note("toast", f"{self.taken} clicks taken, one after another."))
        self.taken = 0
        return list(dict.fromkeys(notes))  # a note said once, however many clicks met it

    def open_link(
        self,
        settings: Hashable,
        steps: int,
        start: Callable[[], Any],
        step: Callable[[Any], bool],
        pace: Callable[[], Any] | None = None,
    ) -> None:
        """A shared link: a new run with its settings, and its number of steps taken, each as a click's would be:
        `pace` before each (the session's Steps a second, the clicks' own), `step` in its turn (it stops the link's
        steps by returning False, as when its session has ended)."""
        if self._start(settings, start):
            while len(self.decoder.steps) < steps and not self.decoder.done:
                if pace is not None:
                    pace()
                if not step(self.decoder):
                    break

    def _start(self, settings: Hashable, start: Callable[[], Any]) -> bool:
        decoder = start()
        if decoder is None:
            return False
        self.decoder, self.settings = decoder, settings
        return True

    def _do(self, action: Action, settings: Hashable, start, steps, replay, progress, notes: list[Note]) -> bool:
        run = replay if replay is not None else self.decoder
        step, run_step = steps
        if action == "reset":
            if replay is not None:
                replay.cursor = 0
                return True
            return self._start(settings, start)
        if action in ("step", "run") and replay is None and (run is None or self.stale(settings)):
            if not self._start(settings, start):
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
            return step(run)
        while not run.done:  # Run to end: a step at a time (a stopped run goes on from where it is)
            if replay is not None:
                run.step()
            elif not run_step(run):
                return False
            if progress is not None:
                progress(len(run.new_tokens), run.config.max_new_tokens)
        return True
