"""What the benchmark across drafts found (specviz.classroom.across), drawn: the recommendation with the settings to
run it beside it, one table and one chart, what was withheld and why; and the drafts that do not fit the target."""

from __future__ import annotations

import streamlit as st

from specviz.classroom import across
from specviz.viz.plain import plain
from specviz.viz.sweep_charts import draft_sweep_chart


def unfit(drafts: across.Drafts) -> None:
    """Each draft that does not fit the target, with its own reason."""
    if not drafts.unfit:
        return
    count = len(drafts.unfit)
    lines = "\n".join(f"- **{plain(u.label)}**: {plain(u.reason)}" for u in drafts.unfit)
    st.markdown(f"**{count} do{'es' if count == 1 else ''} not fit this target**, each with why:\n{lines}")


def show(result: across.Across) -> None:
    """The recommendation, the settings to run it side by side under it, then the table and the chart."""
    rec = result.recommendation
    if rec.draft is not None:
        st.success(plain(rec.sentence), icon=":material/check_circle:")
    else:
        st.warning(plain(rec.sentence), icon=":material/do_not_disturb_on:")
    for label, why in result.result.withheld.items():
        st.warning(f"**{plain(label)}: withheld.** {plain(why)}", icon=":material/timer_off:")
    for label, why in result.untimed.items():
        st.warning(f"**{plain(label)}: its c and v were not timed.** {plain(why)}", icon=":material/timer_off:")
    if result.flags:
        st.markdown(f"**To run {plain(rec.draft)} at τ = {rec.tau}** in your own engine:")
    for flag, column in zip(result.flags, st.columns(len(result.flags)) if result.flags else (), strict=True):
        with column:
            st.code(flag.text, language="json" if flag.engine.startswith("LM Studio") else "bash", wrap_lines=True)
            st.caption(plain(f"{flag.engine}: {flag.reason}"))
    if result.note:
        st.caption(plain(result.note))
    st.table(result.table())
    st.caption(
        "Best τ: the τ with the highest measured speedup; α (accepted): accepted draft tokens over those the target "
        "decided on, in the sweep's mode; c: a draft forward, and v(τ + 1): a target pass over τ + 1 tokens, each in "
        "one-token target passes, from the pair's timings (the same on every page)."
    )
    st.plotly_chart(draft_sweep_chart(result.result), key="sweep_drafts_chart")
