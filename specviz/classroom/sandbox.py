"""The sandbox: one speculative step on hand-made distributions, decided by the engine's own rule.

A case is a small vocabulary, q and p at each of τ draft positions, p at position τ+1, and the
draws r. The draft proposes the most likely token of q at each position. The result is a genuine
`StepTrace`, so the charts and the marked text of the app show it like any real step.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import torch

from specviz.core.config import MODES
from specviz.core.engine import choose, record_step
from specviz.core.sampling import residual
from specviz.core.trace import StepTrace
from specviz.errors import ConfigError

MAX_TAU = 8


@dataclass(frozen=True)
class SandboxCase:
    words: tuple[str, ...]  # the vocabulary
    q: tuple[tuple[float, ...], ...]  # draft distribution at positions 1..τ
    p: tuple[tuple[float, ...], ...]  # target distribution at positions 1..τ+1
    r: tuple[float, ...]  # the uniform draw at each position

    @property
    def tau(self) -> int:
        return len(self.q)


PRESETS: dict[str, SandboxCase] = {
    "One token: q = 0.8, p = 0.6, r = 0.7": SandboxCase(
        words=("cat", "dog"),
        q=((0.8, 0.2),),
        p=((0.6, 0.4), (0.5, 0.5)),
        r=(0.7,),
    ),
    "Five-token draft, the third rejected first": SandboxCase(
        words=("the", "cat", "sat", "on", "mat"),
        q=(
            (0.5, 0.2, 0.1, 0.1, 0.1),
            (0.1, 0.6, 0.1, 0.1, 0.1),
            (0.1, 0.1, 0.7, 0.05, 0.05),
            (0.1, 0.1, 0.1, 0.5, 0.2),
            (0.1, 0.1, 0.1, 0.3, 0.4),
        ),
        p=(
            (0.6, 0.1, 0.1, 0.1, 0.1),
            (0.2, 0.45, 0.15, 0.1, 0.1),
            (0.1, 0.35, 0.2, 0.25, 0.1),
            (0.1, 0.1, 0.1, 0.5, 0.2),
            (0.1, 0.1, 0.1, 0.1, 0.6),
            (0.2, 0.2, 0.2, 0.2, 0.2),
        ),
        r=(0.9, 0.3, 0.6, 0.1, 0.2),
    ),
    "The next token after the accepted run": SandboxCase(
        words=("sat", "ran", "slept", "jumped"),
        q=((0.7, 0.1, 0.1, 0.1), (0.1, 0.7, 0.1, 0.1)),
        p=((0.8, 0.1, 0.05, 0.05), (0.5, 0.1, 0.3, 0.1), (0.25, 0.25, 0.25, 0.25)),
        r=(0.4, 0.5),
    ),
}


def _check_tau(tau: int) -> None:
    if not 1 <= tau <= MAX_TAU:
        raise ConfigError(f"the sandbox shows 1 to {MAX_TAU} draft positions")


def case_frame(case: SandboxCase) -> pd.DataFrame:
    """The editable table: one row per word, columns q1, p1, …, qτ, pτ and p after (position τ+1)."""
    columns: dict[str, list] = {"token": list(case.words)}
    for t in range(case.tau):
        columns[f"q{t + 1}"] = list(case.q[t])
        columns[f"p{t + 1}"] = list(case.p[t])
    columns[f"p{case.tau + 1}"] = list(case.p[case.tau])
    return pd.DataFrame(columns)


def column_sums(frame: pd.DataFrame) -> dict[str, float]:
    """The q and p columns of an edited table that do not sum to 1, with their sums: the page says
    so (case_from_frame normalises them; nothing is rescaled silently)."""
    sums = {c: float(pd.to_numeric(frame[c], errors="coerce").fillna(0.0).sum()) for c in frame if c != "token"}
    return {c: s for c, s in sums.items() if abs(s - 1.0) > 1e-6}


def case_from_frame(frame: pd.DataFrame, r: Sequence[float]) -> SandboxCase:
    """Read an edited table back, checking it; each column is normalised to sum to 1 (column_sums
    names the ones that did not)."""
    words = [str(w).strip() for w in frame["token"].tolist()]
    if len(words) < 2 or any(not w for w in words) or len(set(words)) != len(words):
        raise ConfigError("the vocabulary needs at least two distinct, non-empty tokens")
    tau = len(r)
    _check_tau(tau)

    def column(name: str) -> tuple[float, ...]:
        if name not in frame:
            raise ConfigError(f"the table has no column {name}")
        values = pd.to_numeric(frame[name], errors="coerce").fillna(-1.0).tolist()
        if any(v < 0 for v in values) or sum(values) <= 0:
            raise ConfigError(f"column {name} needs non-negative numbers that are not all zero")
        total = sum(values)
        return tuple(values) if abs(total - 1.0) < 1e-9 else tuple(v / total for v in values)

    q = tuple(column(f"q{t}") for t in range(1, tau + 1))
    p = tuple(column(f"p{t}") for t in range(1, tau + 2))
    if any(not 0.0 <= x < 1.0 for x in r):
        raise ConfigError("each r is a draw from [0, 1)")
    return SandboxCase(tuple(words), q, p, tuple(float(x) for x in r))


def case_to_json(case: SandboxCase) -> str:
    """The table of a case (words, q, p), compact, for a shareable link."""
    return json.dumps({"words": case.words, "q": case.q, "p": case.p}, separators=(",", ":"))


def case_from_json(text: str, r: Sequence[float]) -> SandboxCase:
    """A case from a link's table, checked like an edited table."""
    try:
        data = json.loads(text)
        words, q, p = data["words"], data["q"], data["p"]
        if len(p) != len(q) + 1 or len(r) != len(q):
            raise ConfigError("the table's positions do not match")
        frame = case_frame(SandboxCase(tuple(words), tuple(map(tuple, q)), tuple(map(tuple, p)), tuple(r)))
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"the link's sandbox table cannot be read ({exc})") from exc
    return case_from_frame(frame, r)


