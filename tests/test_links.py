"""Shareable links: settings to query parameters and back; a link reopens the same trace."""

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import specviz
from specviz import Decoder, SpecConfig
from specviz.classroom import links
from tests.helpers import tiny_text_pair

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = {"a_tau": 4, "a_mode": "textbook", "a_temperature": 1.0, "a_chat": True, "a_taus": (1, 8), "a_prompt": "x"}


def test_encode_decode_round_trip_by_type():
    settings = {
        "a_tau": 7,
        "a_mode": "lossless",
        "a_temperature": 0.35,
        "a_chat": False,
        "a_taus": (2, 5),
        "a_prompt": "The cat & the hat?",
    }
    values, problems = links.decode(links.encode(settings), DEFAULTS)
    assert values == settings and problems == []
    url = links.share_url("http://localhost:8501/decode?old=1", settings)
    assert url.startswith("http://localhost:8501/decode?a_tau=7&") and "The+cat+%26+the+hat%3F" in url


def test_bad_or_out_of_range_values_are_reported_not_raised():
    allowed = {"a_tau": (1, 16), "a_mode": ("textbook", "lossless", "greedy")}
    params = {"a_tau": "99", "a_mode": "fast", "a_temperature": "hot", "a_chat": "maybe", "a_taus": "3", "other": "1"}
    values, problems = links.decode(params, DEFAULTS, allowed)
    assert values == {}
    assert problems == [
        "ignored a_tau='99' from the link: allowed values are 1 to 16",
        "ignored a_mode='fast' from the link: allowed values are 'textbook', 'lossless', 'greedy'",
        "ignored a_temperature='hot' from the link: not a number",
        "ignored a_chat='maybe' from the link: not true or false",
        "ignored a_taus='3' from the link: not a range such as 1-8",
    ]


def test_numbers_in_a_link_are_written_in_the_digits_0_to_9():
    """Python's int() and float() take '٣' (Arabic-Indic three) and '٠.٥' as numbers; a link's are read in 0-9 only,
    and what is not is named in a message (cut to 60 characters), never raised."""
    params = {"a_tau": "٣", "a_temperature": "٠.٥", "a_taus": "١-٨", "a_prompt": "٣"}
    values, problems = links.decode(params | {"a_chat": "true"}, DEFAULTS)
    assert values == {"a_prompt": "٣", "a_chat": True}  # text stays text
    assert problems == [
        "ignored a_tau='٣' from the link: not a whole number (digits 0-9)",
        "ignored a_temperature='٠.٥' from the link: not a number",
        "ignored a_taus='١-٨' from the link: not a range such as 1-8",
    ]
    for raw in ("²", "1_000", "1" * 17, "[" * 3000):
        values, problems = links.decode({"a_tau": raw}, DEFAULTS, {"a_tau": (1, 16)})
        assert values == {} and len(problems) == 1 and len(problems[0]) < 160, problems
    assert links.decode({"a_tau": " 7", "a_temperature": "1e-1", "a_taus": "2-5"}, DEFAULTS)[0] == {
        "a_tau": 7,
        "a_temperature": 0.1,
        "a_taus": (2, 5),
    }


@pytest.mark.parametrize(
    "text, why",
    [
        ("[" * 3000, "the table cannot be read: it nests deeper than 2 levels"),  # RecursionError before
        ('{"p": [' + "1" * 400 + "]}", "the table cannot be read: it holds a whole number of 400 digits"),
        ('{"p": [NaN]}', "the table cannot be read: it holds NaN, not a finite number"),
        ('{"p": [[1]]}', "the table cannot be read: it nests deeper than 2 levels"),
        ('{"p": [null]}', "a cell of the table is neither a finite number nor text"),
        ('{"p": [true]}', "a cell of the table is neither a finite number nor text"),
        ('{"p": ["' + "x" * 201 + '"]}', "a cell of the table is neither a finite number nor text"),
        ('{"p": [1], "q": [1, 2]}', "the table's columns are of different lengths"),
        ('{"p": 1}', "the table is not columns of values"),
        ('{"p": [' + ",".join(["1"] * 1001) + "]}", "the table has more than 1,000 rows"),
    ],
)
def test_a_links_table_that_cannot_be_read_is_a_message(text, why):
    problems = []
    assert links.table(text, problems) is None
    assert len(problems) == 1 and problems[0].startswith(f"ignored the table in the link: {why}"), problems


def test_a_links_table_of_text_and_numbers_is_read_as_columns():
    problems = []
    table = links.table('{"token": ["a", "٣"], "p (target)": [0.9, 1], "q (draft)": [-2, 1e-3]}', problems)
    assert table == {"token": ["a", "٣"], "p (target)": [0.9, 1], "q (draft)": [-2, 0.001]} and problems == []


@pytest.mark.parametrize(
    "text, why",
    [
        ('{"²": "x"}', "the link's typed drafts name step '²': steps are numbered from 1 to 10,000"),  # ValueError
        ('{"٣": "x"}', "the link's typed drafts name step '٣': steps are numbered from 1 to 10,000"),  # read as 3
        ('{"0": "x"}', "the link's typed drafts name step '0': steps are numbered from 1 to 10,000"),
        ('{"' + "9" * 400 + '": "x"}', "the link's typed drafts name step '9999999999999999999…'"),
        ("[" * 3000, "the link's typed drafts cannot be read: it nests deeper than 1 level"),  # RecursionError
        ('{"1": ["x"]}', "the link's typed drafts cannot be read: it nests deeper than 1 level"),
        ('{"1": 5}', "the link's typed draft of step 1 is not 1 to 200 characters of text"),
        ('["x"]', "the link's typed drafts are not a table of step numbers and words"),
    ],
)
def test_a_links_typed_drafts_that_cannot_be_read_are_one_config_error(text, why):
    from specviz.drafts.typed import typed_from_link

    with pytest.raises(specviz.ConfigError) as info:
        typed_from_link(text)
    assert str(info.value).startswith(why), str(info.value)


