"""Shareable links: settings to query parameters and back; a link reopens the same trace."""

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import specviz
from specviz import Decoder, SpecConfig, links
from tests.helpers import tiny_text_pair

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = {"a_tau": 4, "a_mode": "textbook", "a_temperature": 1.0, "a_chat": True, "a_taus": (1, 8), "a_prompt": "x"}


def test_encode_decode_round_trip_by_type():
    settings = {"a_tau": 7, "a_mode": "lossless", "a_temperature": 0.35, "a_chat": False, "a_taus": (2, 5),
                "a_prompt": "The cat & the hat?"}  # fmt: skip
    values, problems = links.decode(links.encode(settings), DEFAULTS)
    assert values == settings and problems == []
    url = links.share_url("http://localhost:8501/decode?old=1", settings)
    assert url.startswith("http://localhost:8501/decode?a_tau=7&") and "The+cat+%26+the+hat%3F" in url


def test_bad_or_out_of_range_values_are_reported_not_raised():
    allowed = {"a_tau": (1, 16), "a_mode": ("textbook", "lossless", "greedy")}
    params = {"a_tau": "99", "a_mode": "fast", "a_temperature": "hot", "a_chat": "maybe", "a_taus": "3", "other": "1"}
    values, problems = links.decode(params, DEFAULTS, allowed)
    assert values == {}
    assert len(problems) == 5 and "a_tau='99'" in problems[0] and "out of range" in problems[0]


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setattr(specviz, "load_pair", lambda t, d, **k: tiny_text_pair(chat=True))
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()


def test_a_link_reopens_the_same_settings_and_trace(tiny):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(
        decode_tau="3", decode_mode="lossless", decode_seed="11", decode_max_new="12", decode_prompt="w4 w5 w6",
        decode_steps="2",
    )  # fmt: skip
    at.run()
    assert not at.exception
    dec = at.session_state["decode_state"]["decoder"]
    assert (dec.config.tau, dec.config.mode, dec.config.seed, dec.config.max_new_tokens) == (3, "lossless", 11, 12)
    expected = Decoder(
        tiny_text_pair(chat=True), "w4 w5 w6", SpecConfig(tau=3, mode="lossless", seed=11, max_new_tokens=12)
    )
    first_two = [expected.step(), expected.step()]

    def strip(step):
        return step.to_dict() | {"draft_ms": 0, "verify_ms": 0}

    assert [strip(s) for s in dec.steps] == [strip(s) for s in first_two]
    # the address bar now carries every setting of the page, and the step count
    assert at.query_params["decode_tau"] == ["3"] or at.query_params["decode_tau"] == "3"
    shown = at.code[0].value
    assert "decode_steps=2" in shown and "decode_mode=lossless" in shown and "decode_prompt=w4+w5+w6" in shown
    at.button(key="decode_step").click().run()
    assert "decode_steps=3" in at.code[0].value


def test_a_bad_link_is_a_message_and_the_page_still_opens(tiny):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(decode_tau="99", decode_mode="fast")
    at.run()
    assert not at.exception
    assert at.slider(key="decode_tau").value == 4
    assert any("decode_tau='99'" in t.value for t in at.toast)
