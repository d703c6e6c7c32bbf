"""Would it pay there?: which of the engine's numbers to read where a paste holds several (implementations, runs,
formats), and the settings to run the pair in each engine, spelled for the user's build. Widgets and calls; the work
is specviz.analysis.engine_import (the sources) and specviz.analysis.engine_advice / engine_flags (the settings)."""

from __future__ import annotations

import streamlit as st

from pages._common import own_settings
from pages._common import widgets as ui
from specviz.analysis import engine_advice as ea
from specviz.analysis import engine_flags as ef
from specviz.analysis import engine_import as ei
from specviz.viz.plain import plain, plain_cells


def pick(reading: ei.Reading) -> ei.EngineImport:
    """The source to read: the best, or the one picked where the paste holds several."""
    if len(reading.sources) == 1:
        return reading.best
    labels = reading.labels()
    if st.session_state.get("pay_import_source", 0) >= len(labels):  # a shorter paste than the last one
        st.session_state.pop("pay_import_source", None)
    index = st.selectbox(
        "Which of your engine's numbers",
        range(len(labels)),
        format_func=lambda i: labels[i],  # fixed words, numbers and an implementation's name ([A-Za-z0-9_.-])
        key="pay_import_source",
        help="Your paste holds several sources (implementations, runs or formats): each is read on its own, best "
        "first (counts the engine gave, then counts rebuilt from printed rates, then a mean length, then a rate).",
    )
    return reading.sources[index]


def settings(advice: ea.Advice, batch: int, reading: ei.Reading) -> None:
    """Each engine's settings for the pair, copyable, with its reason; llama.cpp in the spelling of the build the
    log shows or the user gives."""
    st.markdown("**The settings to run it**")
    cols = st.columns([1.2, 1.3, 2, 2, 1.1], vertical_alignment="bottom")
    own_settings.fill_engine_boxes("pay_import_target", "pay_import_model")  # your files, not target.gguf
    method = cols[0].selectbox("Draft kind (vLLM's method)", ea.METHODS, key="pay_import_method")
    sampling = cols[1].selectbox(
        "Draft sampling",
        ef.SAMPLINGS,
        key="pay_import_sampling",
        format_func=lambda s: f"{s} ({ef.RULE_OF_SAMPLING[s]} rule)",
        help="How the engine samples the draft: greedy is this app's one-hot rule, probabilistic its token-wise rule "
        "(llama.cpp's --spec-draft-sampling, vLLM's draft_sample_method); both lossless.",
    )
    model = cols[2].text_input("Your draft (path or name)", key="pay_import_model")
    target = cols[3].text_input("Your target (path or name)", key="pay_import_target")
    typed = cols[4].number_input(
        "llama.cpp build",
        *ui.limits()["pay_import_build"],
        key="pay_import_build",
        help="0: as your log says, else now",
    )
    build = int(typed) or reading.build
    if build:
        st.caption(f"llama.cpp flags spelled for build {build}" + (" (read from your log)." if not typed else "."))
    spelling = None if typed else reading.spelling  # a typed build is the user's word; else the log's command line
    for flag in ea.flags(
        advice, batch, method, model.strip(), target.strip(), build, reading.version, sampling, spelling, reading.types
    ):
        st.markdown(f"**{flag.engine}** — {plain(flag.reason)}")
        st.code(flag.text, language="json" if flag.text.startswith("{") else "bash", wrap_lines=True)
    with st.expander("The engines' options for how a draft is verified (lossy ones marked)", expanded=False):
        st.table(plain_cells([option_row(o) for o in ef.OPTIONS]))


def option_row(option: ef.EngineOption) -> dict[str, str]:
    """One engine option as a row: its engine, name, values, default, whether lossy, what it does and its source."""
    return {
        "engine": option.engine,
        "option": option.name,
        "values": ", ".join(option.values) or "–",
        "default": option.default,
        "lossless?": "lossy (see what it does)" if option.lossy else "lossless",
        "what it does": option.what,
        "read from": option.source,
    }
