"""specviz: step through speculative decoding and see q against p for every draft token."""

import os

# Torch's OpenMP threads busy-wait between operations. Beside a browser on the same CPU that made decoding several
# times slower; passive waiting keeps it steady whatever else runs (the numbers, with their date and machine:
# docs/performance.md, "The numbers behind the code's defaults"). Set before torch is first imported; override from
# the environment.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import streamlit as st
import torch

from pages._common.present import APP_CSS
from pages._common.shell import mode_line, prepare_session, runtime_picker
from pages._decode import reruns as _reruns
from pages._serving import compute as _compute
from pages._serving import config as _server
from pages._serving import downloads as _downloads

# One thread per model operation: with passive waiting, a second thread's wake-ups cost more than it saves on this
# model's small products (a Step took more CPU and more time with two threads than with one:
# docs/performance.md, "The numbers behind the code's defaults"), and the other cores serve the other sessions'
# pages. The models loaded after this line keep this count for every pass, from any session's thread: the same
# sums, so the same trace, whichever thread steps a run (specviz.models.threads).
torch.set_num_threads(_server.config().torch_threads)  # $SPECVIZ_TORCH_THREADS

st.set_page_config(page_title="specviz", page_icon=":material/compare_arrows:", layout="wide")
_reruns.install()  # a click in the Decode page's fragment while its script runs: taken, never merged into another
_downloads.install()  # a download's file waits a minute for its fetch, however busy the server

PAGES = [
    st.Page("pages/decode.py", title="Decode", icon=":material/play_arrow:", default=True),
    st.Page("pages/race.py", title="Race", icon=":material/sports_score:"),
    st.Page("pages/sweep.py", title="τ sweep", icon=":material/stacked_line_chart:"),
    st.Page("pages/pay.py", title="Would it pay there?", icon=":material/calculate:"),
    st.Page("pages/sandbox.py", title="Sandbox", icon=":material/edit_note:"),
    st.Page("pages/lossless.py", title="Is it lossless?", icon=":material/balance:"),
    st.Page("pages/lessons.py", title="Lessons", icon=":material/quiz:"),
    st.Page("pages/about.py", title="About", icon=":material/school:"),
]
# The menu is drawn here, not by Streamlit's automatic navigation: that one shows the pages/ folder's
# raw file names for a moment after a server start (client.showSidebarNavigation = false hides it).
page = st.navigation(PAGES, position="hidden")
prepare_session(page.url_path or "decode")  # the link's settings on a first run; every page's settings kept across
# pages, each changed only on its own page's runs (a page's path names its settings: "race" → race_max_new)
with st.sidebar:
    for entry in PAGES:
        st.page_link(entry)
    st.divider()
    runtime_picker()
    mode_line()
st.html(APP_CSS)  # every page: no Plotly toolbar over a chart's title, no focus ring after a click
with _compute.page_open():  # a tab's first run waits its turn like a Step (the lecturer's first)
    page.run()
