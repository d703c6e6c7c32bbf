"""specviz: step through speculative decoding and see q against p for every draft token."""

import os

# Torch's OpenMP threads busy-wait between operations. Beside a browser on the same CPU that made
# decoding up to 6x slower (measured on 2 cores: 1.4 instead of 9.3 tokens/s); passive waiting holds
# it near 5.4 whatever else runs. Set before torch is first imported; override from the environment.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import streamlit as st

from pages import _shared as ui
from specviz import MODES, ConfigError, links, quiz
from specviz.sandbox import PRESETS as EXERCISES
from specviz.sandbox import case_from_json

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
    "decode_present": False,
    "decode_quiz": False,
    "decode_quiz_kind": "predict",
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
    "sandbox_preset": "One token: q = 0.8, p = 0.6, r = 0.7",
    "sandbox_mode": "textbook",
    "sandbox_tau": 1,
    "sandbox_seed": 0,
    "lossless_source": "Hand-made tables",
    "lossless_tau": 2,
    "lossless_temperature": 1.0,
    "lossless_trials": 20_000,
}
st.session_state["specviz_shell"] = True  # pages check that they run inside this navigation
ALLOWED = {  # what a shared link may set: the widgets' own ranges and choices
    **ui.LIMITS,
    **{f"{page}_mode": MODES for page in ("decode", "sweep", "sandbox")},
    **{f"{page}_preset": (*ui.PRESETS, ui.CUSTOM) for page in ("decode", "sweep")},
    "sandbox_preset": tuple(EXERCISES),
    "lossless_source": ui.LOSSLESS_SOURCES,
    "decode_quiz_kind": tuple(quiz.KINDS),
}
R_SLIDERS = {f"sandbox_r{t}": 0.5 for t in range(ui.SANDBOX_TAU)}
if "specviz_kept" not in st.session_state:  # a session's first run: settings from the link, if any
    readable = {**DEFAULTS, "decode_steps": 0, "sandbox_table": "", "lossless_table": "", **R_SLIDERS}
    from_link, problems = links.decode(st.query_params.to_dict(), readable, ALLOWED)
    st.session_state["decode_autostep"] = from_link.pop("decode_steps", 0)
    st.session_state["lossless_table_link"] = links.table(from_link.pop("lossless_table", ""), problems)
    sandbox_table = from_link.pop("sandbox_table", "")
    st.session_state["specviz_kept"] = {**DEFAULTS, **from_link}
    if any(k.startswith("sandbox_") for k in from_link) or sandbox_table:  # the link's table, τ and r
        exercise = from_link.get("sandbox_preset", DEFAULTS["sandbox_preset"])
        case = EXERCISES[exercise]
        if sandbox_table:
            tau = from_link.get("sandbox_tau", case.tau)
            r = [from_link.get(f"sandbox_r{t}", 0.5) for t in range(tau)]
            try:
                case = case_from_json(sandbox_table, r, case.note)
            except ConfigError as exc:
                problems.append(str(exc))
        st.session_state.update(sandbox_loaded=exercise, sandbox_case=case)
    for problem in problems:
        st.toast(problem, icon=":material/link_off:")

# Streamlit forgets a widget's value once a run does not draw it (another page), and a value restored
# in such a run never reaches the browser. So keep a copy under a plain key, and assign every value
# again on every run: the run that draws the widget then sends it.
kept = st.session_state.setdefault("specviz_kept", dict(DEFAULTS))
r_sliders = {k for k in [*st.session_state, *kept] if k.startswith("sandbox_r") and k[9:].isdigit()}
for key in [*DEFAULTS, *sorted(r_sliders)]:
    if key in st.session_state:
        kept[key] = st.session_state[key]
    st.session_state[key] = kept[key]

page = st.navigation(
    [
        st.Page("pages/decode.py", title="Decode", icon=":material/play_arrow:", default=True),
        st.Page("pages/sweep.py", title="τ sweep", icon=":material/stacked_line_chart:"),
        st.Page("pages/sandbox.py", title="Sandbox", icon=":material/edit_note:"),
        st.Page("pages/lossless.py", title="Is it lossless?", icon=":material/balance:"),
        st.Page("pages/about.py", title="About", icon=":material/school:"),
    ]
)
page.run()
