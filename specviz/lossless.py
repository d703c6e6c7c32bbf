"""Is it lossless? Repeat the first step many times and compare the emitted token's empirical
distribution with the target's own (SPEC.md: lossless and greedy keep it, textbook with sampling
does not), by a chi-square goodness-of-fit test."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from specviz.config import SpecConfig
from specviz.engine import Decoder, encode_prompt
from specviz.pair import ModelPair
from specviz.sampling import logits_to_probs, one_hot

SIGNIFICANCE = 0.01
MIN_EXPECTED = 5.0  # chi-square cells expected to hold fewer samples are pooled


@dataclass(frozen=True)
class LosslessCheck:
    mode: str
    trials: int
    tokens: tuple[int, ...]  # the cells shown: tokens likely under the target or emitted
    observed: tuple[int, ...]  # how often each was emitted first
    expected: tuple[float, ...]  # the target's probability of each
    chi2: float
    dof: int
    p_value: float

    @property
    def consistent(self) -> bool:
        return self.p_value >= SIGNIFICANCE

    def verdict(self) -> str:
        target = "the target's greedy token" if self.mode == "greedy" else "the target's distribution"
        if self.consistent:
            return (
                f"{self.mode}: consistent with {target} (chi-square p-value {self.p_value:.3f} over "
                f"{self.trials} trials): no sign of a difference."
            )
        shown = f"{self.p_value:.2g}" if self.p_value >= 1e-4 else "< 0.0001"
        return (
            f"{self.mode}: differs from {target} (p-value {shown} over {self.trials} trials): "
            "this mode changes what the model says."
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
    full_step = dataclasses.replace(config, max_new_tokens=config.tau + 1)  # room for a whole step
    decoder = Decoder(pair, prompt, full_step, chat=chat)
    for i in range(trials):
        decoder.restart(config.seed + i)
        yield decoder.step().emitted[0]


def check(mode: str, samples: list[int], probs: torch.Tensor) -> LosslessCheck:
    """Chi-square of the samples against `probs`; a token the target cannot emit fails outright."""
    n = len(samples)
    counts = Counter(samples)
    expected = probs * n
    cells = sorted({int(t) for t in torch.nonzero(expected >= MIN_EXPECTED).flatten().tolist()} | set(counts))
    impossible = any(float(probs[t]) == 0.0 for t in counts)
    obs = torch.tensor([counts.get(t, 0) for t in cells], dtype=torch.float64)
    exp = torch.tensor([float(expected[t]) for t in cells], dtype=torch.float64)
    rest_obs, rest_exp = n - float(obs.sum()), n - float(exp.sum())
    if rest_exp > 1e-9:  # pool every other token into one cell
        obs, exp = torch.cat([obs, torch.tensor([rest_obs])]), torch.cat([exp, torch.tensor([rest_exp])])
    keep = exp > 0
    chi2 = float(((obs[keep] - exp[keep]) ** 2 / exp[keep]).sum())
    dof = max(int(keep.sum()) - 1, 1)
    p_value = 0.0 if impossible else float(torch.special.gammaincc(torch.tensor(dof / 2), torch.tensor(chi2 / 2)))
    return LosslessCheck(
        mode=mode, trials=n, tokens=tuple(cells), observed=tuple(counts.get(t, 0) for t in cells),
        expected=tuple(float(probs[t]) for t in cells), chi2=chi2, dof=dof, p_value=p_value,
    )  # fmt: skip
