"""Stepping with the keyboard or a presenter's clicker on Decode: → or PageDown presses Step, ← or PageUp presses
Back (a clicker sends PageDown and PageUp). A small script in the page itself (st.html runs it in the app's own
document, not in an iframe), installed once per browser tab; it clicks the page's own buttons, so a key press is
exactly a click (queued, never lost: specviz.server.stepper), and it leaves keys alone while a text box, a
slider, a radio or a menu has the focus (there the arrows move the cursor or the value); a toggle or a button just
clicked keeps them working."""

from __future__ import annotations

import json

import streamlit as st

KEYS = {"ArrowRight": "decode_step", "PageDown": "decode_step", "ArrowLeft": "decode_back", "PageUp": "decode_back"}

SCRIPT = """<script>
(() => {
  if (window.specvizKeys) return;
  window.specvizKeys = true;
  const keys = %s;
  // where the arrows and the page keys are the focused widget's own (a toggle's or a button's are not)
  const busy = 'input:not([type="checkbox"]):not([type="button"]):not([type="submit"]), textarea, select, '
    + '[contenteditable=""], [contenteditable="true"], [role="slider"], [role="listbox"], [role="combobox"], '
    + '[role="option"], [role="menu"], [role="radio"], [role="tab"]';
  document.addEventListener('keydown', (event) => {
    const key = keys[event.key];
    if (!key || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    const focus = document.activeElement;
    if (focus && focus.closest && focus.closest(busy)) return;
    const button = document.querySelector('.st-key-' + key + ' button');
    if (!button || button.disabled) return;
    event.preventDefault();
    button.click();
  });
})();
</script>"""


def keyboard_stepping() -> None:
    """→ / PageDown = Step, ← / PageUp = Back on this page (the script is the app's own text: no input reaches it)."""
    st.html(SCRIPT % json.dumps(KEYS), unsafe_allow_javascript=True)
