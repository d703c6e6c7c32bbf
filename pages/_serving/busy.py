"""The busy server's notice, wherever a live time is on screen (race, Decode's metrics and reading, sweep, lessons):
the numbers and the words come from specviz.analysis.busy; this only draws them."""

from __future__ import annotations

import streamlit as st

from specviz.analysis import busy


def busy_notice(load: busy.MachineLoad | None = None, box=None) -> busy.MachineLoad | None:
    """A warning when the machine is busy: with `load` as it was when a time was measured, else as it is now;
    drawn in `box` (an st.empty) when given. Returns the load it read."""
    load = load or busy.current_load()
    text = load.notice() if load is not None else None
    if text:
        (box or st).warning(text, icon=":material/speed:")
    elif box is not None:
        box.empty()
    return load
