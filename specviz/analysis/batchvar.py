"""Batch variance: what a verify pass over k tokens gives against k one-token passes over the same tokens.

Speculative decoding scores τ + 1 tokens in one target pass; the target alone scores one token per pass. In exact
arithmetic the two give the same p at every position, which is why greedy speculation must write the target's greedy
text (docs/algorithm.md). A runtime computes them with other kernels, though: llama.cpp's batched matrix products on
quantized weights round differently from its one-token ones, so p can move by a few thousandths, and where the
target's two most likely tokens are that close the greedy choice flips. Engines' trackers know it as "not identical
output at temperature 0". `batch_variance` measures it for a model on its runtime; `greedy_difference` says where a
greedy race's two texts part, with the target's top two there in each kind of pass, and whether each side took the
most likely token of its own pass (then the algorithm did what it must, and the difference is batch variance).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from specviz.core.trace import StepTrace, TokenProb
from specviz.errors import ConfigError

# a |Δp| below this is float32 sums added in another order, not another computation: the float32 target and its
# 4-bit copy measured on llama.cpp's CPU variants in docs/algorithm.md, "Batch variance"
ROUNDING = 1e-5
MOST_POSITIONS = 96  # positions a measurement compares at most (a page measures on a run's own text)


@dataclass(frozen=True, kw_only=True)
class BatchVariance:
    """The largest |Δp| between a verify pass over `k` tokens and `k` one-token passes over the same tokens."""

    largest: float  # max over every position compared and every token of the vocabulary
    position: int  # where (0 = the first token after the prefix)
    token: int  # the token whose p moved most there
    batched_p: float  # its p in the pass over k tokens
    single_p: float  # its p in the one-token pass
    flips: int  # positions where the most likely token differs between the two
    positions: int  # positions compared
    k: int  # tokens per verify pass
    runtime: str  # what computed it ("llama.cpp", "torch", ...)
    by_position: tuple[float, ...] = ()  # the largest |Δp| at each position compared, in order
    gaps: tuple[float, ...] = ()  # the one-token top-2 gap at each position: where |Δp| reaches it, a tie can flip

    @property
    def negligible(self) -> bool:
        """Nothing beyond float32 sums added in another order (below ROUNDING)."""
        return self.largest < ROUNDING

    def words(self) -> str:
        """The measurement in one sentence."""
        passes = f"a verify pass over {self.k} tokens and {self.k} one-token passes on {self.runtime}"
        if self.negligible:
            return (
                f"{passes} gave the same p to within {self.largest:.0e} at each of {self.positions} positions "
                "(float32 sums added in another order): no batch variance to speak of"
            )
        flipped = f"the most likely token differed at {self.flips} of them" if self.flips else "no top choice moved"
        return (
            f"{passes} gave p up to {self.largest:.4f} apart ({self.single_p:.4f} one token at a time, "
            f"{self.batched_p:.4f} in the verify pass) over {self.positions} positions; {flipped}"
        )


def _probs(logits: torch.Tensor) -> torch.Tensor:
    return torch.softmax(logits.to(torch.float64), dim=-1)


def _close(session: Any) -> None:
    close = getattr(session, "close", None)
    if close is not None:
        close()


def batch_variance(model: Any, ids: Sequence[int], prefix: int, k: int) -> BatchVariance:
    """Read `ids[:prefix]` into two sessions of `model` alike (one pass each), then the rest (at most MOST_POSITIONS
    tokens) in passes of `k` tokens on one and one token per pass on the other, and compare p at every position.
    ConfigError where there is nothing to compare."""
    ids = [int(y) for y in ids]
    if k < 1:
        raise ConfigError(f"a verify pass holds at least one token; got k = {k}")
    if not 1 <= prefix < len(ids):
        raise ConfigError(f"batch variance needs a prefix and tokens after it: {len(ids)} ids, prefix {prefix}")
    ids = ids[: prefix + MOST_POSITIONS]
    batched, single = model.new_session(), model.new_session()
    largest, where, flips, by_position, gaps = -1.0, (0, 0, 0.0, 0.0), 0, [], []
    try:
        batched.extend(ids[:prefix], keep=1)
        single.extend(ids[:prefix], keep=1)
        for start in range(prefix, len(ids), k):
            chunk = ids[start : start + k]
            many = _probs(batched.extend(chunk))
            one = _probs(torch.cat([single.extend([y], keep=1) for y in chunk]))
            flips += int((many.argmax(-1) != one.argmax(-1)).sum())
            diff = (many - one).abs()
            by_position += diff.max(-1).values.tolist()
            top = torch.topk(one, min(2, one.shape[-1]), dim=-1).values
            gaps += (top[:, 0] - top[:, -1]).tolist()
            flat = int(diff.argmax())
            row, token = divmod(flat, diff.shape[-1])
            if float(diff[row, token]) > largest:
                largest = float(diff[row, token])
                where = (start - prefix + row, token, float(many[row, token]), float(one[row, token]))
    finally:
        _close(batched)
        _close(single)
    position, token, batched_p, single_p = where
    return BatchVariance(
        largest=largest,
        position=position,
        token=token,
        batched_p=batched_p,
        single_p=single_p,
        flips=flips,
        positions=len(ids) - prefix,
        k=k,
        runtime=model.capabilities.runtime,
        by_position=tuple(by_position),
        gaps=tuple(gaps),
    )


@dataclass(frozen=True, kw_only=True)
class GreedyDifference:
    """Where a greedy race's two texts part: the target's view there one token at a time (as the target alone ran it)
    and in the verify pass that chose speculation's token, and the batch variance measured on the same text."""

    index: int  # the first new token that differs (0-based)
    alone: TokenProb  # the target alone's token, with its p in its one-token pass
    speculative: TokenProb  # speculation's token, with its p in the verify pass that chose it
    one_token_top: tuple[TokenProb, TokenProb]  # the target's two most likely tokens in the one-token pass
    verify_top: tuple[TokenProb, ...]  # the most likely tokens of the verify pass there, as the step recorded them
    speculative_alone_p: float  # speculation's token's p in the one-token pass
    verify_tokens: int  # tokens that verify pass read
    variance: BatchVariance

    @property
    def gap(self) -> float:
        """The target's top-2 gap in the one-token pass: p of the most likely token less p of the second."""
        return self.one_token_top[0].prob - self.one_token_top[1].prob

    @property
    def alone_verify_p(self) -> float | None:
        """The target alone's token's p in the verify pass, where the step recorded it."""
        return next((t.prob for t in self.verify_top if t.token == self.alone.token), None)

    @property
    def own_choices(self) -> bool:
        """Each side chose the most likely token of its own pass: then the algorithm did what greedy decoding must,
        and the texts part only because the two kinds of pass disagree."""
        return (
            self.one_token_top[0].token == self.alone.token
            and bool(self.verify_top)
            and (self.verify_top[0].token == self.speculative.token)
        )

    def words(self) -> str:
        """Where and why, for a person who expected the same text."""
        a, s = self.alone, self.speculative
        in_verify = self.alone_verify_p
        head = (
            f"The texts part at new token {self.index + 1}: the target alone wrote '{a.text}', speculation "
            f"'{s.text}'. In the target's one-token pass there, '{a.text}' had p = {a.prob:.4f} and '{s.text}' "
            f"{self.speculative_alone_p:.4f} (its top-2 gap: {self.gap:.4f}); in the verify pass over "
            f"{self.verify_tokens} tokens that chose '{s.text}', '{s.text}' had {s.prob:.4f}"
            + (f" and '{a.text}' {in_verify:.4f}" if in_verify is not None else "")
            + ". "
        )
        measured = f"Measured on this text: {self.variance.words()}."
        if not self.own_choices:
            side = "the target alone" if self.one_token_top[0].token != a.token else "speculation"
            return head + (
                f"But {side} did not take the most likely token of its own pass: that is a bug, not batch variance "
                f"(please report it). {measured}"
            )
        return head + (
            f"Each side took the most likely token of its own pass, as greedy decoding must; the passes disagree. On "
            f"{self.variance.runtime} a pass over several tokens runs other kernels than a one-token pass, and they "
            "round differently (most on quantized weights), so p moves by a little and a near tie can reverse: batch "
            f"variance, not a bug of the algorithm. {measured}"
        )


