"""Presentation view: a projector's layout (larger type, no sidebar), on by a toggle at the top of a page."""

import streamlit as st

PRESENTATION_CSS = """<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
.stMainBlockContainer { max-width: 100%; padding: 0.6rem 1.5rem 2rem; }
.stMainBlockContainer [data-testid="stVerticalBlock"] { gap: 0.5rem; }
.stMarkdown p, .stMarkdown li, [data-testid="stMetricLabel"] p, [data-testid="stRadio"] label p {
  font-size: 1.3rem !important; }
[data-testid="stMetricValue"] { font-size: 2.4rem !important; }
.sv-text { font-size: 1.45rem !important; line-height: 2 !important; }
.sv-box { max-height: 8.8rem; overflow-y: auto; display: flex; flex-direction: column-reverse; }
h1 { font-size: 3.2rem !important; }
</style>"""


def presentation_toggle(key: str) -> bool:
    """Larger type and no sidebar, for a projector; on by the toggle at the top of the page."""
    on = st.toggle("Presentation view", key=key, help="Larger type, sidebar hidden; toggle again to edit settings")
    if on:
        st.html(PRESENTATION_CSS)
    return on
