"""Plain functions the AppTests (tests/test_app_*.py) share: the app opened on its first page, the run it holds, its
tables and charts read back, a busy machine, and a tiny pair whose name says nothing of chat."""

import json
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

import specviz
from tests.helpers import tiny_text_pair

ROOT = Path(__file__).resolve().parents[1]

LAZY_PANELS = ("decode_reading_open", "decode_rules_open", "decode_logs_open")  # built only while open


def app(panels_open: bool = True) -> AppTest:
    """The app, the Decode page's lazy panels open (as a user opens them) unless `panels_open` is False."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key in LAZY_PANELS if panels_open else ():
        at.session_state[key] = True
    return at.run()


def decoder(at: AppTest) -> specviz.Decoder:
    return at.session_state["decode_stepper"].decoder


def step_table(at: AppTest, index: int = 0):
    """The table of the step shown (a plain table: every column whole at 1280 px), its numbers as
    shown (four decimals) read back as numbers."""
    table = at.table[index].value.reset_index()
    for column in ("q", "p", "p/q", "r"):
        if column in table:
            table[column] = pd.to_numeric(table[column], errors="coerce")
    return table


def history_bars(spec: dict) -> list[int]:
    """Accepted length per step from the history chart (its bars split by outcome), in step order."""
    bars = [b for t in spec["data"] if t["type"] == "bar" for b in zip(t.get("x", []), t.get("y", []), strict=True)]
    return [y for _, y in sorted(bars)]


def figure(at: AppTest, index: int = 0) -> dict:
    return json.loads(at.get("plotly_chart")[index].proto.spec)


def busy_machine(monkeypatch, others: float = 1.0) -> None:
    """The cores other processes hold as the pages read them (specviz.analysis.busy.current_load), of 2."""
    from specviz.analysis import busy

    monkeypatch.setattr(busy, "current_load", lambda: busy.MachineLoad(others, 2))


def base_pair_with_template(target, draft, runtime="torch", **_kwargs):
    """A tiny pair whose tokenizer has a chat template and whose name does not say "Instruct" (a GGUF file named as
    its training run, or a base model): its default is the raw text, Codec.chat_default False."""
    from specviz import HFCodec
    from tests.helpers import word_tokenizer

    pair = tiny_text_pair(chat=True, runtime="torch" if runtime == "auto" else runtime)
    return specviz.ModelPair(pair.target, pair.draft, HFCodec(word_tokenizer(chat=True), "tiny"))
