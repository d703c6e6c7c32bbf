"""The checks every format's numbers pass, and the numbers rebuilt from what an engine prints: steps from rates or a
mean length, counts from rates printed to three decimals, the chains an SGLang (accept len, accept rate) fits."""

from __future__ import annotations

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
