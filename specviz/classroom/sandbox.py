"""The sandbox: one speculative step on hand-made distributions, decided by the engine's own rule.

A case is a small vocabulary, q and p at each of τ draft positions, p at position τ+1, and every
draw the step makes, each visible and editable: r at each position (the acceptance test), and in
lossless mode u at each position (the draft *samples* its token from q: the token whose interval of
q's cumulative distribution holds u) and s (the draw that samples the target's next token). In
textbook and greedy mode the draft proposes the most likely token of q (docs/algorithm.md, "Three
acceptance modes"). The result is a genuine `StepTrace`, so the charts and the marked text of the
app show it like any real step.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import torch

from specviz.analysis.theory import expected_accepted
from specviz.bounded import LINK_BYTES, is_number, read_json, typed_number
from specviz.core import lossy
from specviz.core.config import LOSSY, MODES, SpecConfig
from specviz.core.record import record_step
from specviz.core.rules import RULES as ALL_RULES
from specviz.core.rules import VERIFICATIONS, Verification, choose
from specviz.core.sampling import residual, sample_at
from specviz.core.trace import StepTrace
from specviz.errors import ConfigError
from specviz.viz.plain import plain

MAX_TAU = 8
CUSTOM = "Custom table (your own, or from a link)"  # the menu's name for a table that is no exercise's


@dataclass(frozen=True)
class SandboxCase:
    words: tuple[str, ...]  # the vocabulary
    q: tuple[tuple[float, ...], ...]  # draft distribution at positions 1..τ
    p: tuple[tuple[float, ...], ...]  # target distribution at positions 1..τ+1
    r: tuple[float, ...]  # the uniform draw at each position
    # lossless mode: the draft's draw at each position (it samples its token from q) and the draw that
    # samples the next token; () and None: the defaults (`draft_draws`, 0.5)
    u: tuple[float, ...] = ()
    s: float | None = None
    context: str = ""  # the confirmed text before the draft (an exercise's own; the page lets it be edited)

    @property
    def tau(self) -> int:
        return len(self.q)

    @property
    def draft_draws(self) -> tuple[float, ...]:
        """u at each position: as given, else the middle of the most likely token's interval of q (the
        lossless draft then starts from the exercise's own draft, and a student moves u to change it)."""
        return tuple(self.u[t] if t < len(self.u) else middle_of_mode(self.q[t]) for t in range(self.tau))

    @property
    def next_draw(self) -> float:
        return 0.5 if self.s is None else self.s


def interval(dist: Sequence[float], token: int) -> tuple[float, float]:
    """[low, high): the draws u that sample `token` from `dist` (its interval of the cumulative distribution)."""
    total = sum(dist)
    low = sum(dist[:token]) / total
    return low, low + dist[token] / total


def interval_text(low: float, high: float) -> str:
    """ "[0.80, 1.00)": two decimals, more where the interval is narrower than a hundredth, so that its ends differ
    (a token of 400 equally likely ones: [0.5000, 0.5025), not [0.50, 0.50)); at most six."""
    digits = 2
    while digits < 6 and f"{low:.{digits}f}" == f"{high:.{digits}f}":
        digits += 1
    return f"[{low:.{digits}f}, {high:.{digits}f})"


def middle_of_mode(dist: Sequence[float]) -> float:
    low, high = interval(dist, max(range(len(dist)), key=lambda i: (dist[i], -i)))
    return round((low + high) / 2, 3)