def resize(case: SandboxCase, tau: int) -> SandboxCase:
    """The case with τ positions: extra positions copy the last one, r defaulting to 0.5."""
    _check_tau(tau)
    q = tuple(case.q[min(t, case.tau - 1)] for t in range(tau))
    p = (*(case.p[min(t, case.tau - 1)] for t in range(tau)), case.p[case.tau])
    r = tuple(case.r[t] if t < case.tau else 0.5 for t in range(tau))
    return SandboxCase(case.words, q, p, r)


def draw_r(tau: int, seed: int) -> tuple[float, ...]:
    gen = torch.Generator().manual_seed(seed)
    return tuple(round(x, 3) for x in torch.rand(tau, generator=gen, dtype=torch.float64).tolist())


def sandbox_step(case: SandboxCase, mode: str = "textbook", seed: int = 0) -> StepTrace:
    """One step on the case: the draft proposes argmax q at each position; the decisions, n and
    the next token follow the mode exactly as in the engine (seed: for lossless resampling)."""
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    q = torch.tensor(case.q, dtype=torch.float64)
    p = torch.tensor(case.p, dtype=torch.float64)
    draft = q.argmax(-1).tolist()
    choice = choose(mode, draft, q, p, torch.Generator().manual_seed(seed), given_r=case.r)
    emitted = (*draft[: choice.n], choice.token)
    return record_step(0, 0, draft, q, p, choice, emitted, (0.0, 0.0), lambda y: case.words[y], len(case.words))


def _positions(ts: Sequence[int]) -> str:
    names = [str(t + 1) for t in ts]
    return f"Position {names[0]}" if len(names) == 1 else f"Positions {', '.join(names[:-1])} and {names[-1]}"


def explain(step: StepTrace) -> list[str]:
    """What this step teaches, in sentences computed from its own numbers (never a note written for
    another table): a q > p token accepted by its draw, tokens after the first rejection that would
    have passed their own test, and where the next token came from."""
    notes, n, tau = [], step.n_accepted, step.tau
    for t in range(n):
        if step.r[t] is not None and step.ratio[t] < 1.0:
            notes.append(
                f"q > p at position {t + 1} (q = {step.q[t]:.2f}, p = {step.p[t]:.2f}), yet r = {step.r[t]:.2f} ≤ "
                f"p/q = {step.ratio[t]:.2f}: accepted. q > p is not an automatic rejection."
            )
    if step.r and step.r[0] is None:  # greedy: a token "passes" when it is the target's argmax there
        passing = [t for t in range(n + 1, tau) if step.p_top[t] and step.p_top[t][0].token == step.draft_tokens[t]]
        test = "equal the target's argmax there"
    else:
        passing = [t for t in range(n + 1, tau) if step.r[t] is not None and step.r[t] <= step.ratio[t]]
        test = f"pass {'their' if len(passing) > 1 else 'its'} own test (r ≤ p/q)"
    if passing:
        come = "come" if len(passing) > 1 else "comes"
        notes.append(f"{_positions(passing)} would {test} but {come} after the rejection at position {n + 1}: "
                     "not reached, discarded.")  # fmt: skip
    if n < tau:
        rule = {
            "residual": "lossless samples norm(max(0, p − q)), what p has and q lacks",
            "argmax": "textbook takes p's most likely token",
            "greedy": "greedy takes p's most likely token",
        }.get(step.next_rule, f"the rule is {step.next_rule}")
        notes.append(
            f"'{step.draft_text[n]}' is rejected at position {n + 1}, so the target chooses the next token from its "
            f"distribution there: {rule}: '{step.next_text}'."
        )
    else:
        accepted = f"All {tau} draft tokens accepted" if tau > 1 else "The draft token accepted"
        notes.append(f"{accepted}: the target adds a bonus token from p at position {tau + 1}: '{step.next_text}'.")
    return notes


def residual_distribution(case: SandboxCase, position: int) -> list[float]:
    """norm(max(0, p − q)) at a draft position (0-based)."""
    q = torch.tensor(case.q[position], dtype=torch.float64)
    p = torch.tensor(case.p[position], dtype=torch.float64)
    return residual(p, q).tolist()
