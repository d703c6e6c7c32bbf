"""Acceptance per verification rule across τ (docs/algorithm.md, "Verification as serving engines run it"):
the same steps judged by token-wise, one-hot and block verification, with the mean acceptance length and the
draft acceptance rate per τ and rule.

Lossless runs decode with the token-wise rule and keep, for every step, what each rule makes of the same draft
and the same draws (`Decoder(compare_rules=True)`): a paired comparison, the setting in which block never keeps
fewer in expectation and one-hot keeps Σ q·p where token-wise keeps Σ min(p, q). All three rules are lossless,
so the texts they would write follow the same distribution. Intervals are percentile bootstraps over steps
(specviz.analysis.measure); differences between rules are bootstrapped over the same steps, paired."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from specviz.analysis.measure import Spread, bootstrap
from specviz.core.config import VERIFICATIONS, SpecConfig
from specviz.core.engine import Decoder
from specviz.errors import ConfigError
from specviz.models.pair import ModelPair

RULE_WORDS = {"token": "token-wise", "one-hot": "one-hot q", "block": "block"}


@dataclass(frozen=True)
class RuleRow:
    """One rule at one τ, pooled over prompts and seeds: (τ drafted, n accepted) of every step that drafted."""

    tau: int
    rule: str
    drafted: tuple[int, ...]
    accepted: tuple[int, ...]

    @property
    def steps(self) -> int:
        return len(self.accepted)

    @property
    def mean_acceptance_length(self) -> Spread:
        """1 + accepted / steps, with its interval."""
        columns = {"n": self.accepted, "one": [1] * self.steps}
        return bootstrap(columns, lambda c: 1 + c["n"] / c["one"])

    @property
    def draft_acceptance_rate(self) -> Spread:
        """accepted / drafted, with its interval."""
        return bootstrap({"n": self.accepted, "k": self.drafted}, lambda c: c["n"] / c["k"])


@dataclass(frozen=True)
class RuleComparison:
    rows: tuple[RuleRow, ...]  # per τ, one row per rule over the same steps (in the same order)

    def difference(self, tau: int, rule: str, against: str = "token") -> Spread:
        """Mean accepted tokens per step of `rule` minus `against`'s, over the same steps (paired)."""
        a, b = self.row(tau, rule), self.row(tau, against)
        return bootstrap(
            {"a": a.accepted, "b": b.accepted, "one": [1] * a.steps}, lambda c: (c["a"] - c["b"]) / c["one"]
        )

    def row(self, tau: int, rule: str) -> RuleRow:
        return next(r for r in self.rows if r.tau == tau and r.rule == rule)

    @property
    def taus(self) -> list[int]:
        return sorted({r.tau for r in self.rows})

    def to_frame(self) -> pd.DataFrame:
        """One row per τ: the steps, each rule's mean acceptance length with its interval, each rule's draft
        acceptance rate."""
        records = []
        for tau in self.taus:
            rows = {rule: self.row(tau, rule) for rule in VERIFICATIONS}
            record: dict = {"τ": tau, "steps": rows["token"].steps}
            for rule, r in rows.items():
                record[f"length: {RULE_WORDS[rule]}"] = r.mean_acceptance_length.text(2, "")
            for rule, r in rows.items():
                record[f"rate: {RULE_WORDS[rule]}"] = f"{r.draft_acceptance_rate.value:.0%}"
            records.append(record)
        return pd.DataFrame(records)

    def verdict(self) -> str:
        """At the largest τ: each rule's mean acceptance length, and the differences the paired intervals
        support (an interval that reaches 0 is no difference shown, never a win)."""
        tau = self.taus[-1]
        lengths = {k: self.row(tau, k).mean_acceptance_length.value for k in VERIFICATIONS}
        listed = ", ".join(f"{RULE_WORDS[k]} {v:.2f}" for k, v in lengths.items())
        notes = []
        for rule in ("one-hot", "block"):
            d = self.difference(tau, rule)
            if d.high < 0 or d.low > 0:
                near, far = sorted((abs(d.low), abs(d.high)))
                more = "more" if d.low > 0 else "fewer"
                notes.append(f"{RULE_WORDS[rule]} kept {abs(d.value):.2f} {more} per step ({near:.2f}–{far:.2f})")
            else:
                notes.append(f"{RULE_WORDS[rule]}: no difference shown ({d.low:+.2f} to {d.high:+.2f} per step)")
        return (
            f"Mean acceptance length at τ = {tau}, the same steps under each rule: {listed}. Against token-wise: "
            f"{'; '.join(notes)}. On the same draws one-hot never keeps more (p(ŷ) ≤ min(1, p/q))."
        )


def compare_rules(
    pair: ModelPair,
    prompts: Sequence[str],
    taus: Sequence[int],
    seeds: Sequence[int] = (0,),
    max_new_tokens: int = 32,
    chat: bool | None = None,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    progress: Callable[[int, int, str], None] | None = None,
) -> RuleComparison:
    """Token-wise lossless runs per τ, prompt and seed, every step that drafted judged by every rule (each step and
    each prompt read a piece of work: specviz.pieces)."""
    if not prompts or not taus or not seeds:
        raise ConfigError("comparing the rules needs at least one prompt, one τ and one seed")
    base = SpecConfig(mode="lossless", temperature=temperature, top_k=top_k, top_p=top_p, max_new_tokens=max_new_tokens)
    total, done, rows = len(taus) * len(prompts) * len(seeds), 0, []
    for tau in taus:
        drafted: list[int] = []
        accepted: dict[str, list[int]] = {rule: [] for rule in VERIFICATIONS}
        for i, prompt in enumerate(prompts):
            for seed in seeds:
                dec = Decoder(
                    pair, prompt, dataclasses.replace(base, tau=tau, seed=seed), chat=chat, compare_rules=True
                )
                while not dec.done:
                    dec.step()
                for step in dec.steps:
                    if (outcomes := dec.under_each_rule(step.index)) is None:  # nothing drafted
                        continue
                    drafted.append(step.tau)
                    for o in outcomes:
                        accepted[o.rule].append(o.n)
                done += 1
                if progress:
                    progress(done, total, f"τ = {tau}, prompt {i + 1}, seed {seed}")
        if not drafted:
            raise ConfigError(f"no step drafted a token at τ = {tau}: give a longer run or another prompt")
        rows += [RuleRow(tau, rule, tuple(drafted), tuple(accepted[rule])) for rule in VERIFICATIONS]
    return RuleComparison(tuple(rows))
