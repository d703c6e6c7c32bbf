"""Replay a saved run trace step by step, with no model: the same interface the Decode page uses
for a live `Decoder` (step, undo, run, done, stop_reason, trace)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from specviz.class_policy import ClassPolicy, RefusedError
from specviz.core.trace import (
    RunTrace,
    StepTrace,
    build_run_trace,
)
from specviz.errors import TraceError
from specviz.models.text import Codec
from specviz.viz.plain import plain


class Replay:
    def __init__(self, run: RunTrace, name: str = "", texts: str = "") -> None:
        self.run_trace, self.name, self.cursor = run, name, 0
        self.config = run.config
        self.texts = texts  # how its texts were checked, in words (load_trace)

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

    def describe(self) -> str:
        """Where the replay is and what the saved run was: its models and settings, as markdown (the names
        and words the file brought escaped: specviz.viz.plain)."""
        run, c = self.run_trace, self.config
        return (
            f"Replaying a saved trace: step {self.cursor} of {len(run.steps)}, no model loaded. "
            f"**{plain(run.target_name)}** with draft **{plain(run.draft_name)}**, {c.mode} mode, τ = {c.tau}, "
            f"temperature {c.temperature:g}, top-k {c.top_k}, top-p {c.top_p:g}, seed {c.seed}. {plain(self.texts)} "
            "Remove the file to decode live."
        )

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
            **fields,
            prompt_text=self.run_trace.prompt_text,
            prompt_ids=self.run_trace.prompt_ids,
            steps=steps,
            new_tokens=new_tokens,
            text=text,
            stop_reason=None,
            prefill_ms=self.run_trace.prefill_ms,
            target_top_k=self.run_trace.target_top_k,
        )


def _emitted_text(step: StepTrace) -> str:
    shown = min(step.n_accepted, len(step.emitted))
    tail = step.next_text if len(step.emitted) == step.n_accepted + 1 else ""
    return "".join(step.draft_text[:shown]) + tail


# --- opening a saved trace ---------------------------------------------------------------------


def replay_for(
    data: bytes,
    name: str,
    current: Replay | None,
    codec_for: Callable[[str], Codec | None] | None = None,
    class_policy: ClassPolicy | None = None,
) -> tuple[Replay | None, str | None]:
    """The replay of an uploaded file named `name`: `current` when it is that file's already (its
    cursor kept), else a new one at step 0; (None, the reason) when the file cannot be replayed.
    `codec_for(target name)` gives the tokenizer to check the texts with, where one is at hand."""
    if current is not None and current.name == name:
        return current, None
    try:
        run = load_trace(data, class_policy)
        codec = codec_for(run.target_name) if codec_for else None
        return Replay(run, name, check_texts(run, codec)), None
    except (TraceError, RefusedError) as exc:
        return None, str(exc)


def check_texts(run: RunTrace, codec: Codec | None = None) -> str:
    """Every text of a trace against its token ids: with the target's tokenizer, each text is what that
    tokenizer makes of the id (the prompt and the reply too); without one, each id reads the same
    wherever it appears. A text edited by hand is a TraceError naming where. Returns how they were checked."""
    seen: dict[int, tuple[str, str]] = {}
    for token, text, where in _texts(run):
        if codec is not None:
            made = codec.token_text(token)
            _need(text == made, f"{where}: the text {text!r} is not token {token}'s ({made!r})")
        first = seen.setdefault(token, (text, where))
        _need(first[0] == text, f"token {token} reads {first[0]!r} in {first[1]} but {text!r} in {where}")
    if codec is None:
        return "Its texts agree with each other; no tokenizer for its target is here to check them against."
    _need(run.text == codec.decode(run.new_tokens), "its text is not what the tokenizer makes of new_tokens")
    if run.chat:
        _need(
            codec.encode_chat(run.prompt) == (run.prompt_text, list(run.prompt_ids)),
            "its prompt is not what the chat template and tokenizer make of prompt_ids",
        )
    elif run.prompt:
        _need(
            run.prompt_text == run.prompt and codec.encode(run.prompt) == list(run.prompt_ids),
            "its prompt is not what the tokenizer makes of prompt_ids",
        )
    else:
        _need(run.prompt_text == codec.decode(run.prompt_ids), "its prompt is not the text of prompt_ids")
    return f"Its texts were checked against the tokenizer of {run.target_name}."


def _texts(run: RunTrace) -> Iterator[tuple[int, str, str]]:
    """(token id, its text, where) for every text a trace carries beside an id."""
    for step in run.steps:
        where = f"step {step.index + 1}"
        for t, (token, text) in enumerate(zip(step.draft_tokens, step.draft_text, strict=True)):
            yield token, text, f"{where}, draft token {t + 1}"
        yield step.next_token, step.next_text, f"{where}, the next token"
        tops = [*step.q_top, *step.p_top, step.next_top, step.residual_top or ()]
        if step.tree is not None:
            tops += [step.tree.root_p_top, step.tree.root_q_top]
            for j, node in enumerate(step.tree.nodes):
                yield node.token, node.text, f"{where}, tree node {j + 1}"
                tops += [node.p_top, node.q_top, node.residual_top, node.q_residual_top]
        for top in tops:
            for entry in top:
                yield entry.token, entry.text, f"{where}, a top-n list"


def _need(condition: Any, message: str) -> None:
    if not condition:
        raise TraceError(message)


def load_trace(data: bytes | str, class_policy: ClassPolicy | None = None) -> RunTrace:
    """A saved run trace (JSON), checked completely by RunTrace.from_dict (every field present and of its
    type, each decision as its own numbers make it); its metrics recomputed from its steps. Any problem:
    a `TraceError` naming where it is. Its size and nesting are bounded before anything parses it
    (RefusedError; `class_policy`, the server's, handed in: the class's bounds), and it is read by specviz.bounded
    (its numbers' digits)."""
    (class_policy or ClassPolicy()).check_upload(data.encode() if isinstance(data, str) else data)
    return RunTrace.from_json(data)
