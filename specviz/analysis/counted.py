"""Count, then cost: a run's speed from the work counted exactly (tokens emitted, target passes and the tokens in
each, draft forwards) times the pair's per-pass costs kept from a quiet calibration (specviz.analysis.pairtimes:
T(1), v(k), c). No clock runs while the work is done, so the answer is the same on a busy machine as on a quiet one;
it says which calibration it rests on (PairTimings.label), and a live clock is shown beside it only where it was
undisturbed (docs/algorithm.md, "Count, then cost").

The target alone emits one token a pass: `tokens` one-token passes. Speculation pays, per step, one pass over the
step's draft tokens and the target's own (v(k) one-token passes, k = draft tokens + 1) and the draft's forwards (c
each: one per draft token of a chain, one per level of a tree): speedup = tokens / (Σ v(k) + c · Σ forwards).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from specviz.analysis.measure import Spread
from specviz.analysis.pairtimes import PairTimings
from specviz.analysis.theory import Ceiling, ceiling

QUIET_MINUTE = (
    "one quiet minute of calibration (a pass over 1 to 16 tokens and a draft forward, timed while no other process "
    "holds a core, kept for every later run on this machine) would turn these counts into speeds"
)


@dataclass(frozen=True, kw_only=True)
class Work:
    """What speculation did, counted: no clock in it."""

    tokens: int  # emitted
    pass_tokens: tuple[int, ...]  # tokens in each target pass: a step's draft tokens and the target's own
    drafted: int  # draft forwards: a chain's draft tokens; a tree's levels (each one pass over its expanded nodes)

    @classmethod
    def of_steps(cls, steps: Iterable) -> Work:
        """From a run's steps (StepTrace, StepCount: their `emitted` tokens, `nodes` verified and `draft_passes`)."""
        steps = list(steps)
        return cls(
            tokens=sum(len(s.emitted) for s in steps),
            pass_tokens=tuple(s.nodes + 1 for s in steps),
            drafted=sum(s.draft_passes for s in steps),
        )

    @property
    def passes(self) -> int:
        return len(self.pass_tokens)

    @property
    def tokens_per_pass(self) -> float:
        return self.tokens / self.passes if self.passes else 0.0

    def words(self) -> str:
        """'48 tokens in 20 target passes (2.40 a pass), 60 draft forwards'."""
        return (
            f"{self.tokens} tokens in {self.passes} target passes ({self.tokens_per_pass:.2f} a pass), "
            f"{self.drafted} draft forwards"
        )


@dataclass(frozen=True, kw_only=True)
class Costed:
    """Counted work at the kept costs: both sides in one-token target passes, and in time at the kept T(1)."""

    work: Work
    timings: PairTimings

    @property
    def verify_units(self) -> float:
        """Σ v(k) over the steps' passes, in one-token passes."""
        return sum(self.timings.v(k) for k in self.work.pass_tokens)

    @property
    def draft_units(self) -> float:
        return self.work.drafted * self.timings.c

    @property
    def units(self) -> float:
        """Speculation's work in one-token target passes (the target alone's is `work.tokens`)."""
        return self.verify_units + self.draft_units

    @property
    def speedup(self) -> float:
        return self.work.tokens / self.units if self.units else 0.0

    @property
    def tokens_per_second(self) -> float:
        """Speculation's speed at the kept T(1)."""
        return 1000.0 * self.work.tokens / (self.units * self.timings.one_token_ms.value) if self.units else 0.0

    @property
    def alone_tokens_per_second(self) -> float:
        return 1000.0 / self.timings.one_token_ms.value

    def spread(self) -> Spread:
        """The speedup with its range over the kept costs' interquartile ranges (every pass and draft forward at its
        T's upper quartile, then at its lower; T(1) the median throughout)."""
        t = self.timings
        one = t.one_token_ms.value

        def units(pick) -> float:
            def v(k: int) -> float:
                timed = [j for j in sorted(t.passes_ms) if j >= k] or [max(t.passes_ms)]
                return 1.0 if k == 1 else pick(t.passes_ms[timed[0]]) / one

            return sum(v(k) for k in self.work.pass_tokens) + self.work.drafted * pick(t.draft_ms) / one

        tokens = self.work.tokens
        dear, cheap = units(lambda s: s.high), units(lambda s: s.low)
        return Spread(
            self.speedup,
            tokens / dear if dear else 0.0,
            tokens / cheap if cheap else 0.0,
            self.work.passes,
            "counted work at the kept costs, over their interquartile ranges",
        )

    def sentence(self) -> str:
        """'2.05× the target alone, from counted work at the pair's kept costs: 48 tokens in 20 target passes (2.40 a
        pass), 60 draft tokens; the passes cost 21.6 one-token passes and the draft forwards 1.8 (c = 0.03), 23.4 in
        all against 48 (28.4 against 58.3 tokens/s at T(1) = 17.2 ms); from the calibration kept …'."""
        w = self.work
        return (
            f"{self.speedup:.2f}× the target alone, from counted work at the pair's kept costs: {w.words()}; the "
            f"passes cost {self.verify_units:.1f} one-token passes and the draft forwards {self.draft_units:.1f} "
            f"(c = {self.timings.c:.2f}), {self.units:.1f} in all against {w.tokens} ({self.tokens_per_second:.1f} "
            f"against {self.alone_tokens_per_second:.1f} tokens/s at T(1) = {self.timings.one_token_ms.value:.1f} ms);"
            f" from {self.timings.label()}"
        )

    def ceiling(self, tau: int) -> Ceiling:
        """The ceiling at τ from the pair's own v(τ + 1), and this run's speedup split into α's and c's shares, E the
        tokens a pass counted here."""
        return ceiling(tau, self.timings.v(tau + 1), self.timings.c, tokens_per_pass=self.work.tokens_per_pass)


def costed(steps: Sequence, timings: PairTimings) -> Costed:
    """A run's steps at the pair's kept costs."""
    return Costed(work=Work.of_steps(steps), timings=timings)


def uncosted(work: Work) -> str:
    """Where no calibration is kept and the machine stays busy: what was counted, and what a quiet minute would
    add."""
    return f"Counted: {work.words()}. No calibration of this pair is kept on this machine yet: {QUIET_MINUTE}."
