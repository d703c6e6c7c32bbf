"""Quiz mode: the class predicts, per draft token, whether the target keeps it."""

from __future__ import annotations

from collections.abc import Sequence

from specviz.trace import StepTrace

ANSWERS = ("accept", "reject")


def answer(step: StepTrace, position: int) -> str:
    """'accept' for a token of the accepted run; 'reject' for the rejected one and those after it
    (not reached: discarded all the same)."""
    return "accept" if step.accepted[position] else "reject"


def score(step: StepTrace, guesses: Sequence[str | None]) -> int:
    """How many guesses were right; a position left unanswered counts as wrong."""
    return sum(guess == answer(step, t) for t, guess in enumerate(guesses))
