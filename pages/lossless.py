"""Is it lossless? Repeat the first step many times in each mode and test the emitted token
against the target's own distribution."""

import time

import pandas as pd
import streamlit as st

import specviz
from pages._common.picker import model_picker
from pages._common.present import presentation_toggle
from pages._common.shell import ensure_shell
from pages._common.widgets import limits, prompt_chars, share_link
from pages._serving.compute import heavy_job
from pages._serving.pairs import load_pair
from specviz.analysis.lossless import METHOD, VARIANTS, check, first_tokens, reference, table_pair, variant_config
from specviz.classroom import links
from specviz.classroom.settings import LOSSLESS_SOURCES
from specviz.viz import run_charts
from specviz.viz.plain import plain

ensure_shell()
top = st.columns([3, 1.4], vertical_alignment="bottom")
top[0].title("Is it lossless?")
with top[1]:
    present = presentation_toggle("lossless_present")
if not present:  # on a projector the verdicts and charts say it
    st.markdown(
        "Run the **first step** many times with different seeds and count which token comes out first. "
        "**lossless** should match the target's distribution under each verification rule (token-wise, one-hot q "
        "as vLLM and SGLang verify, block), and **greedy** the target's greedy token, whatever the draft; "
        "**textbook** with sampling should not, nor should the engines' **lossy** rules (typical acceptance, SGLang's "
        "accept thresholds at 0.5, the static ensemble), which trade the target's distribution for speed."
    )
    st.caption(METHOD)
TABLES = LOSSLESS_SOURCES[0]
cols = st.columns([2.2, 1, 1.6, 1.4], vertical_alignment="bottom")
source = cols[0].radio("Models", LOSSLESS_SOURCES, key="lossless_source", horizontal=True)
tau = cols[1].number_input("τ", *limits()["lossless_tau"], key="lossless_tau")
temperature = cols[2].slider("Temperature", *limits()["lossless_temperature"], step=0.05, key="lossless_temperature")
if source == TABLES:
    trials = cols[3].number_input("Trials per mode", *limits()["lossless_trials"], step=1000, key="lossless_trials")
    example = {"token": ["a", "b", "c"], "p (target)": [0.5, 0.3, 0.2], "q (draft)": [0.2, 0.2, 0.6]}
    base = pd.DataFrame(st.session_state.get("lossless_table_link") or example)
    table = st.data_editor(base, key="lossless_table", hide_index=True, num_rows="dynamic")
    try:
        pair, prompt = table_pair(table["token"], table["p (target)"], table["q (draft)"]), str(table["token"][0])
    except (specviz.SpecvizError, KeyError, IndexError) as exc:
        st.error(f"**Check the table**: {plain(exc)}", icon=":material/error:")
        st.stop()
else:
    trials = cols[3].number_input(
        "Trials per mode", *limits()["lossless_trials_real"], step=50, key="lossless_trials_real"
    )
    with st.sidebar:
        chosen = model_picker("lossless")  # None: no pair to load (the sidebar says why)
    prompt = st.text_input("Prompt", key="lossless_prompt", max_chars=prompt_chars())
    pair = load_pair(*chosen) if chosen else None
    if pair is None:
        st.stop()

share_link(
    "lossless",
    {"lossless_table": links.table_text(table.to_dict(orient="list"))} if source == TABLES else {},
    show=not present,
)
settings = (source, tau, temperature, trials, prompt, repr(pair.target.name), repr(pair.draft.name))
if source == TABLES:
    settings += (tuple(map(tuple, table.values.tolist())),)
results = st.session_state.setdefault("lossless_results", {})
checks = results.get(settings, {})  # filled variant by variant: Stop keeps every finished one
missing = [label for label in VARIANTS if label not in checks]
cols = st.columns([1.4, 1, 4])
run_clicked = cols[0].button(
    "Run the check" if missing else "All modes finished",
    type="primary",
    key="lossless_run",
    icon=":material/play_arrow:",
    disabled=not missing,
)
cols[1].button("Stop", key="lossless_stop", icon=":material/stop:", help="Keeps every finished mode")
if run_clicked:
    bar, started = st.progress(0.0, text="Starting…"), time.perf_counter()
    results[settings] = checks
    try:
        with heavy_job():  # class mode: a few heavy jobs at once, each trial in a turn of its own
            for m, label in enumerate(missing):
                config = variant_config(label, tau, temperature)
                samples = []
                for i, token in enumerate(first_tokens(pair, prompt, config, trials), start=1):
                    samples.append(token)
                    if i % max(1, trials // 50) == 0 or i == 1:
                        done = m * trials + i  # trials so far; the time left from the measured time per trial
                        left = (time.perf_counter() - started) / done * (len(missing) * trials - done)
                        bar.progress(
                            (m + i / trials) / len(missing),
                            text=f"{label}: {i:,} / {trials:,} trials — about {left:,.0f} s left",
                        )
                checks[label] = check(label, samples, reference(pair, prompt, config))
    except specviz.SpecvizError as exc:
        st.error(f"**Cannot run.** {plain(exc)}")
        st.stop()
    bar.empty()
    st.rerun()  # redraw the buttons and the verdicts from the finished checks

if not checks:
    st.info(
        "Press **Run the check**. On tables a trial is a few table look-ups; on real models each trial is one "
        "speculative step. While it runs, the bar gives the time left, measured from the "
        "first trials, and **Stop** keeps every finished mode."
    )
    st.stop()
if missing:
    st.warning(
        f"Stopped with {len(missing)} of {len(VARIANTS)} modes left ({', '.join(missing)}): **Run the check** to go on."
    )
done = [checks[label] for label in VARIANTS if label in checks]  # one order, however they ran
if present:  # a projector: every verdict in one row, then the charts in large type
    for column, result in zip(st.columns(len(done)), done, strict=True):
        column.success(result.headline()) if result.consistent else column.error(result.headline())
for result in done:
    if not present:
        (st.success if result.consistent else st.error)(result.verdict())
    size = {"font_size": 20, "height": 420} if present else {}
    st.plotly_chart(
        run_charts.lossless_chart(result, pair.codec.token_text, **size), key=f"lossless_chart_{result.mode}"
    )
