"""The checks every format's numbers pass, and the numbers rebuilt from what an engine prints: steps from rates or a
mean length, counts from rates printed to three decimals, the chains an SGLang (accept len, accept rate) fits."""

from __future__ import annotations

import itertools
import math

from specviz.analysis.engine_import.records import SGLANG_MAX_TAU
from specviz.errors import EngineLogError


def is_number_text(text: str) -> bool:
    """A whole number written in ASCII digits: str.isdigit() and int() take any script's digits ("٣" is 3)."""
    return text.isascii() and text.isdigit()


def cut_off(n: int, what: str, line: str, missing: str) -> EngineLogError:
    shown = line.strip()
    shown = shown if len(shown) <= 160 else "…" + shown[-157:]  # its end: where a line is cut
    return EngineLogError(
        f"Line {n}: a {what} line without {missing}: cut off or not as the engine prints it: {shown}", n
    )


def contradiction(n: int, what: str) -> EngineLogError:
    return EngineLogError(f"Line {n}: the counts contradict each other: {what}.", n)


def printed_rates(text: str | None, n: int) -> tuple[float, ...] | None:
    """Per-position rates as printed; unconditional, so in [0, 1] and never rising."""
    if text is None:
        return None
    rates = tuple(float(r) for r in text.split(", "))
    if any(not 0.0 <= r <= 1.0 for r in rates):
        raise contradiction(n, f"a per-position rate outside 0 to 1 ({text})")
    for i in range(1, len(rates)):
        if rates[i] > rates[i - 1]:
            raise contradiction(
                n,
                f"the per-position rate rises from {rates[i - 1]:.3f} at position {i} to {rates[i]:.3f} at "
                f"position {i + 1}, but a step that accepts position {i + 1} has accepted position {i}",
            )
    return rates


def steps_from(accepted: int, rates: tuple[float, ...] | None, length: float | None) -> int | None:
    """The steps behind printed numbers: accepted / Σ rates, else accepted / (mean length − 1)."""
    if rates and sum(rates) > 0:
        return max(1, round(accepted / sum(rates)))
    if length is not None and math.isfinite(length) and length > 1.0:
        return max(1, round(accepted / (length - 1.0)))
    return None


MAX_STEP_CANDIDATES = 2_000  # steps tried against printed numbers; a wider range keeps the rounded estimate


def _within(value: float, half: float, steps: int) -> tuple[int, int]:
    """The whole counts c with c / steps within `half` of a printed `value` (and within 0 … steps)."""
    eps = 1e-9
    return max(0, math.ceil(steps * (value - half) - eps)), min(steps, math.floor(steps * (value + half) + eps))


def _count_bounds(rates: tuple[float, ...], steps: int, half: float) -> tuple[list[int], list[int]] | None:
    """Each position's count bounds at `steps`, made non-increasing (a step that accepts position i + 1 has accepted
    position i); None where some position has none."""
    bounds = [_within(r, half, steps) for r in rates]
    low = list(itertools.accumulate((lo for lo, _ in reversed(bounds)), max))[::-1]
    high = list(itertools.accumulate((hi for _, hi in bounds), min))
    return None if any(lo > hi for lo, hi in zip(low, high, strict=True)) else (low, high)


def _feasible(rates: tuple[float, ...], steps: int, accepted: int, half: float) -> bool:
    """Whether some non-increasing counts within the rates' rounding at `steps` sum to `accepted`."""
    found = _count_bounds(rates, steps, half)
    return found is not None and sum(found[0]) <= accepted <= sum(found[1])


def _counts_at(rates: tuple[float, ...], steps: int, accepted: int, half: float) -> tuple[tuple[int, ...], bool] | None:
    """(counts, unique): non-increasing whole counts within the printed rates' rounding at `steps`, summing to
    `accepted`, the nearest to rate × steps; unique where the rounding allows no other. None: no such counts."""
    found = _count_bounds(rates, steps, half)
    if found is None or not sum(found[0]) <= accepted <= sum(found[1]):
        return None
    low, high = found
    counts = [min(max(round(r * steps), lo), hi) for r, lo, hi in zip(rates, low, high, strict=True)]
    counts = [min(c, counts[i - 1]) if i else c for i, c in enumerate(counts)]
    while (gap := accepted - sum(counts)) != 0:
        step = 1 if gap > 0 else -1
        movable = [
            i
            for i in range(len(counts))
            if low[i] <= counts[i] + step <= high[i]
            and (i == 0 or counts[i] + step <= counts[i - 1])
            and (i == len(counts) - 1 or counts[i] + step >= counts[i + 1])
        ]
        if not movable:
            return None
        best = min(movable, key=lambda i: (abs(counts[i] + step - rates[i] * steps), i))
        counts[best] += step
    return tuple(counts), all(lo == hi for lo, hi in zip(low, high, strict=True))


