"""Streamlit-side helpers shared by the pages: cached model loading and error display."""

from __future__ import annotations

import runpy
from pathlib import Path

import streamlit as st

import specviz
from specviz import links, quiz
from specviz.charts import token_label
from specviz.sandbox import MAX_TAU as SANDBOX_TAU

SHELL_MARK = "specviz_shell"
APP = Path(__file__).resolve().parents[1] / "app.py"


def ensure_shell() -> None:
    """Run the page inside app.py's navigation. Until some session has run app.py, Streamlit's
    legacy router (it sees a pages/ folder) may run a page file directly, e.g. for a first visit
    to /about: then run app.py, which routes back to this page properly, and stop."""
    if SHELL_MARK not in st.session_state:
        runpy.run_path(str(APP), run_name="__main__")
        st.stop()


@st.cache_resource(show_spinner=False, max_entries=3)
def _load(target: str, draft: str) -> specviz.ModelPair:
    return specviz.load_pair(target, draft)


def load_pair(target: str, draft: str) -> specviz.ModelPair | None:
    """The pair, loaded once per process; None (with the reason on the page) when it fails."""
    try:
        with st.spinner(f"Loading {target} and draft {draft} (the very first start converts the model: ~30 s)…"):
            return _load(target, draft)
    except specviz.SpecvizError as exc:
        st.error(f"**Could not load the models.** {exc}", icon=":material/error:")
        return None


CUSTOM = "Custom: hub id or local folder"
LOSSLESS_SOURCES = ("Hand-made tables", "Real models (first step)")
# Every numeric widget's (min, max), by its key: the widgets draw from here, and app.py accepts a
# shared link's value only inside the same range.
LIMITS: dict[str, tuple] = {
    **{f"{page}_temperature": (0.0, 2.0) for page in ("decode", "sweep")},
    **{f"{page}_top_k": (0, 100_000) for page in ("decode", "sweep")},
    **{f"{page}_top_p": (0.05, 1.0) for page in ("decode", "sweep")},
    "decode_tau": (1, 16), "decode_seed": (0, 2**31 - 1), "decode_max_new": (1, 1024), "decode_steps": (0, 10_000),
    "sweep_taus": (1, 16), "sweep_max_new": (4, 512), "sweep_seeds": (1, 10),
    "sandbox_tau": (1, SANDBOX_TAU), "sandbox_seed": (0, 10_000),
    **{f"sandbox_r{t}": (0.0, 0.999) for t in range(SANDBOX_TAU)},
    "lossless_tau": (1, 8), "lossless_temperature": (0.05, 2.0), "lossless_trials": (100, 50_000),
}  # fmt: skip
PRESETS = {p.label: p for p in specviz.PRESETS}
MODE_HELP = (
    "textbook: greedy draft, accept if r ≤ p/q, else argmax p.  "
    "lossless: sampled draft, resample from norm(max(0, p − q)); output follows p exactly.  "
    "greedy: accept while the draft equals argmax p; output equals the target's greedy decoding."
)


def model_picker(prefix: str) -> tuple[str, str]:
    """Preset pairs, or free text for a hub id or local folder: (target, draft)."""
    label = st.selectbox("Pair", [*PRESETS, CUSTOM], key=f"{prefix}_preset")
    if label == CUSTOM:
        target = st.text_input("Target (p)", key=f"{prefix}_target", help="embedded, a hub id, or a local folder")
        hint = "also: self, prompt-lookup, early-exit:K, or a folder made by scripts/train_draft.py"
        draft = st.text_input("Draft (q)", key=f"{prefix}_draft", help=hint)
        return target, draft
    st.caption(PRESETS[label].description)
    return PRESETS[label].target, PRESETS[label].draft


def sampling_widgets(prefix: str) -> dict:
    """Mode, temperature, top-k and top-p, as SpecConfig keyword arguments."""
    return {
        "mode": st.radio("Mode", specviz.MODES, key=f"{prefix}_mode", horizontal=True, help=MODE_HELP),
        "temperature": st.slider(
            "Temperature (0 = argmax)", *LIMITS[f"{prefix}_temperature"], step=0.05, key=f"{prefix}_temperature"
        ),
        "top_k": st.number_input("Top-k (0 = all tokens)", *LIMITS[f"{prefix}_top_k"], key=f"{prefix}_top_k"),
        "top_p": st.slider("Top-p", *LIMITS[f"{prefix}_top_p"], step=0.05, key=f"{prefix}_top_p"),
    }


PRESENTATION_CSS = """<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
.stMainBlockContainer { max-width: 100%; padding-left: 2rem; padding-right: 2rem; }
.stMarkdown p, .stMarkdown li, [data-testid="stMetricLabel"] p { font-size: 1.35rem !important; }
[data-testid="stMetricValue"] { font-size: 3rem !important; }
.sv-text { font-size: 1.8rem !important; }
h1 { font-size: 3.2rem !important; }
</style>"""


def presentation_toggle(key: str) -> bool:
    """Larger type and no sidebar, for a projector; on by the toggle at the top of the page."""
    on = st.toggle("Presentation view", key=key, help="Larger type, sidebar hidden; toggle again to edit settings")
    if on:
        st.html(PRESENTATION_CSS)
    return on


def share_link(prefix: str, extra: dict | None = None) -> str:
    """Put the page's settings in the address bar and show the link, ready to copy."""
    kept = st.session_state.get("specviz_kept", {})
    settings = {k: v for k, v in kept.items() if k.startswith(f"{prefix}_")} | (extra or {})
    st.query_params.from_dict(links.encode(settings))
    url = links.share_url(st.context.url or "", settings)
    with st.expander("Share: a link that reopens these settings", icon=":material/link:"):
        st.code(url, language=None, wrap_lines=True)
        st.caption("Copy it with the button at the right of the box.")
    return url


def quiz_panel(step: specviz.StepTrace) -> bool:
    """Predictions per draft token, a Reveal button and the running score. True once revealed."""
    tag = (step.index, step.draft_tokens)
    revealed = st.session_state.get("decode_revealed") == tag
    st.markdown("**Quiz: will the target keep each draft token?**")
    cols = st.columns(step.tau + 1)
    guesses = [
        cols[t].segmented_control(
            f"{t + 1}. {token_label(text)}", quiz.ANSWERS, key=f"decode_guess_{step.index}_{t}", disabled=revealed
        )
        for t, text in enumerate(step.draft_text)
    ]
    tally = st.session_state.setdefault("decode_quiz_score", [0, 0])
    if not revealed and cols[-1].button("Reveal", type="primary", key="decode_reveal", icon=":material/visibility:"):
        tally[0] += quiz.score(step, guesses)
        tally[1] += step.tau
        st.session_state["decode_revealed"] = revealed = tag
    if revealed:
        right = quiz.score(step, guesses)
        st.caption(f"This step: {right} of {step.tau} right. Running score: {tally[0]} / {tally[1]}.")
    return bool(revealed)
