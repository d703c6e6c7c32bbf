"""Quiz mode: the class predicts each draft token's fate before the page reveals it.

Two kinds of question:
- `predict`: q and p are shown, r is not: will the target keep each token?
- `rule`: r and p/q are shown too (greedy mode: the target's argmax): apply docs/algorithm.md's rule, say
  each token's fate and how many tokens are kept.

Each draft token's fate is one of three answers; a token after the first rejection is "not
reached" (its own test is never applied), not "reject". Only the tokens the class answered are
scored. Scores are kept per step, so going Back and stepping again never counts a step twice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from specviz.core.trace import Decision, StepTrace

Answer = Literal["accept", "reject", "not reached"]
ANSWERS: tuple[Answer, ...] = get_args(Answer)
KINDS = {
    "predict": "Will the target keep each token? (q and p shown, r hidden)",
    "rule": "Apply the rule: r and p/q shown; each token's fate and how many are kept",
}
SHORT = {"predict": "Keep each token?", "rule": "Apply the rule"}  # on a projector's row of controls
_BY_DECISION: dict[Decision, Answer] = {"accepted": "accept", "rejected": "reject", "not reached": "not reached"}


def answer(step: StepTrace, position: int) -> Answer:
    """The right answer for draft token `position` (0-based)."""
    return _BY_DECISION[step.decision[position]]


@dataclass(frozen=True)
class Score:
    right: int  # answered tokens whose fate was guessed right
    answered: int  # tokens the class gave an answer for (blank ones are not scored)
    kept_right: bool | None = None  # the guessed number of kept tokens (rule quiz); None: not asked
    marks: tuple[bool | None, ...] = ()  # per draft token: answered right, wrong, or None (left blank)

    @property
    def points(self) -> tuple[int, int]:
        """(points, possible): one per answered token, one for the number kept when asked."""
        extra = self.kept_right is not None
        return self.right + int(bool(self.kept_right)), self.answered + int(extra)

    def describe(self) -> str:
        text = f"{self.right} of {self.answered} answered tokens right"
        if self.kept_right is not None:
            text += ", tokens kept: " + ("right" if self.kept_right else "wrong")
        return text


def score(step: StepTrace, guesses: Sequence[str | None], kept: int | None = None) -> Score:
    """Score the answered guesses (None = left blank) and, if given, the guessed number kept."""
    if len(guesses) != step.tau:
        raise ValueError(f"{len(guesses)} guesses for {step.tau} draft tokens")
    marks = tuple(None if g is None else g == answer(step, t) for t, g in enumerate(guesses))
    answered = [m for m in marks if m is not None]
    return Score(sum(answered), len(answered), None if kept is None else kept == step.n_accepted, marks)


def step_key(step: StepTrace) -> str:
    """Identifies one step of one run: the same after Back and Step (same seed, same draws)."""
    return f"{step.index}:{step.context_length}:{','.join(map(str, step.draft_tokens))}:{step.r}"


def running_total(book: Mapping[str, Score]) -> tuple[int, int]:
    """(points, possible) over every revealed step."""
    points = [s.points for s in book.values()]
    return sum(p for p, _ in points), sum(n for _, n in points)