def rebuild(
    accepted: int,
    rates: tuple[float, ...] | None,
    length: float | None,
    drafted: int | None,
    places: int = 3,
    steps: int | None = None,
) -> tuple[int | None, tuple[int, ...] | None, bool, str]:
    """(steps, counts, exact, note) from printed numbers, each taken as the interval its rounding allows (rates to
    `places` decimals, a mean length to two): the steps N with whole counts c_i, c_i / N within half a unit of each
    rate and summing to `accepted`, 1 + accepted / N within the mean's rounding, and N ≤ drafted ≤ N · τ (τ = the
    positions printed). Where several N fit, the nearest to accepted / Σ rates (or / (mean − 1)) is taken and said;
    `steps` where the engine printed them. Exact: one N, and one count each. (None, None, True, "") where nothing
    constrains the steps (nothing accepted); (None, None, False, "") where no N fits."""
    half, mean_half = 0.5 * 10.0**-places, 0.005
    if steps is not None:
        if not rates:
            return steps, None, True, ""
        found = _counts_at(rates, steps, accepted, half)
        return (steps, None, False, "") if found is None else (steps, found[0], found[1], "")
    guess = steps_from(accepted, rates, length)
    if guess is None:
        return None, None, True, ""
    k = len(rates) if rates else None
    low, high = 1, drafted if drafted is not None else None
    if k and drafted is not None:
        low = max(low, math.ceil(drafted / k))
    said = []
    if rates and sum(rates) > 0:
        top, bottom = sum(rates) + len(rates) * half, sum(rates) - len(rates) * half
        by_rates = (math.ceil(accepted / top - 1e-9), math.floor(accepted / bottom + 1e-9) if bottom > 0 else None)
        low = max(low, by_rates[0])
        high = by_rates[1] if high is None else high if by_rates[1] is None else min(high, by_rates[1])
        said.append(f"the per-position rates, printed to {places} decimals, allow {by_rates[0]} to {by_rates[1]} steps")
    if length is not None and math.isfinite(length) and length - 1.0 - mean_half > 0 and accepted > 0:
        low = max(low, math.ceil(accepted / (length - 1.0 + mean_half) - 1e-9))
        top = math.floor(accepted / (length - 1.0 - mean_half) + 1e-9)
        high = top if high is None else min(high, top)
    if high is None or high - low > MAX_STEP_CANDIDATES:
        counts = _counts_at(rates, guess, accepted, half) if rates else None
        return guess, counts[0] if counts else None, False, ""
    fits = [s for s in range(low, high + 1) if not rates or _feasible(rates, s, accepted, half)]
    if not fits:
        return None, None, False, ""
    pick = min(fits, key=lambda s: (abs(s - accepted / (sum(rates) if rates and sum(rates) > 0 else length - 1.0)), s))
    counts, unique = _counts_at(rates, pick, accepted, half) if rates else (None, False)
    note = ""
    if len(fits) > 1 or pick != guess:
        why = ", ".join(said) + "; " if said else ""
        fixed = (
            f"only {pick} fits them all"
            if len(fits) == 1
            else f"{fits[0]} to {fits[-1]} steps fit, {pick} (the nearest) taken"
        )
        note = (
            f"{why}with the mean length and {drafted} tokens drafted (at most {k} a step), {fixed}"
            if k and drafted is not None
            else f"{why}with the mean length {length}, {fixed}"
        )
    return pick, counts, len(fits) == 1 and (unique if rates else False), note


def counts_from(
    rates: tuple[float, ...], steps: int, accepted: int, n: int, prefix: bool = False
) -> tuple[tuple[int, ...], bool, bool]:
    """(counts, exact, partial): counts rebuilt from rates printed to three decimals: exact below 1,000 steps (then
    they sum to the accepted tokens), within 0.05% of the steps above. With `prefix` the rates may cover the first
    positions only (their counts then sum to less than the accepted tokens: `partial`)."""
    counts = tuple(round(r * steps) for r in rates)
    exact = steps < 1000
    slack = 0 if exact else 0.0005 * steps * len(rates) + len(rates)
    short = accepted - sum(counts)
    if prefix and short > slack:
        return counts, exact, True
    if abs(short) > slack:
        raise contradiction(
            n,
            f"the per-position rates ({', '.join(f'{r:.3f}' for r in rates)}) over {steps} steps give {sum(counts)} "
            f"accepted tokens, the line says {accepted}",
        )
    return counts, exact, False


def check_length(length: float | None, accepted: int, steps: int | None, n: int, places: int) -> None:
    if length is None or steps is None or not math.isfinite(length):
        return
    if abs(1.0 + accepted / steps - length) > 0.5 * 10.0**-places + 1e-9:
        raise contradiction(
            n,
            f"mean acceptance length {length} is not 1 + {accepted} accepted / {steps} steps = "
            f"{1.0 + accepted / steps:.{places + 2}f}",
        )


def check_totals(accepted: int, drafted: int, steps: int | None, positions: int | None, n: int) -> None:
    if accepted > drafted:
        raise contradiction(n, f"{accepted} tokens accepted but only {drafted} drafted")
    if steps is not None and drafted < steps:
        raise contradiction(n, f"{drafted} tokens drafted over {steps} steps, but every step drafts at least one")
    if steps is not None and positions and drafted > steps * positions:
        raise contradiction(n, f"{drafted} tokens drafted over {steps} steps of at most {positions} tokens each")


def tau_candidates(length: float, rate: float) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """The chains a printed (accept len, accept rate) fits, both to two decimals: (before sgl-project/sglang#23530,
    rate = len / (τ + 1); after, rate = (len − 1) / τ). None: the line says nothing (nothing accepted)."""
    if rate <= 0.0:
        return None, None
    lo_l, hi_l = length - 0.005, length + 0.005
    lo_r, hi_r = max(rate - 0.005, 1e-9), min(rate + 0.005, 1.0)
    least = max(1, math.ceil(lo_l - 1.0 - 1e-9))  # a step keeps at most τ draft tokens
    old = range(max(least, math.ceil(lo_l / hi_r - 1.0 - 1e-9)), min(SGLANG_MAX_TAU, math.floor(hi_l / lo_r - 1.0)) + 1)
    new = range(
        max(least, math.ceil((lo_l - 1.0) / hi_r - 1e-9)), min(SGLANG_MAX_TAU, math.floor((hi_l - 1.0) / lo_r)) + 1
    )
    return tuple(old), tuple(new)