def draft_of(case: SandboxCase, mode: str) -> list[int]:
    """The draft: q's most likely token at each position (textbook, greedy), or the token sampled from q
    by the draw u at each position (lossless)."""
    if mode == "lossless":
        return [sample_at(torch.tensor(case.q[t], dtype=torch.float64), u) for t, u in enumerate(case.draft_draws)]
    return [max(range(len(row)), key=lambda i: (row[i], -i)) for row in case.q]


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
    # the textbook's example as the book writes it: "The cat sat on the | mat and then slept". 'mat': q .6 > p .5,
    # r .4 ≤ p/q ≈ .83, kept; 'and': q .7 ≤ p .8, kept outright; 'then': q .6, p .2, r .7 > p/q = 1/3, rejected, and
    # the target says 'purred' (argmax of p there); 'slept' would pass its own test (r .3 ≤ 6/7) but is not reached
    "The cat sat on the | mat and then slept": SandboxCase(
        words=("mat", "and", "then", "slept", "purred", "rug"),
        q=(
            (0.6, 0.025, 0.025, 0.025, 0.025, 0.3),
            (0.05, 0.7, 0.1, 0.05, 0.05, 0.05),
            (0.05, 0.025, 0.6, 0.1, 0.2, 0.025),
            (0.05, 0.05, 0.05, 0.7, 0.1, 0.05),
        ),
        p=(
            (0.5, 0.025, 0.025, 0.025, 0.025, 0.4),
            (0.025, 0.8, 0.05, 0.05, 0.05, 0.025),
            (0.05, 0.025, 0.2, 0.15, 0.55, 0.025),
            (0.05, 0.05, 0.05, 0.6, 0.2, 0.05),
            (0.1, 0.4, 0.2, 0.1, 0.1, 0.1),
        ),
        r=(0.4, 0.9, 0.7, 0.3),
        context="The cat sat on the",
    ),
}


def same_table(a: SandboxCase, b: SandboxCase) -> bool:
    """Whether two cases have the same vocabulary and the same q and p (to 1e-9): the draws may differ."""
    rows_a, rows_b = [*a.q, *a.p], [*b.q, *b.p]
    if a.words != b.words or len(rows_a) != len(rows_b):
        return False
    return all(
        len(x) == len(y) and all(math.isclose(u, v, abs_tol=1e-9) for u, v in zip(x, y, strict=True))
        for x, y in zip(rows_a, rows_b, strict=True)
    )


def table_name(exercise: str, case: SandboxCase, mode: str = "textbook") -> str:
    """What the table on screen is, in words: an exercise by its name, or a custom table. An exercise whose table or
    draws the mode uses (r but in greedy mode; u and s in lossless mode) are no longer its own says which: its name
    ("the third rejected first") may no longer hold."""
    if exercise not in PRESETS:
        return "Custom table"
    own = resize(PRESETS[exercise], case.tau)
    close = lambda a, b: all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(a, b, strict=True))  # noqa: E731
    edited = [
        name
        for name, changed in (
            ("table", not same_table(case, own)),
            ("r", mode != "greedy" and not close(case.r, own.r)),
            ("u", mode == "lossless" and not close(case.draft_draws, own.draft_draws)),
            ("s", mode == "lossless" and not math.isclose(case.next_draw, own.next_draw, abs_tol=1e-9)),
        )
        if changed
    ]
    if not edited:
        return f"Exercise '{exercise}'"
    which = edited[0] if len(edited) == 1 else f"{', '.join(edited[:-1])} and {edited[-1]}"
    return f"Exercise '{exercise}', {which} edited"


def _check_tau(tau: int) -> None:
    if not 1 <= tau <= MAX_TAU:
        raise ConfigError(f"the sandbox shows 1 to {MAX_TAU} draft positions")


def case_frame(case: SandboxCase) -> pd.DataFrame:
    """The editable table: one row per word, columns q1, p1, …, qτ, pτ and p after (position τ+1), each number as
    text (its shortest exact form, "0.05"): a cell is typed as text and read by `cell` as people write numbers
    (".05", "0,05", "5%"), where the grid's own number cell made ".05" 5."""
    columns: dict[str, list] = {"token": list(case.words)}
    for t in range(case.tau):
        columns[f"q{t + 1}"] = [repr(float(x)) for x in case.q[t]]
        columns[f"p{t + 1}"] = [repr(float(x)) for x in case.p[t]]
    columns[f"p{case.tau + 1}"] = [repr(float(x)) for x in case.p[case.tau]]
    return pd.DataFrame(columns, dtype=object)  # a cell holds what was typed, text or (the grid's) a number


NUMBER_HELP = 'Type a number as you write it: ".05", "0,05" and "5%" are all 0.05'


def cell_config(column: str) -> dict:
    """The editor's settings of a column (a text column each: a number is read by `cell`): the token required, a
    number column's help saying how numbers are read."""
    return {"required": True} if column == "token" else {"help": NUMBER_HELP}


def cell(value, column: str, row: int) -> float:
    """A cell of the table as its number (specviz.bounded.typed_number: ".05", "0,05" and "5%" are 0.05), else
    ConfigError naming the cell and why."""
    return typed_number(value, error=ConfigError, what=f"column {column}, row {row + 1}")


