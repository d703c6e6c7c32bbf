"""specviz: step through speculative decoding and see q against p for every draft token."""

import os

# Torch's OpenMP threads busy-wait between operations. Beside a browser on the same CPU that made
# decoding up to 6x slower (measured on 2 cores: 1.4 instead of 9.3 tokens/s); passive waiting holds
# it near 5.4 whatever else runs. Set before torch is first imported; override from the environment.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import streamlit as st

st.set_page_config(page_title="specviz", page_icon=":material/compare_arrows:", layout="wide")

DEFAULTS = {
    "decode_preset": "Embedded pair",
    "decode_target": "embedded",
    "decode_draft": "embedded",
    "decode_prompt": "The cat sat on the",
    "decode_chat": True,
    "decode_tau": 4,
    "decode_mode": "textbook",
    "decode_temperature": 1.0,
    "decode_top_k": 0,
    "decode_top_p": 1.0,
    "decode_seed": 0,
    "decode_max_new": 32,
    "sweep_preset": "Embedded pair",
    "sweep_target": "embedded",
    "sweep_draft": "embedded",
    "sweep_prompts": "The cat sat on the\nWrite a Python function that reverses a list.",
    "sweep_chat": True,
    "sweep_mode": "greedy",
    "sweep_temperature": 1.0,
    "sweep_top_k": 0,
    "sweep_top_p": 1.0,
    "sweep_taus": (1, 8),
    "sweep_max_new": 48,
    "sweep_seeds": 1,
}
st.session_state["specviz_shell"] = True  # pages check that they run inside this navigation
for key, value in DEFAULTS.items():
    st.session_state.setdefault(key, value)
    # re-assign so that widget values survive a visit to another page
    st.session_state[key] = st.session_state[key]

page = st.navigation(
    [
        st.Page("pages/decode.py", title="Decode", icon=":material/play_arrow:", default=True),
        st.Page("pages/sweep.py", title="τ sweep", icon=":material/stacked_line_chart:"),
        st.Page("pages/about.py", title="About", icon=":material/school:"),
    ]
)
page.run()
