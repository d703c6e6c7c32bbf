"""The pair's timings, one set for every page (specviz.analysis.pairtimes): the server's TimingBook, shared by every
session and kept in the server's timings folder for every later process on this machine (specviz.server.config), and
the line each page draws from it (T(1), v(τ + 1), c, and when, on which runtime and under what load they were
measured), with "Measure again", which replaces what was kept."""

from __future__ import annotations

import streamlit as st

import specviz
from pages._serving.compute import heavy_job
from pages._serving.config import config
from specviz.analysis.pairtimes import PairTimings, TimingBook
from specviz.viz.plain import plain


def book() -> TimingBook:
    """The server's one book: a pair measured quietly on one page is what every page reads, in this process and in
    every later one on this machine (its folder)."""
    return _book(config().timings_dir)


@st.cache_resource(show_spinner=False)
def _book(folder) -> TimingBook:
    return TimingBook(folder)


def measured(
    pair: specviz.ModelPair, again: bool = False, in_job: bool = False, say: bool = True
) -> PairTimings | None:
    """The pair's kept timings; measured now where there are none (or `again`), in a heavy job's turn unless the
    caller already holds one (`in_job`). A measurement refused (a busy machine, an impossible time) is said (where
    `say`), and nothing is returned."""
    kept = book().get(pair)
    if kept is not None and not again:
        return kept
    try:
        with st.spinner("Timing the pair's passes (one pass over 1 to 16 tokens and a draft forward, interleaved)…"):
            if in_job:
                return book().measure(pair)
            with heavy_job():  # each round of passes a heavy turn of its own
                return book().measure(pair)
    except specviz.SpecvizError as exc:  # MeasurementError among them: a busy machine, an impossible time
        if say:
            st.warning(f"**The pair's passes could not be timed.** {plain(exc)}", icon=":material/timer_off:")
    return None


def kept(pair: specviz.ModelPair) -> PairTimings:
    """The pair's kept timings, measured now where there are none, inside the caller's heavy job (a lesson's run);
    MeasurementError where they cannot be had."""
    return book().get(pair) or book().measure(pair)


def costs(
    pair: specviz.ModelPair, tau: int, key: str, measure: bool = True, in_job: bool = False
) -> PairTimings | None:
    """The pair's costs at τ in one caption, measured first where the book has none (and `measure`), or that they
    were not kept; a "Measure the pair again" button (`key`) replaces them. Returns what was drawn."""
    line = st.empty()
    again = st.button("Measure the pair again", key=key, icon=":material/refresh:", help="Time the passes anew")
    timings = measured(pair, again=again, in_job=in_job) if measure or again else book().get(pair)
    if again and timings is not None and timings.quiet:
        st.rerun()  # every number on the page from the new timings
    if timings is not None:
        note = "" if timings.quiet else " Another process held a core meanwhile: shown, not kept as the pair's."
        variance = "" if timings.variance is None else f" Batch variance: {plain(timings.variance.words())}."
        kept = " and every later run on this machine" if timings.quiet else ""
        line.caption(
            f"**The pair's costs** (the same on every page{kept}): {plain(timings.sentence(tau))}.{note}{variance}"
        )
    return timings
