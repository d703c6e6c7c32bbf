"""Is it lossless? Repeat the first step many times and compare the emitted token's empirical
distribution with the target's own (docs/algorithm.md: lossless and greedy keep it, textbook with sampling
does not), by a chi-square goodness-of-fit test."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch

from specviz.core.config import SpecConfig
from specviz.core.engine import Decoder
from specviz.core.prompt import encode_prompt
from specviz.core.sampling import logits_to_probs, one_hot
from specviz.errors import ConfigError
from specviz.models.lm import TableModel
from specviz.models.pair import ModelPair
from specviz.models.text import WordCodec

SIGNIFICANCE = 0.01
MIN_EXPECTED = 5.0  # chi-square cells the target expects to hold fewer samples are pooled
SHOWN = 12  # tokens drawn in the chart: the most likely or most emitted
METHOD = (
    "Chi-square goodness of fit at the 1% level: every token the target expects fewer than "
    f"{MIN_EXPECTED:g} times in this many trials is pooled into one cell, so the p-value is valid however "
    "long the tail; a token the target cannot emit fails the check outright."
)


# What the page tests: each mode, and lossless mode under each verification rule (docs/algorithm.md), the lossy ones
# at the settings a tuner reaches for ("Lossy rules": SGLang's thresholds at 0.5, transformers' recommended w = 0.7)
VARIANTS: dict[str, dict] = {
    "textbook": {"mode": "textbook"},
    "lossless": {"mode": "lossless"},
    "lossless, one-hot": {"mode": "lossless", "verification": "one-hot"},
    "lossless, block": {"mode": "lossless", "verification": "block"},
    "greedy": {"mode": "greedy"},
    "typical acceptance (lossy)": {"mode": "lossless", "verification": "typical"},
    "SGLang thresholds 0.5 (lossy)": {
        "mode": "lossless",
        "verification": "sglang",
        "threshold_single": 0.5,
        "threshold_acc": 0.5,
    },
    "static ensemble w = 0.7 (lossy)": {"mode": "lossless", "verification": "ensemble", "ensemble_weight": 0.7},
}


def variant_config(label: str, tau: int, temperature: float) -> SpecConfig:
    """The settings of one variant of the check (VARIANTS)."""
    return SpecConfig(tau=tau, temperature=temperature, **VARIANTS[label])


def table_pair(words: Sequence[str], p: Sequence[float], q: Sequence[float]) -> ModelPair:
    """A context-free pair from a hand-made table (each column normalised), for the page's "Hand-made tables";
    raises ConfigError when it is not one (repeated or empty tokens, negative numbers, a column of zeros)."""
    words = [str(w).strip() for w in words]
    try:
        p, q = [float(x) for x in p], [float(x) for x in q]
        if min(p + q) < 0 or not sum(p) or not sum(q):
            raise ValueError("non-negative numbers, not all zero")
        return ModelPair(
            TableModel([x / sum(p) for x in p], "p"), TableModel([x / sum(q) for x in q], "q"), WordCodec(words)
        )
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"distinct tokens with no spaces, non-negative numbers, not all zero ({exc})") from exc


@dataclass(frozen=True)
class LosslessCheck:
    mode: str
    trials: int
    tokens: tuple[int, ...]  # the tokens shown: the most likely under the target or most emitted
    observed: tuple[int, ...]  # how often each was emitted first
    expected: tuple[float, ...]  # the target's probability of each
    chi2: float
    dof: int  # cells of the test − 1 (0: too few trials to test anything)
    p_value: float
    pooled: int  # tokens the target can emit that share the pooled cell

    @property
    def consistent(self) -> bool:
        return self.p_value >= SIGNIFICANCE

    @property
    def p_value_text(self) -> str:
        """The p-value as every place on screen writes it: three significant digits, "< 0.0001" below that."""
        return f"{self.p_value:.3g}" if self.p_value >= 1e-4 else "< 0.0001"

    def headline(self) -> str:
        """The verdict in a few words, for a row of them on a projector."""
        if self.consistent and self.dof == 0 and self.pooled:
            return f"{self.mode}: too few trials"
        return f"{self.mode}: {'consistent' if self.consistent else 'differs'} (p = {self.p_value_text})"

    def verdict(self) -> str:
        target = "the target's greedy token" if self.mode == "greedy" else "the target's distribution"
        if self.consistent and self.dof == 0 and self.pooled:
            return (
                f"{self.mode}: too few trials to tell ({self.trials}: no token is expected {MIN_EXPECTED:g} times); "
                "raise the number of trials."
            )
        if self.consistent:
            return (
                f"{self.mode}: consistent with {target} (chi-square p-value {self.p_value_text} over "
                f"{self.trials} trials): no sign of a difference."
            )
        return (
            f"{self.mode}: differs from {target} (chi-square p-value {self.p_value_text} over {self.trials} trials): "
            "not lossless, this mode changes what the model says."
        )


def reference(pair: ModelPair, prompt: str, config: SpecConfig, chat: bool | None = None) -> torch.Tensor:
    """The target's distribution of the first token (one-hot argmax in greedy mode)."""
    _, ids, _ = encode_prompt(pair, prompt, chat)
    logits = pair.target.new_session().extend(ids, keep=1)[-1]
    probs = logits_to_probs(logits, config.temperature, config.top_k, config.top_p)
    return one_hot(probs.argmax(), probs.numel()) if config.mode == "greedy" else probs