def column_sums(frame: pd.DataFrame) -> dict[str, float]:
    """The q and p columns of an edited table that do not sum to 1, with their sums: the page says
    so (the step uses each divided by its sum, `normalised`; the cells keep what was typed), with six significant
    digits: a column off by more than 1e-6 never reads as "1.000". A column with a cell that cannot be read is left
    to case_from_frame, which says why."""
    sums = {}
    for c in (c for c in frame if c != "token"):
        try:
            sums[c] = sum(cell(v, c, i) for i, v in enumerate(frame[c].tolist()))
        except ConfigError:
            continue
    return {c: s for c, s in sums.items() if abs(s - 1.0) > 1e-6}


def case_from_frame(
    frame: pd.DataFrame, r: Sequence[float], u: Sequence[float] = (), s: float | None = None, context: str = ""
) -> SandboxCase:
    """Read an edited table back, checking it, every number exactly as typed (a worksheet never rewrites a cell:
    the step uses each column divided by its sum, `normalised`, and column_sums names the ones that do not sum to 1).
    `context`: the text before the draft."""
    words = [str(w).strip() for w in frame["token"].tolist()]
    if len(words) < 2 or any(not w for w in words) or len(set(words)) != len(words):
        raise ConfigError("the vocabulary needs at least two distinct, non-empty tokens")
    tau = len(r)
    _check_tau(tau)

    def column(name: str) -> tuple[float, ...]:
        if name not in frame:
            raise ConfigError(f"the table has no column {name}")
        values = [cell(v, name, i) for i, v in enumerate(frame[name].tolist())]
        if any(v < 0 for v in values) or sum(values) <= 0:
            raise ConfigError(f"column {name} needs non-negative numbers that are not all zero")
        return tuple(float(v) for v in values)

    q = tuple(column(f"q{t}") for t in range(1, tau + 1))
    p = tuple(column(f"p{t}") for t in range(1, tau + 2))
    if any(not 0.0 <= x < 1.0 for x in (*r, *u, *([] if s is None else [s]))):
        raise ConfigError("each draw (r, u, s) is a number in [0, 1)")
    return SandboxCase(tuple(words), q, p, tuple(float(x) for x in r), tuple(float(x) for x in u[:tau]), s, context)


def _unit(column: Sequence[float]) -> tuple[float, ...]:
    total = sum(column)
    return tuple(column) if abs(total - 1.0) < 1e-9 else tuple(v / total for v in column)


def normalised(case: SandboxCase) -> SandboxCase:
    """The case as a step uses it: each q and p column divided by its sum (a column that sums to 1 as it is)."""
    return dataclasses.replace(case, q=tuple(map(_unit, case.q)), p=tuple(map(_unit, case.p)))


def case_to_json(case: SandboxCase) -> str:
    """The table of a case (words, q, p), compact, for a shareable link."""
    return json.dumps({"words": case.words, "q": case.q, "p": case.p}, separators=(",", ":"))


def case_from_json(text: str, r: Sequence[float], u: Sequence[float] = (), s: float | None = None) -> SandboxCase:
    """A case from a link's table (read by specviz.bounded: its size, nesting and digits bounded), checked like an
    edited table: words as text, q and p as rows of finite numbers."""
    data = read_json(text, error=ConfigError, what="the link's sandbox table", max_bytes=LINK_BYTES, max_depth=3)
    try:
        words, q, p = data["words"], data["q"], data["p"]
        rows = [*q, *p]  # a TypeError where they are not lists
        if not all(isinstance(w, str) for w in words) or not all(
            isinstance(row, list) and all(is_number(x) for x in row) for row in rows
        ):
            raise TypeError("its words are text, q and p rows of numbers")
        if len(p) != len(q) + 1 or len(r) != len(q):
            raise ConfigError("the table's positions do not match")
        frame = case_frame(SandboxCase(tuple(words), tuple(map(tuple, q)), tuple(map(tuple, p)), tuple(r)))
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"the link's sandbox table cannot be read ({exc})") from exc
    return case_from_frame(frame, r, u, s)


def draw_keys(tau: int) -> list[str]:
    """The settings keys of a case's draws: r_t, u_t per position, then s."""
    return [*(f"sandbox_r{t}" for t in range(tau)), *(f"sandbox_u{t}" for t in range(tau)), "sandbox_s"]


