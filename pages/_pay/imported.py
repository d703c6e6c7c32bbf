"""Would it pay there?: your engine's own numbers (pasted, or a file) read, carried through the same cost model as
this app's runs, and given back as each engine's settings. Widgets and calls; the work is
specviz.analysis.engine_import (reading) and specviz.analysis.engine_advice (the advice and the flags)."""

from __future__ import annotations

import streamlit as st

import specviz
from pages._common import widgets as ui
from pages._pay import engine as _pay_engine
from specviz.analysis import engine_advice as ea
from specviz.analysis import engine_import as ei
from specviz.analysis import outlook as ol
from specviz.analysis.costmodel import Hardware, Model
from specviz.viz.import_charts import advice_chart, rates_chart
from specviz.viz.plain import plain, plain_cells
from specviz.viz.render import sentence

READS = (
    "Reads vLLM's `SpecDecoding metrics` and V0 `Speculative metrics` log lines, its `vllm:spec_decode_*` counters, "
    "per-request `speculative_decoding_stats` and `spec_decode.py`'s summary; SGLang's `Decode batch … accept len` "
    "lines, its `sglang:spec_accept_length` gauge and `meta_info` (JSON, printed by Python or quoted in a log); "
    "llama.cpp's `draft acceptance` and `statistics` lines, `llama-speculative`'s summary and a "
    "response's `timings`. Other lines of a log are skipped, lines joined into one are read apart, and printed "
    "rates are taken as the intervals their rounding allows; nothing leaves this page."
)