def test_a_links_typed_drafts_are_read_by_step():
    from specviz.drafts.typed import typed_from_link, typed_to_link

    assert typed_from_link('{"1": "mat and", "3": "[x](y)"}') == {0: "mat and", 2: "[x](y)"}
    assert typed_from_link(typed_to_link({4: "w5 w6"})) == {4: "w5 w6"}


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setattr(specviz, "load_pair", lambda t, d, **k: tiny_text_pair(chat=True))
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()


def test_a_link_reopens_the_same_settings_and_trace(tiny):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(
        decode_tau="3",
        decode_mode="lossless",
        decode_seed="11",
        decode_max_new="12",
        decode_prompt="w4 w5 w6",
        decode_steps="2",
    )
    at.run()
    assert not at.exception
    dec = at.session_state["decode_stepper"].decoder
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
    shown = shared_link(at)
    assert "decode_steps=2" in shown and "decode_mode=lossless" in shown and "decode_prompt=w4+w5+w6" in shown
    at.button(key="decode_step").click().run()
    assert "decode_steps=3" in shared_link(at)


def shared_link(at) -> str:
    """The page's share link (other code blocks on the page hold logs)."""
    (link,) = [c.value for c in at.code if not c.value.startswith("# specviz run")]
    return link


def test_a_bad_link_is_a_message_and_the_page_still_opens(tiny):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(decode_tau="99", decode_mode="fast")
    at.run()
    assert not at.exception
    assert at.slider(key="decode_tau").value == 4
    assert any("decode_tau='99'" in t.value for t in at.toast)


def test_tables_round_trip_through_links():
    columns = {"token": ["a", "b"], "p (target)": [0.5, 0.5], "q (draft)": [0.1, 0.9]}
    problems: list[str] = []
    assert links.table(links.table_text(columns), problems) == columns and problems == []
    assert links.table('{"a": [1, 2], "b": [3]}', problems) is None and "different lengths" in problems[0]


def test_a_sandbox_link_carries_its_edited_table_and_draws(tiny):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    table = '{"words":["cat","dog"],"q":[[0.9,0.1]],"p":[[0.6,0.4],[0.5,0.5]]}'  # q edited from 0.8 to 0.9
    at.query_params.update(sandbox_tau="1", sandbox_r0="0.7", sandbox_table=table)
    at.run()
    at.switch_page("pages/sandbox.py").run()
    assert not at.exception
    # p/q = 0.6/0.9 = 0.667 < r = 0.7: rejected now (the preset's q = 0.8 would accept)
    assert "**n = 0** of 1 accepted" in at.success[0].value
    assert "sandbox_table=" in at.code[0].value and "sandbox_r0=0.7" in at.code[0].value


def test_a_sandbox_link_naming_only_the_exercise_opens_it_whole(tiny):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(sandbox_preset="Five-token draft, the third rejected first")  # no τ, no draws
    at.run()
    at.switch_page("pages/sandbox.py").run()
    assert not at.exception
    assert at.number_input(key="sandbox_tau").value == 5  # the exercise's τ, not the default 1
    assert "**n = 2** of 5 accepted (position 3 is the first rejected)" in at.success[0].value
    assert any(i.value.startswith("Positions 4 and 5 would pass their own test") for i in at.info)


def test_a_lossless_link_carries_its_table_and_a_broken_one_is_a_message(tiny):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(lossless_table='{"token":["x","y"],"p (target)":[0.9,0.1],"q (draft)":[0.5,0.5]}')
    at.run()
    at.switch_page("pages/lossless.py").run()
    assert not at.exception
    assert at.session_state["lossless_table_link"]["p (target)"] == [0.9, 0.1]
    shared = at.code[0].value  # the page's own link carries the table it shows
    assert "lossless_table=" in shared and "%22x%22%2C%22y%22" in shared and "0.9%2C0.1" in shared
    broken = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    broken.query_params.update(sandbox_table="{not json", sandbox_tau="1")
    broken.run()
    assert any("sandbox table cannot be read" in t.value for t in broken.toast)
    broken.switch_page("pages/sandbox.py").run()
    assert not broken.exception and "n = 1" in broken.success[0].value  # the exercise's own table


def test_a_tree_link_reopens_the_same_tree_run(tiny):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in {
        "decode_tree": "true",
        "decode_tree_topk": "2",
        "decode_tree_steps": "3",
        "decode_tree_nodes": "5",
        "decode_steps": "2",
        "decode_seed": "4",
    }.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    dec = at.session_state["decode_stepper"].decoder
    assert (dec.config.topk, dec.config.steps, dec.config.num_draft_tokens, dec.config.seed) == (2, 3, 5, 4)
    assert len(dec.steps) == 2 and all(s.tree is not None for s in dec.steps)
    again = Decoder(tiny_text_pair(chat=True), dec.prompt, dec.config).run()
    assert [(s.emitted, s.tree.nodes) for s in again.steps[:2]] == [(s.emitted, s.tree.nodes) for s in dec.steps]