def first_tokens(
    pair: ModelPair, prompt: str, config: SpecConfig, trials: int, chat: bool | None = None
) -> Iterator[int]:
    """The first token emitted by `trials` independent first steps (seeds seed, seed+1, ...)."""
    full_step = dataclasses.replace(config, max_new_tokens=config.depth + 1)  # room for a whole step
    decoder = Decoder(pair, prompt, full_step, chat=chat)
    for i in range(trials):
        decoder.restart(config.seed + i)
        yield decoder.step().emitted[0]


def check(mode: str, samples: list[int], probs: torch.Tensor) -> LosslessCheck:
    """Chi-square of the samples against `probs` (METHOD): one cell per token the target expects
    at least MIN_EXPECTED times, one pooled cell for all the others (merged into the smallest cell
    if it is itself expected less often); a token the target cannot emit fails outright."""
    n, counts = len(samples), Counter(int(t) for t in samples)
    expected = probs.to(torch.float64) * n
    big = torch.nonzero(expected >= MIN_EXPECTED).flatten().tolist()
    obs = [float(counts.get(t, 0)) for t in big]
    exp = [float(expected[t]) for t in big]
    rest_obs, rest_exp = n - sum(obs), n - sum(exp)
    if rest_exp > 1e-9:
        if rest_exp < MIN_EXPECTED and exp:  # too small to stand alone: join the smallest cell
            i = exp.index(min(exp))
            obs[i], exp[i] = obs[i] + rest_obs, exp[i] + rest_exp
        else:
            obs, exp = [*obs, rest_obs], [*exp, rest_exp]
    chi2 = sum((o - e) ** 2 / e for o, e in zip(obs, exp, strict=True))
    dof = len(exp) - 1
    if any(float(probs[t]) == 0.0 for t in counts):
        p_value = 0.0
    elif dof == 0:
        p_value = 1.0
    else:
        p_value = float(torch.special.gammaincc(torch.tensor(dof / 2), torch.tensor(chi2 / 2)))
    top = torch.topk(probs, min(SHOWN, len(probs)))
    likely = top.indices[top.values > 0].tolist()
    shown = sorted({*likely, *counts}, key=lambda t: -max(float(expected[t]), counts.get(t, 0)))[:SHOWN]
    shown.sort(key=lambda t: (-float(probs[t]), -counts.get(t, 0), t))  # one order in every mode: the target's
    return LosslessCheck(
        mode=mode,
        trials=n,
        tokens=tuple(shown),
        observed=tuple(counts.get(t, 0) for t in shown),
        expected=tuple(float(probs[t]) for t in shown),
        chi2=chi2,
        dof=dof,
        p_value=p_value,
        pooled=int((probs > 0).sum()) - len(big),
    )
