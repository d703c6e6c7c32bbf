"""The race's result in words (pages/race.py draws the lanes): the speedup coloured by its interval, why, with the
pair's costs every page reads (pages/_serving/timings.py), where it was measured, and whether both wrote the same text.
Beside it, or in its place where the clocks were disturbed, the counted work at the pair's kept costs (labelled with the
calibration it rests on), and the ceiling with what α and c cost of it."""

from __future__ import annotations

import streamlit as st

from pages._race import greedy as greedy_ui
from specviz.analysis.counted import uncosted
from specviz.analysis.measure import BusyMachine, MeasurementError
from specviz.analysis.pairtimes import PairTimings
from specviz.analysis.race import RaceResult
from specviz.viz.plain import plain
from specviz.viz.render import refusal


def verdict(
    result: RaceResult,
    where: str = "",
    busy: bool = False,
    greedy: greedy_ui.Greedy | None = None,
    timings: PairTimings | None = None,
) -> None:
    """The result in words, coloured by what its interval says; where the clocks cannot be read (a `busy` server,
    pieces that waited, impossible times) the counted work at the pair's kept `timings` answers instead, labelled, or
    what was counted and what a quiet minute would add; the ceiling and what α and c cost of it; where it was timed;
    and whether both wrote the same text, or where and why not."""
    costed = result.costed(timings) if timings is not None and timings.quiet and result.pass_tokens else None
    try:
        summary = result.summary(timings)
    except MeasurementError as exc:  # waited for a core, or impossible timings: the clocks are withheld, not the counts
        waited = isinstance(exc, BusyMachine)
        why = "its pieces waited for a core" if waited else "its timings cannot be right"
        told = plain(exc) if waited else plain(refusal(exc, "Start again when the server is quieter."))  # advice once
        clocked = f"The live clocks are not shown: {why}. {told}"
        summary = None
    if summary is not None and not busy:
        spread = result.speedup_spread()
        shown = st.success if spread.above(1.0) else st.warning if spread.below(1.0) else st.info
        shown(summary, icon=":material/sports_score:")
        if costed is not None:
            st.caption(f"Counted work at the kept costs, beside it: {plain(costed.sentence())}.")
    elif costed is not None:  # the clocks withheld: the counts at the kept costs answer, and say so
        why = clocked if summary is None else "The live clocks ran while the server was busy: not shown as a result."
        st.info(f"**Speculative decoding: {plain(costed.sentence())}.** {why}", icon=":material/sports_score:")
    else:
        why = clocked if summary is None else "The live clocks ran while the server was busy: not a result."
        counted = plain(uncosted(result.work)) if result.pass_tokens else ""  # a race saved before its counts: none
        st.warning(
            f"**The race could not clock a speed.** {why} {counted} The texts are right.",
            icon=":material/timer_off:",
        )
    split = result.ceiling(timings)
    if split:
        st.caption(f"**The ceiling.** {plain(split)}")
    if where and summary is not None:  # a race whose times were withheld was not "measured" as anything
        st.caption(
            f"Measured: {where}, the race's prompt, greedy, τ = {result.tau}. A speedup depends on the prompt, "
            "the draft, the runtime, the machine and its load: the README's (a quiet machine, its date and CPU "
            "beside it) and a lesson's are other measurements."
        )
    greedy_ui.texts(result, greedy)  # the same text, or where the texts part and why (batch variance, or a bug)
