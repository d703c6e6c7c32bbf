"""Would it pay there? The acceptance measured here, carried to other hardware, model pairs and batch sizes."""

import streamlit as st

import specviz
from pages._common.picker import new_decode_pair
from pages._common.present import COMPACT_CSS, presentation_toggle
from pages._common.shell import ensure_shell
from pages._common.widgets import limits, share_link
from pages._pay import imported as _pay_import
from pages._pay import parts
from specviz.analysis import outlook as ol
from specviz.analysis.costmodel import HARDWARE, MODELS
from specviz.analysis.theory import ceiling
from specviz.viz.pay_charts import pay_batch_chart, pay_tau_chart
from specviz.viz.plain import plain
from specviz.viz.render import sentence

ensure_shell()
present = bool(st.session_state.get("pay_present"))
top = st.columns([3.6, 1.4], vertical_alignment="bottom")
if not present:
    st.html(COMPACT_CSS)
top[0].title("Would it pay there?")
with top[1]:
    presentation_toggle("pay_present")
yours = parts.your_pair()  # the Decode page's GGUF pair, sized from its headers
if new_decode_pair("pay") is not None and yours:  # a pair of your own stepped on Decode: carried, once chosen
    st.session_state["pay_pair"] = ol.YOUR_PAIR
cols = st.columns([2.2, 2.4, 1.6, 1.2], vertical_alignment="bottom")
where = cols[0].selectbox("Hardware", [parts.HERE, *HARDWARE], key="pay_hardware")
if where == parts.HERE:  # the pair timed here: the Decode page's
    here_words = parts.timed_pair_words()
    cols[1].selectbox("Model pair", [here_words], disabled=True, help="On this machine: the Decode page's pair")
pair_name = st.session_state.get("pay_pair", next(iter(ol.PAIRS)))
if where != parts.HERE:
    offered = [*ol.PAIRS, *([ol.YOUR_PAIR] if yours else [])]
    if st.session_state.get("pay_pair") not in offered:  # your pair from a link or an earlier run, gone now
        st.session_state.pop("pay_pair", None)
    pair_name = cols[1].selectbox("Model pair", offered, key="pay_pair")
batch = cols[2].select_slider("Batch (sequences at once)", ol.BATCHES, key="pay_batch")
context = cols[3].number_input("Context (tokens)", *limits()["pay_context"], step=256, key="pay_context")
cols = st.columns([3, 1.6, 3.4], vertical_alignment="bottom")
source = cols[0].radio("Acceptance from", parts.SOURCES, key="pay_source", horizontal=True)
alpha = cols[1].slider(
    "α (by hand)", *limits()["pay_alpha"], step=0.05, key="pay_alpha", disabled=source != "α by hand"
)
accept, note = parts.acceptance(source, alpha)
cols[2].caption(f"Acceptance: {accept.words()}." + (f" {note}" if note else ""))
parts.few_steps_warning(accept)  # one Decode step: rates of 0.00 or 1.00, said

if pair_name == ol.YOUR_PAIR and yours:
    target, draft = yours
else:
    target, draft = (MODELS[n] for n in ol.PAIRS.get(pair_name, next(iter(ol.PAIRS.values()))))
measured: list = []
c = None
if where == parts.HERE:
    calibration, pair = parts.measured_here()
    if calibration is None:
        st.stop()
    hardware, target = calibration.hardware, calibration.model
    draft = ol.draft_model(pair, target)
    c = parts.draft_cost(pair)[0].value
    context = calibration.context  # the fit holds at the cache length it was timed at
else:
    hardware = HARDWARE[where]
try:
    o = ol.outlook(target, draft, hardware, accept, batch, int(context), c)
except specviz.SpecvizError as exc:
    st.error(f"**Cannot predict.** {plain(sentence(exc))}", icon=":material/error:")
    st.stop()
tau, speed = o.best
(st.success if speed > 1.0 else st.warning)(o.summary(), icon=":material/speed:")
if where == parts.HERE:
    measured = parts.calibration_panel(calibration, pair)
if present:  # a projector: the two charts that answer the question, large
    size = {"font_size": 20, "height": 430}
    left, right = st.columns(2)
    left.plotly_chart(pay_tau_chart(o, measured, **size), key="pay_tau_chart")
    right.plotly_chart(pay_batch_chart(o, **size), key="pay_batch_chart")
    st.markdown(o.why())
    st.stop()
st.markdown(o.why())
if warning := o.fits():
    st.warning(warning, icon=":material/memory:")
left, right = st.columns(2)
left.markdown(f"**Speedup against τ** at batch {batch}")
left.plotly_chart(pay_tau_chart(o, measured), key="pay_tau_chart")
right.markdown("**The best τ's speedup against the batch**")
right.plotly_chart(pay_batch_chart(o), key="pay_batch_chart")
cols = st.columns(5)
index = o.taus.index(tau)
cols[0].metric("best τ", tau, help="The chain length with the highest S_v(τ) at this batch")
cols[1].metric("speedup", f"{speed:.2f}×", help="S_v(τ) = E / (τc + v(τ + 1)) with E from the acceptance above")
cols[2].metric(f"v({tau + 1})", f"{o.verify[index]:.2f}", help="A pass over τ + 1 tokens in one-token passes")
cols[3].metric("c", f"{o.c:.3f}", help="A draft forward in target passes" + (" (measured)" if o.c_measured else ""))
cols[4].metric("slower from batch", o.break_even or "–", help="The first batch at which even the best τ loses")
v, tokens = o.verify[index], speed * (tau * o.c + o.verify[index])  # E, from S_v = E / (τc + v) at the best τ
st.caption(f"**The ceiling.** {ceiling(tau, v, o.c, tokens_per_pass=tokens).words('this acceptance and draft')}")
if accept.rates is not None or accept.source != "α by hand":
    st.caption(
        "The acceptance was measured on this session's pair; another pair accepts differently. The model: "
        'docs/algorithm.md, "The cost of a pass on other hardware".'
    )
_pay_import.section(hardware, target, draft, int(context), c, accept, batch)
with st.expander("The presets: where the numbers come from"):
    hardware_rows, model_rows = ol.preset_tables()
    st.table(hardware_rows)
    st.table(model_rows)
share_link("pay")
