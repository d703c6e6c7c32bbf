"""Timing the target's passes: one pass over k tokens at one cache length for several k, interleaved round by
round (pass_times: T(k) and v(k) = T(k) / T(1)), and one pass over τ + 1 tokens against τ + 1 one-token
passes, alternating (verify_timing). Medians with their interquartile ranges (docs/algorithm.md, "Verify
cost"). The runs themselves are timed step by step beside the target alone in specviz.analysis.measure."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from specviz.analysis.measure import Spread, check_verify_cost, median_iqr
from specviz.core.prompt import encode_prompt
from specviz.errors import ConfigError
from specviz.models.pair import ModelPair


def pass_times(pair: ModelPair, ids: Sequence[int], ks: Sequence[int], repeats: int = 5) -> dict[int, Spread]:
    """The target's time (ms) for one pass over k tokens, for each k in `ks`, all at the same cache
    length: the prompt's `ids` less its last max(ks) tokens, the passes scoring those. Interleaved: each
    round times every k once (in a rotating order), after one warm-up round; each k's median and
    interquartile range over the rounds. v(k) = T(k) / T(1). MeasurementError where a v(k) is impossible
    (specviz.analysis.measure.check_verify_cost: the one-token passes were slowed while they were timed)."""
    if len(ids) < max(ks) + 1:
        raise ConfigError(f"the prompt needs at least {max(ks) + 1} tokens to time passes of {max(ks)}")
    head = len(ids) - max(ks)
    session = pair.target.new_session()
    session.extend(list(ids[:head]), keep=1)
    times: dict[int, list[float]] = {k: [] for k in ks}
    order = list(ks)
    for round_ in range(repeats + 1):
        for k in order[round_ % len(order) :] + order[: round_ % len(order)]:
            start = time.perf_counter()
            session.extend(list(ids[head : head + k]), keep=k)
            if round_:  # the first round warms up
                times[k].append((time.perf_counter() - start) * 1000.0)
            session.crop(head)
    how = f"median and interquartile range of {repeats} interleaved rounds"
    spreads = {k: median_iqr(v, how) for k, v in times.items()}
    if 1 in spreads:  # a pass over k tokens far cheaper than one over a single token was not timed as the others
        one = spreads[1].value
        for k, spread in spreads.items():
            if k > 1:
                check_verify_cost(spread.value / one, k, one)
    return spreads


def rounds(items: Sequence[Any], repeats: int) -> Iterator[Any]:
    """`items` in `repeats` rounds, the order rotating each round (interleaved, never one block after another)."""
    for r in range(repeats):
        shift = r % max(len(items), 1)
        yield from [*items[shift:], *items[:shift]]


@dataclass(frozen=True)
class VerifyTiming:
    """One target pass over τ + 1 positions against τ + 1 one-token passes over the same tokens,
    alternating round by round."""

    tokens: int  # τ + 1
    parallel_ms: Spread  # one pass over all of them
    sequential_ms: Spread  # the one-token passes, summed
    ratio: Spread  # how many one-token passes the single pass costs (1.0 would be free parallelism)


def verify_timing(pair: ModelPair, prompt: str, tau: int, chat: bool | None = None, repeats: int = 7) -> VerifyTiming:
    """Time verification both ways on the prompt's own text: the target's cache holds the prompt
    minus its last τ + 1 tokens, which are then scored in one pass, or one at a time, the two
    alternating round by round (the cache cropped back after each); medians and interquartile
    ranges of `repeats` rounds after one warm-up round. Raises MeasurementError where the one pass came out
    cheaper than any runtime's (measure.check_verify_cost)."""
    _, ids, _ = encode_prompt(pair, prompt, chat)
    if len(ids) < tau + 2:
        raise ConfigError(f"the prompt needs at least {tau + 2} tokens to time τ = {tau}; it has {len(ids)}")
    head, tail = ids[: -(tau + 1)], ids[-(tau + 1) :]
    session = pair.target.new_session()
    session.extend(head, keep=1)
    parallel, sequential = [], []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        session.extend(tail, keep=len(tail))
        parallel.append((time.perf_counter() - start) * 1000.0)
        session.crop(len(head))
        start = time.perf_counter()
        for token in tail:
            session.extend([token], keep=1)
        sequential.append((time.perf_counter() - start) * 1000.0)
        session.crop(len(head))
    parallel, sequential = parallel[1:], sequential[1:]  # the first round warms up
    ratios = median_iqr([p / (s / len(tail)) for p, s in zip(parallel, sequential, strict=True)])
    one_by_one = median_iqr(sequential)
    check_verify_cost(ratios.value, len(tail), one_by_one.value / len(tail))  # no runtime's pass is that cheap
    return VerifyTiming(len(tail), median_iqr(parallel), one_by_one, ratios)
