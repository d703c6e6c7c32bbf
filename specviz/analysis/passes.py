"""Timing the target's passes: one pass over k tokens at one cache length for several k, interleaved round by
round (pass_times: T(k) and v(k) = T(k) / T(1)), and one pass over τ + 1 tokens against τ + 1 one-token
passes, alternating (verify_timing). Medians with their interquartile ranges (docs/algorithm.md, "Verify
cost"). The runs themselves are timed step by step beside the target alone in specviz.analysis.measure."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from specviz.analysis import clock
from specviz.analysis.measure import BusyMachine, Spread, check_verify_cost, median_iqr
from specviz.core.prompt import encode_prompt
from specviz.errors import ConfigError
from specviz.models.pair import ModelPair
from specviz.pieces import piece as work_piece

# A round with a disturbed pass is timed again, up to RETRIES × the rounds asked for in all; fewer clean rounds than
# asked for by then: the measurement is withheld (BusyMachine).
RETRIES = 3


P = TypeVar("P")


def clean_rounds(
    pieces: Sequence[P], time_piece: Callable[[P], clock.Timed], repeats: int, what: str
) -> tuple[dict[P, list[float]], bool]:
    """Each piece timed once a round (`time_piece`), the order rotating round by round, after one warm-up round, until
    `repeats` rounds ran with no piece disturbed (specviz.analysis.clock): a round in which one was is timed again.
    BusyMachine where that takes more than RETRIES × `repeats` rounds. Returns each piece's milliseconds over the
    clean rounds, and whether every piece of them ran with no other process on any core (`Timed.quiet`)."""
    times: dict[P, list[float]] = {piece: [] for piece in pieces}
    reasons: list[str] = []
    quiet, tried = True, 0
    while len(times[pieces[0]]) < repeats:
        if tried > RETRIES * repeats:
            raise BusyMachine(clock.busy_message(what, reasons))
        shift = tried % len(pieces)
        round_: dict[P, clock.Timed] = {}
        with work_piece():  # a round, one piece of work: a server lets others go between rounds, never inside one
            for piece in [*pieces[shift:], *pieces[:shift]]:
                timed = time_piece(piece)
                if why := timed.disturbed():
                    reasons.append(why)
                    break
                round_[piece] = timed
            else:
                if tried:  # the first round warms up
                    for piece, timed in round_.items():
                        times[piece].append(timed.ms)
                        quiet = quiet and timed.quiet
        tried += 1
    return times, quiet


def pass_times(
    pair: ModelPair, ids: Sequence[int], ks: Sequence[int], repeats: int = 5, timer: clock.Timer | None = None
) -> dict[int, Spread]:
    """The target's time (ms) for one pass over k tokens, for each k in `ks`, all at the same cache
    length: the prompt's `ids` less its last max(ks) tokens, the passes scoring those. Interleaved: each
    round times every k once (in a rotating order), after one warm-up round; each k's median and
    interquartile range over the rounds. A round in which any pass waited for a core (`timer`'s evidence,
    specviz.analysis.clock) is timed again; BusyMachine where `repeats` clean rounds are not had in RETRIES × as many
    (clean_rounds). v(k) = T(k) / T(1). MeasurementError where a v(k) is impossible
    (specviz.analysis.measure.check_verify_cost)."""
    if len(ids) < max(ks) + 1:
        raise ConfigError(f"the prompt needs at least {max(ks) + 1} tokens to time passes of {max(ks)}")
    timer = timer or clock.default()
    head = len(ids) - max(ks)
    session = pair.target.new_session()
    with work_piece():
        session.extend(list(ids[:head]), keep=1)

    def time_pass(k: int) -> clock.Timed:
        threads = clock.threads_of(pair.target, k)
        _, timed = timer.time(lambda: session.extend(list(ids[head : head + k]), keep=k), "pass", k, threads)
        session.crop(head)
        return timed

    times, _ = clean_rounds(list(ks), time_pass, repeats, "The passes' timing")
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


def verify_timing(
    pair: ModelPair,
    prompt: str,
    tau: int,
    chat: bool | None = None,
    repeats: int = 7,
    timer: clock.Timer | None = None,
) -> VerifyTiming:
    """Time verification both ways on the prompt's own text: the target's cache holds the prompt
    minus its last τ + 1 tokens, which are then scored in one pass, or one at a time, the two
    alternating round by round (the cache cropped back after each); medians and interquartile
    ranges of `repeats` rounds after one warm-up round. A round in which either side waited for a core (`timer`'s
    evidence) is timed again; BusyMachine where `repeats` clean rounds are not had in RETRIES × as many. Raises
    MeasurementError where the one pass came out cheaper than any runtime's, or dearer than the one-token passes
    together (measure.check_verify_cost)."""
    _, ids, _ = encode_prompt(pair, prompt, chat)
    if len(ids) < tau + 2:
        raise ConfigError(f"the prompt needs at least {tau + 2} tokens to time τ = {tau}; it has {len(ids)}")
    timer = timer or clock.default()
    head, tail = ids[: -(tau + 1)], ids[-(tau + 1) :]
    session = pair.target.new_session()
    with work_piece():
        session.extend(head, keep=1)

    def time_piece(piece: str) -> clock.Timed:
        """One pass over all of them ("one pass"), or one pass per token ("one by one")."""
        if piece == "one pass":
            threads = clock.threads_of(pair.target, len(tail))
            _, timed = timer.time(lambda: session.extend(tail, keep=len(tail)), "pass", len(tail), threads)
        else:
            threads = clock.threads_of(pair.target, 1)
            _, timed = timer.time(lambda: [session.extend([y], keep=1) for y in tail], "alone", len(tail), threads)
        session.crop(len(head))
        return timed

    times, _ = clean_rounds(["one pass", "one by one"], time_piece, repeats, "The verify pass's timing")
    parallel, sequential = times["one pass"], times["one by one"]  # round by round: a clean round adds to both
    ratios = median_iqr([p / (s / len(tail)) for p, s in zip(parallel, sequential, strict=True)])
    one_by_one_ms = median_iqr(sequential)
    check_verify_cost(ratios.value, len(tail), one_by_one_ms.value / len(tail))  # no runtime's pass is that cheap
    return VerifyTiming(len(tail), median_iqr(parallel), one_by_one_ms, ratios)
