"""The race's result in words (pages/race.py draws the lanes): the speedup coloured by its interval, why, with the
pair's costs every page reads (pages/_timings.py), where it was measured, and whether both wrote the same text."""

from __future__ import annotations

import streamlit as st

from pages import _race_greedy as greedy_ui
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
    """The result in words, coloured by what its interval says (on a `busy` server, not as a result at all), or why
    it could not be measured (a race withheld: nothing from it is shown as a result); why, with the pair's `timings`
    where kept; where it was timed; and whether both wrote the same text, or where and why not."""
    summary = None
    try:
        summary = result.summary(timings)
    except BusyMachine as exc:  # its pieces waited for a core: said, never shown as a result
        st.warning(
            f"**The race could not measure a speed.** {plain(exc)} The texts are right; their times are not.",
            icon=":material/timer_off:",
        )
    except MeasurementError as exc:  # impossible timings: said, never shown as a result
        st.warning(
            f"**The race could not measure a speed.** {plain(refusal(exc, 'Start again when the server is quieter.'))} "
            "The texts are right; their times are not.",
            icon=":material/timer_off:",
        )
    else:
        spread = result.speedup_spread()
        shown = st.info if busy else st.success if spread.above(1.0) else st.warning if spread.below(1.0) else st.info
        shown(
            ("**Not a result: the server was busy while it ran.** " if busy else "") + summary,
            icon=":material/sports_score:",
        )
    if where and summary is not None:  # a race whose times were withheld was not "measured" as anything
        st.caption(
            f"Measured: {where}, the race's prompt, greedy, τ = {result.tau}. A speedup depends on the prompt, "
            "the draft, the runtime, the machine and its load: the README's (a quiet machine, its date and CPU "
            "beside it) and a lesson's are other measurements."
        )
    greedy_ui.texts(result, greedy)  # the same text, or where the texts part and why (batch variance, or a bug)