def draw_values(case: SandboxCase) -> dict[str, float]:
    """The case's draws under their settings keys (the page's widgets, a link's parameters)."""
    values = [*case.r, *case.draft_draws, case.next_draw]
    return dict(zip(draw_keys(case.tau), values, strict=True))


def from_link(values: dict, problems: list[str]) -> tuple[str, SandboxCase, dict]:
    """The worksheet a link opens: (exercise, its case with the link's table, τ and draws, the widget
    values the page then shows). What the link does not set comes from the exercise; a table that
    cannot be read is reported in `problems`, and the exercise's own table is used."""
    exercise = values.get("sandbox_preset", next(iter(PRESETS)))
    case = PRESETS.get(exercise, next(iter(PRESETS.values())))
    tau = values.get("sandbox_tau", case.tau)
    context = values.get("sandbox_context", case.context)
    if values.get("sandbox_table"):
        try:
            draws = [values.get(k, 0.5) for k in draw_keys(tau)]
            case = case_from_json(values["sandbox_table"], draws[:tau], draws[tau : 2 * tau], draws[-1])
        except ConfigError as exc:
            problems.append(str(exc))
    case = resize(case, tau)
    if exercise in PRESETS and not same_table(case, resize(PRESETS[exercise], tau)):
        exercise = CUSTOM  # the link's own table: named as such, not as the exercise it started from
    shown = {**draw_values(case), **{k: v for k, v in values.items() if k in draw_keys(tau)}}
    u = [shown[f"sandbox_u{t}"] for t in range(tau)]
    r = tuple(shown[f"sandbox_r{t}"] for t in range(tau))
    case = SandboxCase(case.words, case.q, case.p, r, tuple(u), shown["sandbox_s"], context)
    return exercise, case, {"sandbox_preset": exercise, "sandbox_tau": tau, "sandbox_context": context, **shown}


def resize(case: SandboxCase, tau: int) -> SandboxCase:
    """The case with τ positions: extra positions copy the last one, r defaulting to 0.5."""
    _check_tau(tau)
    q = tuple(case.q[min(t, case.tau - 1)] for t in range(tau))
    p = (*(case.p[min(t, case.tau - 1)] for t in range(tau)), case.p[case.tau])
    r = tuple(case.r[t] if t < case.tau else 0.5 for t in range(tau))
    u = tuple(case.draft_draws[t] if t < case.tau else middle_of_mode(q[t]) for t in range(tau))
    return SandboxCase(case.words, q, p, r, u, case.s, case.context)


def draw_r(tau: int, seed: int) -> tuple[float, ...]:
    gen = torch.Generator().manual_seed(seed)
    return tuple(round(x, 3) for x in torch.rand(tau, generator=gen, dtype=torch.float64).tolist())


def draw_all(tau: int, seed: int) -> tuple[tuple[float, ...], tuple[float, ...], float]:
    """(r, u, s) for a step of τ positions: the acceptance draws, the draft's draws and the next
    token's draw, from one seed (r alone is `draw_r`'s, so a seed gives the same r in every mode)."""
    more = draw_r(2 * tau + 1, seed + 1_000_003)
    return draw_r(tau, seed), more[:tau], more[tau]


def sandbox_step(
    case: SandboxCase, mode: str = "textbook", verification: Verification = "token", knobs: dict | None = None
) -> StepTrace:
    """One step on the case, every draw the case's own: the draft (argmax q, or in lossless mode
    sampled from q by u), the decisions, n and the next token exactly as the engine makes them. Each column is used
    divided by its sum (`normalised`). `knobs`: a lossy rule's settings (SpecConfig's names; its defaults unless
    given), whose step then carries its exact cost (specviz.core.lossy)."""
    case = normalised(case)
    if mode not in MODES:
        raise ConfigError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    if verification not in ALL_RULES:
        raise ConfigError(f"verification must be one of {', '.join(ALL_RULES)}; got {verification!r}")
    q = torch.tensor(case.q, dtype=torch.float64)
    p = torch.tensor(case.p, dtype=torch.float64)
    draft = draft_of(case, mode)
    rule = verification if mode == "lossless" else "token"
    settings = SpecConfig(mode=mode, verification=rule, **(knobs or {})).knobs  # checked as a run's are
    choice = choose(mode, draft, q, p, torch.Generator(), case.r, rule, case.next_draw, settings)
    emitted = (*draft[: choice.n], choice.token)
    cost = lossy.cost_of(rule, draft, q, p, settings) if rule in LOSSY else None
    words = lambda y: case.words[y]  # noqa: E731
    return record_step(0, 0, draft, q, p, choice, emitted, (0.0, 0.0), words, len(case.words), cost)


