"""Replay a saved run trace step by step, with no model: the same interface the Decode page uses
for a live `Decoder` (step, undo, run, done, stop_reason, trace)."""

from __future__ import annotations

from specviz.trace import RunTrace, StepTrace, build_run_trace


class Replay:
    def __init__(self, run: RunTrace, name: str = "") -> None:
        self.run_trace, self.name, self.cursor = run, name, 0
        self.config = run.config

    @property
    def steps(self) -> tuple[StepTrace, ...]:
        return self.run_trace.steps[: self.cursor]

    @property
    def new_tokens(self) -> tuple[int, ...]:
        return tuple(t for s in self.steps for t in s.emitted)

    @property
    def done(self) -> bool:
        return self.cursor >= len(self.run_trace.steps)

    @property
    def stop_reason(self) -> str | None:
        return self.run_trace.stop_reason if self.done else None

    def step(self) -> StepTrace:
        if self.done:
            raise IndexError("the replay is at its last step")
        self.cursor += 1
        return self.run_trace.steps[self.cursor - 1]

    def undo(self) -> StepTrace | None:
        if self.cursor == 0:
            return None
        self.cursor -= 1
        return self.run_trace.steps[self.cursor]

    def run(self) -> RunTrace:
        self.cursor = len(self.run_trace.steps)
        return self.trace()

    def trace(self) -> RunTrace:
        """The saved run up to the cursor, its metrics recomputed for those steps."""
        if self.done:
            return self.run_trace
        steps, new_tokens = self.steps, self.new_tokens
        text = "".join(_emitted_text(s) for s in steps)
        fields = {k: getattr(self.run_trace, k) for k in ("config", "target_name", "draft_name", "prompt", "chat")}
        return build_run_trace(
            **fields, prompt_text=self.run_trace.prompt_text, prompt_ids=self.run_trace.prompt_ids, steps=steps,
            new_tokens=new_tokens, text=text, stop_reason=None, prefill_ms=self.run_trace.prefill_ms,
        )  # fmt: skip


def _emitted_text(step: StepTrace) -> str:
    shown = min(step.n_accepted, len(step.emitted))
    tail = step.next_text if len(step.emitted) == step.n_accepted + 1 else ""
    return "".join(step.draft_text[:shown]) + tail