def _text() -> str:
    """The paste, or the uploaded file where there is one (bounded before it is read)."""
    cols = st.columns([3, 2])
    pasted = cols[0].text_area(
        "Paste your engine's numbers",
        key="pay_import_text",
        height=150,
        placeholder="SpecDecoding metrics: Mean acceptance length: 3.07, … Per-position acceptance rate: …",
    )
    upload = cols[1].file_uploader(
        "… or upload a log, a /metrics scrape or a JSON response",
        key="pay_import_upload",
        max_upload_size=max(1, ei.MAX_CHARS // 1_000_000),  # the browser refuses a larger file before sending it
    )
    cols[1].caption("vLLM, SGLang or llama.cpp; the rest of a log is skipped; a file is read instead of the paste.")
    if upload is None:
        return pasted
    upload.seek(0)  # the same file on every rerun: read from its start, no more than the bound
    try:
        return ei.read_upload(upload.read(ei.MAX_CHARS + 1))
    except specviz.SpecvizError as exc:
        cols[1].error(
            f"**Cannot read the file.** {plain(sentence(exc))} Nothing was imported.", icon=":material/error:"
        )
        return ""


def _hardware(hardware: Hardware, target: Model, context: int) -> tuple[Hardware, str | None]:
    cols = st.columns([2.4, 1, 1, 1], vertical_alignment="bottom")
    way = cols[0].radio("Hardware for your engine", ea.HARDWARE_CHOICES, key="pay_import_hw", horizontal=True)
    mine = way != ea.HARDWARE_CHOICES[0]
    t1 = cols[1].number_input("T(1), ms", *ui.limits()["pay_import_t1"], key="pay_import_t1", disabled=not mine)
    k = cols[2].number_input("k tokens", *ui.limits()["pay_import_k"], key="pay_import_k", disabled=not mine)
    tk = cols[3].number_input("T(k), ms", *ui.limits()["pay_import_tk"], key="pay_import_tk", disabled=not mine)
    if not mine:
        return hardware, None
    return ea.typed_hardware(hardware, target, float(t1), float(tk), int(k), context)


def section(
    hardware: Hardware, target: Model, draft: Model, context: int, c: float | None, own: ol.Acceptance, batch: int
) -> None:
    """The import: paste or file, what it gives, the best τ per batch beside this app's run, and the flags."""
    st.subheader("Your engine's numbers: τ and flags for this hardware")
    text = _text()
    if not text.strip():
        st.caption("Paste an engine's numbers to get its best τ per batch on the hardware and pair above.")
        return
    try:
        reading = ei.read(text)
    except specviz.SpecvizError as exc:
        st.error(f"**Cannot read it.** {plain(sentence(exc))} Nothing was imported.", icon=":material/error:")
        return
    imp = _pay_engine.pick(reading)
    cols = st.columns([1, 1, 2], vertical_alignment="bottom")
    ran_tree = imp.guessed and cols[2].toggle("It ran a tree (--speculative-eagle-topk > 1)", key="pay_import_tree")
    tree = imp.tree or ran_tree
    if imp.positions and (imp.tree or not tree):  # the paste says it
        cols[0].metric("τ it ran at", imp.positions, help="As your engine's numbers give it")
        tau = imp.positions
    else:
        label = "its --speculative-num-steps" if tree else "τ it ran at"
        tau = cols[0].number_input(label, *ui.limits()["pay_import_tau"], key="pay_import_tau")
    if not imp.positions:
        cols[2].caption(
            "Your numbers do not say the τ they ran at (--spec-draft-n-max, num_speculative_tokens): type it."
        )
    beyond = cols[1].toggle("τ beyond it", key="pay_import_extrapolate", help="Allow τ past what ran (extrapolated)")
    try:
        hw, fitted = _hardware(hardware, target, context)
        accept = ea.from_import(imp, int(tau), tree=bool(tree))
        mine = ea.advise(accept, hw, target, draft, context, c, beyond)
        theirs = ea.advise(ea.from_outlook(own), hw, target, draft, context, c, True)
    except specviz.SpecvizError as exc:
        st.error(f"**Cannot advise.** {plain(sentence(exc))}", icon=":material/error:")
        return
    one, busy, off = mine.at(1), mine.at(64), mine.break_even
    first = f"Best τ at batch 1: {one.tau} ({one.speedup:.2f}×)" if one.pays else "No τ pays at batch 1"
    said = (
        f"{first}; at batch 64: "
        + (f"τ = {busy.tau} ({busy.speedup:.2f}×)" if busy.pays else "off")
        + (f"; turn it off from batch {off} on." if off else "; it pays up to batch 512.")
    )
    (st.success if one.pays else st.warning)(plain(said), icon=":material/tune:")
    st.caption(plain(f"From {imp.format.name} ({imp.format.source}): {accept.assumption}."))
    if fitted:
        st.caption(plain(fitted))
    cols = st.columns(5)
    cols[0].metric("best τ, batch 1", one.tau if one.pays else "off", help=plain(mine.why(1)))
    cols[1].metric("speedup, batch 1", f"{one.speedup:.2f}×", help="With its 95% interval in the table below")
    cols[2].metric("best τ, batch 64", busy.tau if busy.pays else "off", help=plain(mine.why(64)))
    cols[3].metric("speedup, batch 64", f"{busy.speedup:.2f}×")
    cols[4].metric("off from batch", off or "–", help="The first batch at which no τ pays")
    with st.expander("What your numbers give, and every assumption", expanded=False):
        for line in [*imp.summary(), imp.format.gives, f"Read as the engine writes it: {imp.format.source}"]:
            st.markdown("- " + plain(line))
        st.caption(READS)
        extra = [*reading.notes, *imp.notes, *([fitted] if fitted else [])]
        for line in [accept.assumption, *extra, mine.why(1), mine.why(batch)]:
            st.markdown("- " + plain(line))
    left, right = st.columns(2)
    left.plotly_chart(rates_chart(accept, ea.from_outlook(own)), key="pay_import_rates_chart")
    right.plotly_chart(advice_chart(mine, theirs), key="pay_import_batch_chart")
    st.table(plain_cells(ea.table(mine, theirs, "your engine", "this app's run")))
    st.caption(f"This app's run: {own.words()}.")  # its names made plain where it was built (pages/_pay/parts.py)
    _pay_engine.settings(mine, batch, reading)