def _positions(ts: Sequence[int]) -> str:
    names = [str(t + 1) for t in ts]
    return f"Position {names[0]}" if len(names) == 1 else f"Positions {', '.join(names[:-1])} and {names[-1]}"


RULES = {  # which rule a step shows, in one line (the page says it above the step)
    "textbook": "textbook: the draft proposes q's most likely token; kept while r ≤ p/q; after a rejection, "
    "argmax p (fast, but not the target's distribution when sampling)",
    "greedy": "greedy: the draft proposes q's most likely token; kept while it is p's most likely token; then "
    "argmax p (the target's own greedy output)",
    "token": "lossless, token-wise (Leviathan et al., Chen et al.): the draft samples from q; kept while r ≤ p/q; "
    "after a rejection, a sample of norm(max(0, p − q))",
    "one-hot": "lossless, one-hot q (vLLM's default, SGLang, EAGLE): the draft samples from q but only its token "
    "counts: kept while r ≤ p(ŷ); after a rejection, a sample of p without the rejected token",
    "block": "lossless, block verification (Sun et al. 2025; vLLM's block method): every position has a "
    "threshold h; n is the last position whose r ≤ h, so a token can be kept although its own draw failed",
    "typical": "LOSSY, typical acceptance (Medusa, vLLM V0): no draw decides; kept while p(ŷ) > min(ε, δ·exp(−H)); "
    "after a rejection, argmax p",
    "sglang": "LOSSY, SGLang's accept thresholds: kept while r ≤ p(ŷ)/t_a or p(ŷ) ≥ t_s; after a rejection, a sample "
    "of p without the rejected token (t_s = t_a = 1 is one-hot q)",
    "ensemble": "LOSSY, static ensemble (transformers' assistant_ensemble_weight w): token-wise against "
    "m = w·p + (1 − w)·q; after a rejection, a sample of norm(max(0, m − q))",
}


def rule_of(mode: str, verification: str = "token") -> str:
    return RULES[verification if mode == "lossless" else mode]


