"""Reading a trace (the current run or a replayed one): where the time went and the bottleneck; the run's speedup
from its counted work at the pair's kept calibration (v and c the calibration's, labelled), and, on request, the run
timed again beside the target alone (its speedup, v and c with their intervals) where its clocks were undisturbed;
the ceiling and what α and c cost of it."""

import contextlib

import streamlit as st

import specviz
from pages._common import snapshot as snapshots
from pages._common.widgets import lazy_expander
from pages._serving import timings as timings_ui
from pages._serving.busy import busy_notice
from specviz.analysis.counted import QUIET_MINUTE
from specviz.analysis.diagnosis import Diagnosis, diagnose, diagnose_counted
from specviz.analysis.measure import MeasurementError, paired_run
from specviz.analysis.snapshot import freeze, runtime_of
from specviz.core.trace import RunTrace
from specviz.pieces import in_pieces
from specviz.viz.plain import plain
from specviz.viz.render import refusal

CACHE = "decode_measured"  # this session's measurements, keyed by everything they measured


def measure_key(run: RunTrace, pair: specviz.ModelPair) -> tuple:
    """What a measurement of `run` measured: the runtime and its threads, both models, the prompt, every
    setting and the steps taken. Nothing timed under one of them is shown for another."""
    return (runtime_of(pair), pair.target.name, pair.draft.name, run.prompt_ids, repr(run.config), len(run.steps))


def trace_reading(run: RunTrace, pair: specviz.ModelPair | None = None, turn=None, frozen: dict | None = None) -> None:
    """With the live `pair`, a button times the run again beside the target alone (in compute turns) so
    that the reading can give v, c and the measured speedup; `frozen`: a snapshot's reading, shown as it was."""
    title = f"Reading this trace (the whole run, {len(run.steps)} steps): where the time went, and the bottleneck"
    with lazy_expander(
        title, "decode_reading_open", icon=":material/troubleshoot:", expanded=frozen is not None
    ) as box:
        if not box.open:
            return
        cache = st.session_state.setdefault(CACHE, {})
        key = measure_key(run, pair) if pair is not None and run.steps else None
        kept = timings_ui.book().get(pair) if key is not None and not frozen else None  # the pair's calibration
        pressed = key is not None and st.button(
            "Time this run beside the target alone", key="decode_measure", icon=":material/timer:"
        )
        if pressed:
            try:
                with (
                    st.spinner(
                        f"Decoding the {len(run.steps)} steps again, each beside the target alone on its tokens…"
                    ),
                    in_pieces(turn or contextlib.nullcontext),  # each step and its counterpart: a turn of its own
                ):
                    measured = paired_run(pair, list(run.prompt_ids), run.config, max_steps=len(run.steps))
                cache[key] = diagnose(run, measured)
            except MeasurementError as exc:  # waited, or impossible timings: the clocks withheld, the counts read
                cache.pop(key, None)  # and no verdict of an earlier timing stays: the reading names none unmeasured
                more = (
                    "Its counts are read at the pair's kept costs below."
                    if kept
                    else f"{QUIET_MINUTE[:1].upper()}{QUIET_MINUTE[1:]}."
                )
                advice = "Time it again when the server is quieter."
                st.warning(f"**Could not clock this run.** {plain(refusal(exc, advice))} {more}")
        counted = diagnose_counted(run, kept) if kept is not None else None  # no clock of this run in it
        d = Diagnosis.from_dict(frozen) if frozen else cache.get(key) or counted or diagnose(run)
        if key is not None and not frozen:  # times of this server, just now
            busy_notice()
        _tiles(d, run, None if key is None else key[0], frozen is not None)
        if key is not None and not frozen:  # the pair's costs, the same on every page; timed with this run's
            timings_ui.costs(pair, run.config.tau, "decode_measure_pair", measure=pressed)
        if key is not None and d.run_speedup is not None and not frozen:
            snapshots.panel("reading", freeze("reading", key[0], {"trace": run.to_dict(), "reading": d.to_dict()}))


def _tiles(d: Diagnosis, run: RunTrace, runtime: str | None, frozen: bool = False) -> None:
    shares = d.shares()
    cols = st.columns(3)
    cols[0].metric("drafting", f"{shares['draft']:.0%}", help=f"{d.draft_ms:.0f} ms, all draft phases")
    cols[1].metric("verifying", f"{shares['verify']:.0%}", help=f"{d.verify_ms:.0f} ms, all target passes")
    cols[2].metric("reading the prompt", f"{shares['prefill']:.0%}", help=f"{d.prefill_ms:.0f} ms, both models")
    cols = st.columns(3)
    cols[0].metric(
        f"S(τ = {d.tau}), v = 1",
        "–" if d.predicted_speedup is None else f"{d.predicted_speedup:.2f}×",
        help="(1 − α^(τ+1)) / ((1 − α)(τc + 1)): Leviathan et al., who take a pass over τ + 1 tokens "
        "to cost one over a single token (what a GPU engine sees); shown beside the measured S_v once the run is "
        "timed, never as a prediction of its own",
    )
    cols[1].metric(
        f"S_v(τ = {d.tau}), {'kept' if d.calibration else 'measured'} v",
        "–" if d.predicted_speedup_v is None else d.predicted_speedup_v.text(),
        help="E / (τc + v(τ+1)), with v measured on this runtime, at this run's context lengths (docs/algorithm.md)",
    )
    cols[2].metric(
        "this run vs the target alone" + (" (counted × kept costs)" if d.calibration else ""),
        "–" if d.run_speedup is None else d.run_speedup.text(),
        help="its counted work (tokens, passes and the tokens in each, draft tokens) at the pair's kept costs, over "
        "their interquartile ranges"
        if d.calibration
        else "measured: each step timed beside the target alone decoding the same tokens, the two "
        "alternating; 95% bootstrap interval over the steps",
    )
    st.markdown(f"**Bottleneck.** {plain(d.bottleneck) if frozen else d.bottleneck}")  # frozen: from a link
    alpha = "–" if d.alpha is None else f"{d.alpha:.3f}"
    approx = (
        f" — approximate (top-{run.target_top_k}): the remote target returned only its top "
        f"{run.target_top_k} probabilities"
        if run.target_top_k
        else ""
    )
    if d.calibration:
        timing = (
            f"c = {d.c_one_token.text(3, '')} and v(τ + 1) = {d.verify_cost.text(2, '')} from "
            f"{plain(d.calibration)}; the run's speedup is its counted work at those costs (no clock of this run in "
            "it). **Time this run** clocks it too, where the server is quiet."
        )
    elif d.verify_cost is None:
        timing = (
            "c = one draft forward over one verify pass, as recorded in this trace. Press **Time this run** to "
            "measure it beside the target alone: then v and the run's speedup are known (a replayed trace has "
            "no model to time)."
        )
    else:
        timing = (
            f"c = {d.c_one_token.text(3, '')}: one draft forward over one token of the target alone; "
            f"v(τ + 1) = {d.verify_cost.text(2, '')}: this run's verify passes over it, both measured at this "
            "run's context lengths, the two alternating step by step (timed on "
            f"{runtime or 'the runtime that ran'})."
        )
    c = "–" if d.c is None else f"{d.c:.3f}"
    st.caption(f"α = {alpha} (mean Σ min(p, q) over draft positions{approx}); c = {c}. {timing}")
    if (split := d.ceiling()) is not None:
        st.caption(f"**The ceiling.** {plain(split.words('this run'))}")
