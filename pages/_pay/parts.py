"""Would it pay there?: where the acceptance comes from (this session's Decode run, its τ sweep, or by hand) and
this machine's calibration, drawn. Widgets and calls; the model is specviz.analysis.outlook."""

from __future__ import annotations

import streamlit as st

import specviz
from pages._common.picker import decode_choice
from pages._serving import config as _server
from pages._serving import timings as timings_ui
from pages._serving.pairs import load_pair
from specviz import specs
from specviz.analysis import outlook as ol
from specviz.analysis.measure import Spread
from specviz.classroom import pay
from specviz.server.stepper import held_stepper
from specviz.specs import EMBEDDED_SPEC, ModelSpec
from specviz.viz.plain import plain

SOURCES, HERE = ol.SOURCES, ol.HERE


def acceptance(source: str, alpha: float) -> tuple[ol.Acceptance, str | None]:
    """The acceptance to carry over from this session's Decode run, its τ sweep or α by hand
    (specviz.classroom.pay.acceptance), and a note when the chosen source has nothing yet."""
    stepper = held_stepper(st.session_state)
    dec = stepper.decoder if stepper else None
    run = dec.trace() if dec is not None and dec.steps else None
    trees = pay.tree_tokens(st.session_state.get("sweep_trees_result"))
    return pay.acceptance(source, alpha, run, st.session_state.get("pay_sweep"), trees)


def few_steps_warning(accept: ol.Acceptance) -> None:
    """Said where the acceptance comes from very few Decode steps (specviz.classroom.pay.few_steps)."""
    stepper = held_stepper(st.session_state)
    dec = stepper.decoder if stepper else None
    if warning := pay.few_steps(accept, dec.trace() if dec is not None and dec.steps else None):
        st.warning(warning, icon=":material/warning:")


def _decode_pair() -> tuple[tuple[ModelSpec, ModelSpec] | None, tuple[str, str] | None]:
    """The Decode page's (target, draft) specs and their names, or (None, None) before its first Step."""
    chosen = decode_choice()
    if chosen is None:
        return None, None
    pair = held_stepper(st.session_state).decoder.pair
    return chosen[:2], (pair.target.name, pair.draft.name)


def timed_pair() -> tuple[ModelSpec, ModelSpec, str | None]:
    """The pair this machine is timed on (specviz.classroom.pay.timed_specs), as specs, and a note when the Decode
    page's pair could not be taken."""
    target, draft, passed = pay.timed_specs(_decode_pair()[0])
    note = passed and f"The Decode page's target ({plain(passed)}) is not sized here: the embedded pair."
    return specs.parse(target), specs.parse(draft), note


def your_pair() -> tuple[ol.Model, ol.Model] | None:
    """The Decode page's GGUF pair as the cost model sees it from the headers; None for another pair or none."""
    chosen, names = _decode_pair()
    return pay.header_models(*chosen, names, places=_server.config().places) if chosen else None


def timed_pair_words() -> str:
    """The pair this machine is timed on, in words, before it loads: for the Model pair box."""
    _specs, names = _decode_pair()
    target, draft, _note = timed_pair()
    if names and (target, draft) != (EMBEDDED_SPEC, EMBEDDED_SPEC):
        return f"{names[0]} + {names[1]}"
    return pay.EMBEDDED_WORDS if draft == EMBEDDED_SPEC else f"the embedded target + {draft}"


def measured_here() -> tuple[ol.Calibration | None, specviz.ModelPair | None]:
    """This machine's calibration on the Decode page's pair (timed_pair) and the runtime chosen in the sidebar: the
    roofline fitted to the pair's kept timings (pages/_serving/timings.py: the same T(k) and c every page reads),
    measured on a click where no page has yet."""
    target, draft, note = timed_pair()
    pair = load_pair(target, draft)
    if pair is None:
        return None, None
    st.caption(
        f"Timed on {plain(pair.target.name)} drafted by {plain(pair.draft.name)} ({pair.runtime}): the Decode page's "
        "pair where it has one." + (f" {note}" if note else "")
    )
    pressed = timings_ui.book().get(pair) is None and st.button(
        f"Time the passes on this machine ({pair.runtime})", key="pay_measure", icon=":material/timer:"
    )
    timings = timings_ui.costs(pair, 4, "pay_measure_again", measure=pressed)
    if timings is None:
        st.info(
            "Press the button: a few seconds to time the target's passes over 1 to 16 tokens and a draft forward, "
            "interleaved; then the model is fitted to them.",
            icon=":material/timer:",
        )
        return None, pair
    calibration, c = ol.fitted(pair, timings.passes_ms, timings.context), ol.draft_cost_of(timings)
    st.session_state["pay_draft_cost"] = c
    st.session_state.setdefault("pay_calibration", {})[(pair.runtime, target, draft)] = (calibration, c)
    return calibration, pair


def same_sweep(pair: specviz.ModelPair):
    """The τ sweep of this session when it ran this pair on this runtime (its runs give the speedups)."""
    sweep = st.session_state.get("pay_sweep")
    names = (pair.runtime, pair.target.name, pair.draft.name)
    return sweep if sweep and (sweep["runtime"], sweep["target"], sweep["draft"]) == names else None


def draft_cost(pair: specviz.ModelPair) -> tuple[Spread, str]:
    """c for this machine: the pair's kept timings' (the same c on every page)."""
    return st.session_state["pay_draft_cost"], "the pair's timings (a draft forward against a one-token pass)"


def calibration_panel(cal: ol.Calibration, pair: specviz.ModelPair) -> list[tuple[int, Spread]]:
    """The fit against the passes timed here, and the τ sweep's measured speedups (same runtime, embedded pair)
    against S_v predicted from the same runs' tokens per step; returns those measured speedups for the chart."""
    c, where = draft_cost(pair)
    with st.expander(f"This machine, measured: the fit to {len(cal.measured_ms)} timed passes", expanded=True):
        st.markdown(f"{cal.sentence()} The draft's cost c = {c.text(3, '')}, from {where}.")
        st.table(cal.rows())
        sweep = same_sweep(pair)
        if sweep is None:
            st.caption("Run a τ sweep of this pair on this runtime to see its measured speedups on the curve.")
            return []
        rows = [r for r in sweep["summary"].rows if r.speedup is not None]
        measured = [(r.tau, r.mean_acceptance_length, r.speedup) for r in rows]
        table = ol.against_measured(cal, c.value, measured)
        agree = sum(r["agrees"] for r in table)
        st.markdown(
            f"**The τ sweep's measured speedups against the model**: {agree} of {len(table)} within their interval "
            "widened by the fit's error at τ + 1 tokens; predicted from the same runs' tokens per step and c."
        )
        st.table([{**row, "agrees": "yes" if row["agrees"] else "no"} for row in table])
        return [(t, s) for t, _, s in measured]
