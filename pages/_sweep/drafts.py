"""The τ sweep's "Across drafts" panel: for the pair's target, whatever it is (a GGUF file, the embedded one, a hub id),
every draft that fits it run on the same held-out prompts as one interleaved benchmark (specviz.classroom.across),
one recommendation and the settings to run it (pages/_sweep/across.py draws them); the drafts that do not fit, each
with its reason."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import streamlit as st

import specviz
from pages._common import own_models
from pages._common.picker import PRESETS
from pages._serving import config as _server
from pages._serving import timings
from pages._serving.compute import heavy_job
from pages._serving.pairs import pair_cache
from pages._sweep import across as view
from specviz import specs
from specviz.analysis.sweep import SweepSettings
from specviz.classroom import across
from specviz.classroom.settings import CUSTOM, ON_THIS_COMPUTER
from specviz.errors import ModelError
from specviz.loading import AUTO, resolve_runtime
from specviz.specs import ModelSpec
from specviz.training.prompts import eval_prompts
from specviz.viz.plain import plain

KEY = "sweep_drafts"  # the drafts chosen (specviz.classroom.settings); "sweep_drafts_for": the target they are for


def _choose(drafts: across.Drafts) -> list[str]:
    """The drafts to run: every one that fits, after the target changed; else the ones chosen that still fit."""
    labels = drafts.labels()
    if st.session_state.get(f"{KEY}_for") != drafts.target:
        st.session_state[KEY], st.session_state[f"{KEY}_for"] = labels, drafts.target
    else:
        st.session_state[KEY] = [label for label in st.session_state.get(KEY) or [] if label in labels]
    return st.multiselect(
        "Drafts that fit this target", labels, key=KEY, help="each one runs every τ on every held-out prompt"
    )


def _decode_target() -> ModelSpec | None:
    """The target chosen on the Decode page (its sidebar's pair, kept across pages); None where there is none, or its
    text is not well formed (the Decode page says why)."""
    label = st.session_state.get("decode_preset")
    if label == ON_THIS_COMPUTER:
        text = st.session_state.get("decode_local_target") or ""
    elif label == CUSTOM:
        text = st.session_state.get("decode_target") or ""
    else:
        text = PRESETS[label].target if label in PRESETS else ""
    try:
        return specs.parse(text) if text else None
    except ModelError:
        return None


def _from_decode() -> None:
    """This page's pair becomes the Decode page's (before the sidebar's boxes are drawn again)."""
    for key in ("preset", "target", "draft", "local_target", "local_draft"):
        st.session_state[f"sweep_{key}"] = st.session_state.get(f"decode_{key}")


def drafts_panel(pair: specviz.ModelPair, target: ModelSpec, draft: ModelSpec, settings: SweepSettings) -> None:
    """Which draft, which τ, whether it pays here, and the settings to run it: every draft that fits the pair's target,
    benchmarked together (specviz.classroom.across)."""
    with st.expander("Across drafts: which draft, which τ, and whether it pays here, for this target"):
        try:
            drafts = across.drafts_for(  # a found target's file is not read again; its candidates are texts
                target,
                draft,
                own_models.found(),
                layers=across.target_layers(pair),
                rules=_server.class_policy(),
                places=_server.config().places,
            )
        except specviz.SpecvizError as exc:
            st.error(f"**Cannot list the drafts of this target.** {plain(exc)}", icon=":material/error:")
            return
        if (decoded := _decode_target()) is not None and decoded != target:
            text = str(decoded)
            name = Path(text).name if text.lower().endswith(".gguf") else text
            st.button(f"Use the Decode page's pair here (target {plain(name)})", on_click=_from_decode)
        chosen = _choose(drafts)
        held = dataclasses.replace(settings, prompts=across.held_out(eval_prompts()), policies=())
        runs = len(held.taus) * len(held.prompts) * len(held.seeds) * len(chosen)
        st.caption(
            f"{len(held.prompts)} held-out prompts (a story, a question, code, facts: no draft here was trained on "
            f"them) × τ {held.taus[0]}–{held.taus[-1]} × {len(held.seeds)} seed(s), {held.max_new_tokens} tokens each, "
            f"for every draft: {runs} runs, a draft at a time in turn, each step timed beside the target alone; then "
            "each pair's passes (its c and v, the same on every page)."
        )
        kept = timings.book().get(pair)  # how long, from the pair's kept timings; said before it starts
        st.caption(
            (
                across.estimate(held, len(chosen), kept).words()
                if kept is not None and chosen
                else f"{runs} runs: how "
                "long is said once this pair's passes are timed (Decode's *Reading this run*, the Race, or below)"
            )
            + ". **Stop** (top right) cuts it short and keeps every finished run: **Recommend from the runs finished "
            "so far** reads them, **Benchmark these drafts** again runs only the rest."
        )
        view.unfit(drafts)
        cached = st.session_state.get("sweep_drafts_cache", {})
        buttons = st.columns(2)
        run_all = buttons[0].button(
            "Benchmark these drafts",
            key="sweep_drafts_run",
            icon=":material/stacked_line_chart:",
            disabled=not chosen,
        )
        so_far = buttons[1].button(
            "Recommend from the runs finished so far",
            key="sweep_drafts_recommend",
            icon=":material/content_cut:",
            disabled=not any(cached.get(label) for label in chosen),
            help="After Stop: the table, the chart and the recommendation from the runs that finished, none run again",
        )
        if run_all or so_far:
            bar = st.progress(0.0, text="Loading the drafts…")
            server = _server.config()
            runtime = resolve_runtime(target, st.session_state.get("runtime", AUTO), default=server.runtime)
            rules, how = server.class_policy, server.load_settings()

            def load(spec: str) -> specviz.ModelPair:  # the target's parts shared with the pairs the server holds
                return specviz.load_pair(
                    target, spec, runtime=runtime, store=pair_cache().store, guard=rules, settings=how
                )

            try:
                rules.check_sweep(runs)  # class mode: bounded runs
                with heavy_job():  # each step a heavy turn of its own
                    st.session_state["sweep_drafts_result"] = across.run(
                        drafts,
                        chosen,
                        held,
                        load,
                        timings.book(),
                        st.session_state.setdefault("sweep_drafts_cache", {}),
                        progress=lambda fraction, text: bar.progress(min(fraction, 1.0), text=plain(text)),
                        finished_only=so_far,
                    )
            except specviz.SpecvizError as exc:
                st.error(f"**Cannot benchmark the drafts.** {plain(exc)}", icon=":material/error:")
                return
            finally:
                bar.empty()
        result = st.session_state.get("sweep_drafts_result")
        if result is not None and result.drafts.target == str(target):
            view.show(result)
