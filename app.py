"""specviz: step through speculative decoding and see q against p for every draft token."""

import os

# Torch's OpenMP threads busy-wait between operations. Beside a browser on the same CPU that made
# decoding up to 6x slower (measured 2026-11-22 on 2 cores: 1.4 instead of 9.3 tokens/s); passive waiting holds
# it near 5.4 whatever else runs. Set before torch is first imported; override from the environment.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import streamlit as st
import torch

from pages._shared import runtime_picker
from specviz.analysis import snapshot
from specviz.classroom import links, sandbox, settings

# One thread per model operation: with passive waiting, a second thread's wake-ups cost more than it
# saves on this model's small products (a Step: 0.22 CPU-s and 0.18 s with two threads, 0.15 and 0.15 s
# with one, measured 2026-11-23 on a 2-core AMD EPYC), and the other core serves the other sessions' pages.
torch.set_num_threads(int(os.environ.get("SPECVIZ_TORCH_THREADS", "1")))

st.set_page_config(page_title="specviz", page_icon=":material/compare_arrows:", layout="wide")

DEFAULTS = settings.defaults()  # every page's widgets, from the one registry
st.session_state["specviz_shell"] = True  # pages check that they run inside this navigation
if "specviz_kept" not in st.session_state:  # a session's first run: settings from the link, if any
    from_link, problems = settings.from_link(st.query_params.to_dict())
    st.session_state["decode_autostep"] = from_link.pop("decode_steps", 0)
    st.session_state["lossless_table_link"] = links.table(from_link.pop("lossless_table", ""), problems)
    worksheet = {k: from_link.pop(k) for k in list(from_link) if k.startswith("sandbox_")}
    st.session_state["specviz_kept"] = {**DEFAULTS, **from_link}
    if worksheet:  # the link's sandbox worksheet: its table, τ and draws
        exercise, case, shown = sandbox.from_link(worksheet, problems)
        st.session_state["specviz_kept"].update({**worksheet, **shown})
        st.session_state["specviz_kept"].pop("sandbox_table", None)
        st.session_state.update(sandbox_loaded=exercise, sandbox_case=case)
    if packed := st.query_params.get("snapshot"):  # a frozen measurement: the page of its kind shows it
        try:
            st.session_state["specviz_snapshot"] = snapshot.from_link_param(packed)
        except snapshot.SnapshotError as exc:
            problems.append(str(exc))
    for problem in problems:
        st.toast(problem, icon=":material/link_off:")

# Streamlit forgets a widget's value once a run does not draw it (another page), and a value restored
# in such a run never reaches the browser. So keep a copy under a plain key, and assign every value
# again on every run: the run that draws the widget then sends it.
kept = st.session_state.setdefault("specviz_kept", dict(DEFAULTS))
for key in DEFAULTS:
    if key in st.session_state:
        kept[key] = st.session_state[key]
    st.session_state[key] = kept[key]

PAGES = [
    st.Page("pages/decode.py", title="Decode", icon=":material/play_arrow:", default=True),
    st.Page("pages/race.py", title="Race", icon=":material/sports_score:"),
    st.Page("pages/sweep.py", title="τ sweep", icon=":material/stacked_line_chart:"),
    st.Page("pages/sandbox.py", title="Sandbox", icon=":material/edit_note:"),
    st.Page("pages/lossless.py", title="Is it lossless?", icon=":material/balance:"),
    st.Page("pages/lessons.py", title="Lessons", icon=":material/quiz:"),
    st.Page("pages/about.py", title="About", icon=":material/school:"),
]
# The menu is drawn here, not by Streamlit's automatic navigation: that one shows the pages/ folder's
# raw file names for a moment after a server start (client.showSidebarNavigation = false hides it).
page = st.navigation(PAGES, position="hidden")
with st.sidebar:
    for entry in PAGES:
        st.page_link(entry)
    st.divider()
    runtime_picker()
page.run()