def explain(step: StepTrace, case: SandboxCase | None = None, mode: str = "textbook") -> list[str]:
    """What this step teaches, in sentences computed from its own numbers (never a note written for
    another table): in lossless mode, which token each draw u sampled from q; a q > p token accepted by
    its draw; a block token kept although its own draw failed; tokens after the first rejection that
    would have passed their own test; and where the next token came from. Markdown: every word of the table (it
    may come from a link) is made literal text (specviz.viz.plain)."""
    notes, n, tau = [], step.n_accepted, step.tau
    rule = step.verify.rule if step.verify else "token"
    if case is not None and mode == "lossless":
        held = zip(case.draft_draws, step.draft_tokens, _intervals(case, step), strict=True)
        picks = ", ".join(
            f"u{t + 1} = {u:.3f} → '{plain(case.words[y])}' {interval_text(lo, hi)}"
            for t, (u, y, (lo, hi)) in enumerate(held)
        )
        notes.append(f"The draft sampled each token from q: the token whose interval of q holds u ({picks}).")
    if rule == "token":
        for t in range(n):
            if step.r[t] is not None and step.ratio[t] < 1.0:
                notes.append(
                    f"q > p at position {t + 1} (q = {step.q[t]:.2f}, p = {step.p[t]:.2f}), yet r = {step.r[t]:.2f} ≤ "
                    f"p/q = {step.ratio[t]:.2f}: accepted. q > p is not an automatic rejection."
                )
    if rule == "block":
        carried = [t for t in range(n) if not step.verify.passed[t]]
        if carried:
            last = n - 1
            notes.append(
                f"{_positions(carried)} failed {'their' if len(carried) > 1 else 'its'} own draw (r > h) yet "
                f"{'are' if len(carried) > 1 else 'is'} kept: block verification keeps every position up to the last "
                f"pass, position {n} (r = {step.r[last]:.2f} ≤ h = {step.verify.threshold[last]:.2f}). h is not the "
                "chance that a token is kept, and the passes need not run in a row."
            )
    elif step.r and step.r[0] is None:  # greedy: a token "passes" when it is the target's argmax there
        passing = [t for t in range(n + 1, tau) if step.p_top[t] and step.p_top[t][0].token == step.draft_tokens[t]]
        test = "equal the target's argmax there"
    else:
        passing = [
            t
            for t in range(n + 1, tau)
            if (step.verify and step.verify.passed[t])
            or (not step.verify and step.r[t] is not None and step.r[t] <= step.ratio[t])
        ]
        own = {"one-hot": "r ≤ p(ŷ)", "typical": "p(ŷ) > its threshold", "sglang": "r ≤ p(ŷ)/t_a or p(ŷ) ≥ t_s"}
        own = own.get(rule, "r ≤ min(1, m/q)" if rule == "ensemble" else "r ≤ p/q")
        test = f"pass {'their' if len(passing) > 1 else 'its'} own test ({own})"
    if rule != "block" and passing:
        come = "come" if len(passing) > 1 else "comes"
        notes.append(
            f"{_positions(passing)} would {test} but {come} after the rejection at position {n + 1}: "
            "not reached, discarded."
        )
    if n < tau:
        why = {
            "residual": {
                "token": "lossless samples norm(max(0, p − q)), what p has and q lacks",
                "one-hot": "one-hot samples p without the rejected token",
                "sglang": "SGLang's rule samples p without the rejected token",
                "ensemble": "the ensemble samples norm(max(0, m − q)), what the mixture has and q lacks",
                "block": f"block samples norm(max(0, w{n} p − q)) there"
                if n
                else "block samples norm(max(0, p − q)) there",
            }[rule],
            "argmax": "typical acceptance takes p's most likely token"
            if rule == "typical"
            else "textbook takes p's most likely token",
            "greedy": "greedy takes p's most likely token",
        }.get(step.next_rule, f"the rule is {step.next_rule}")
        notes.append(
            f"'{plain(step.draft_text[n])}' is rejected at position {n + 1}, so the target chooses the next token from "
            f"its distribution there: {why}: '{plain(step.next_text)}'."
        )
    else:
        accepted = f"All {tau} draft tokens accepted" if tau > 1 else "The draft token accepted"
        notes.append(
            f"{accepted}: the target adds a bonus token from p at position {tau + 1}: '{plain(step.next_text)}'."
        )
    if step.cost is not None:  # a lossy rule: its gain beside its exact cost
        cost = step.cost
        notes.append(
            f"**Lossy.** On this draft it keeps ŷ with {', '.join(f'{a:.3f}' for a in cost.accept)} where "
            f"{cost.baseline} (lossless) keeps it with {', '.join(f'{a:.3f}' for a in cost.baseline_accept)}: "
            f"{cost.tokens_per_pass:.3f} tokens per pass expected instead of {cost.baseline_tokens_per_pass:.3f}. "
            f"The price: the token emitted at each position follows o ≠ p, at a total-variation distance "
            f"{', '.join(f'{d:.4f}' for d in cost.tv)} from p (exact, over the draft's draw from q)."
        )
    return notes


def _intervals(case: SandboxCase, step: StepTrace) -> list[tuple[float, float]]:
    return [interval(case.q[t], y) for t, y in enumerate(step.draft_tokens)]


def residual_distribution(case: SandboxCase, position: int) -> list[float]:
    """norm(max(0, p − q)) at a draft position (0-based), of the columns as the step uses them."""
    case = normalised(case)
    q = torch.tensor(case.q[position], dtype=torch.float64)
    p = torch.tensor(case.p[position], dtype=torch.float64)
    return residual(p, q).tolist()


def expected_lengths(case: SandboxCase) -> str:
    """What each verification rule keeps on average on this table, exactly (every draft q can sample, every draw),
    in one sentence (Markdown). Its price is known before it starts: τ × words for token-wise and one-hot, at most
    theory.BLOCK_WORK for block, which past it says why instead (fast on any table a link can carry)."""
    said = []
    for name in VERIFICATIONS:
        try:
            said.append(f"{name} {expected_accepted(case.q, case.p, name):.3f}")
        except ConfigError as exc:
            said.append(f"{name} not computed ({exc})")
    return "**Expected accepted draft tokens on this table** (exact, over every draft and every draw): " + ", ".join(
        said
    )