def _step_at(steps: Sequence[StepTrace], index: int) -> tuple[StepTrace, int]:
    """The step that emitted new token `index`, and the token's offset in it."""
    start = 0
    for step in steps:
        if index < start + len(step.emitted):
            return step, index - start
        start += len(step.emitted)
    raise ConfigError(f"no step emitted new token {index + 1}")


def first_difference(alone: Sequence[int], speculative: Sequence[int]) -> int | None:
    """The first index where the two token lists differ (one ending early counts); None where they are equal."""
    for i, (a, s) in enumerate(zip(alone, speculative, strict=False)):
        if a != s:
            return i
    return None if len(alone) == len(speculative) else min(len(alone), len(speculative))


def race_variance(pair: Any, prompt_ids: Sequence[int], alone: Sequence[int], tau: int) -> BatchVariance:
    """The target's batch variance on a race's own text: the prompt, then the target alone's tokens in verify passes
    of τ + 1 tokens against one-token passes."""
    return batch_variance(pair.target, [*prompt_ids, *alone], len(prompt_ids), tau + 1)


def greedy_difference(
    pair: Any,
    prompt_ids: Sequence[int],
    alone: Sequence[int],
    steps: Sequence[StepTrace],
    tau: int,
    variance: BatchVariance | None = None,
) -> GreedyDifference | None:
    """Where a greedy race's target alone (`alone`, its tokens) and speculation (its `steps`) part, why, and the batch
    variance of the target on the race's own text (`race_variance`, measured here unless given); None where they wrote
    the same."""
    speculative = [y for step in steps for y in step.emitted]
    index = first_difference(alone, speculative)
    if index is None or index >= min(len(alone), len(speculative)):
        return None  # the same text, or one lane stopped early: nothing to explain token by token
    target, codec = pair.target, pair.codec
    session = target.new_session()
    try:
        logits = session.extend(list(prompt_ids), keep=1)[-1]
        for y in alone[:index]:  # the target alone's own passes: one token each
            logits = session.extend([int(y)], keep=1)[-1]
    finally:
        _close(session)
    p = _probs(logits)
    top = torch.topk(p, 2)
    one_top = tuple(TokenProb(int(t), codec.token_text(int(t)), float(v)) for v, t in zip(*top, strict=True))
    step, offset = _step_at(steps, index)
    verify_top = step.p_top[offset] if offset < step.n_accepted else step.next_top
    s, a = speculative[index], alone[index]
    s_p = next((t.prob for t in verify_top if t.token == s), math.nan)
    return GreedyDifference(
        index=index,
        alone=TokenProb(int(a), codec.token_text(int(a)), float(p[a])),
        speculative=TokenProb(int(s), codec.token_text(int(s)), s_p),
        one_token_top=one_top,
        verify_top=tuple(verify_top),
        speculative_alone_p=float(p[s]),
        verify_tokens=step.tau + 1,
        variance=variance or race_variance(pair, prompt_ids, alone, tau),
    )
