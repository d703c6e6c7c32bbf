"""Presentation view: a projector's layout (larger type, no sidebar), on by a toggle at the top of a page."""

import streamlit as st

# A projector: every text a room reads at 18 px or more (docs/app.md; a rem is 16 px). The floor, with no
# specificity (:where), lifts whatever Streamlit draws smaller (widget labels 14 px, captions, alert boxes 16 px,
# buttons, tables, code) and leaves larger text larger; Plotly's charts set their own sizes (font_size) and are left
# alone. The rules after it size what a room reads first: the marked text and its tags, verdicts, labels, tiles. The
# marked text is whole (the page gives it the prompt, the newest text and the step: render.run_html's `recent`), its
# q, p and r at 18 px under each token.
PRESENTATION_CSS = """<style>
section[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
.stMainBlockContainer { max-width: 100%; padding: 0.6rem 1.5rem 2rem; }
.stMainBlockContainer [data-testid="stVerticalBlock"] { gap: 0.5rem; }
:where(.stMainBlockContainer) :where(:not(h1, h2, h3, h4, h5, h6, svg, svg *, .js-plotly-plot *)) {
  font-size: max(18px, 1em) !important; }
.stMarkdown p, .stMarkdown li, [data-testid="stMetricLabel"] p, [data-testid="stRadio"] label p {
  font-size: 1.3rem !important; }
[data-testid="stAlertContainer"] p, [data-testid="stAlertContainer"] li { font-size: 1.3rem !important; }
[data-testid="stWidgetLabel"] p, [data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p {
  font-size: 1.2rem !important; }
[data-testid="stMetricValue"] { font-size: 2.4rem !important; }
[data-testid="stMetricDelta"] div { font-size: 1.2rem !important; }
.sv-text { font-size: 1.45rem !important; line-height: 2 !important; }
.sv-rule, .sv-role, .sv-cut { font-size: 1.15rem !important; }
.sv-legend { font-size: 1.2rem !important; }
.sv-race { font-size: 1.3rem !important; }
.sv-box { max-height: none; }
.sv-num, .sv-own { font-size: 18px !important; line-height: 1.1 !important; }
h1 { font-size: 3.2rem !important; }
</style>"""


# Normal view on a short screen (a 1280×720 projector): less space above the page, a smaller title,
# the marked text scrolled to its newest lines, so the step chart and its decisions are on screen
# after Step without scrolling (tests/test_browser.py measures it).
COMPACT_CSS = """<style>
@media (max-height: 820px) {
  .stMainBlockContainer { padding-top: 1.2rem; }
  .stMainBlockContainer h1 { font-size: 1.5rem; padding: 0.1rem 0 0.5rem; line-height: 1.3; }
  .stMainBlockContainer [data-testid="stVerticalBlock"] { gap: 0.6rem; }
  .sv-box { max-height: 7.4rem; overflow-y: auto; display: flex; flex-direction: column-reverse; }
  .sv-text { line-height: 2 !important; }
}
</style>"""


# Every page, on a projector or not (app.py). Plotly's toolbar (its modebar) showed over a chart's title whenever the
# pointer rested on the chart: it is hidden (drag to zoom and double-click to reset work without it), but on the 16:9
# slide, whose camera saves the picture, where it stands under the picture. A click left Streamlit's grey focus
# ring on a button, across the row of Step, Run to end, Back and Reset: drawn only for the keyboard (:focus-visible).
APP_CSS = """<style>
.stPlotlyChart .modebar-container { display: none !important; }
.st-key-decode_slide_chart .modebar-container { display: block !important; top: 100% !important; }
.st-key-decode_slide_chart { overflow: visible !important; padding-bottom: 40px; }
button:focus:not(:focus-visible), [role="button"]:focus:not(:focus-visible) { outline: none !important;
  box-shadow: none !important; }
</style>"""


def presentation_toggle(key: str) -> bool:
    """Larger type and no sidebar, for a projector; on by the toggle at the top of the page."""
    on = st.toggle("Presentation view", key=key, help="Larger type, sidebar hidden; toggle again to edit settings")
    if on:
        st.html(PRESENTATION_CSS)
    return on
