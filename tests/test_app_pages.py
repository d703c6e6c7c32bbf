"""Every page through Streamlit's AppTest: each opens without an exception, and a link's settings, whether not allowed,
unreadable or hostile, are a message or text on every page, never a traceback or live markup. Model loading is
patched to a tiny random pair (the `loads` fixture)."""

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from specviz.classroom import settings
from specviz.viz.plain import plain
from tests.app_helpers import ROOT, app

PAGES = [
    "pages/decode.py",
    "pages/race.py",
    "pages/sweep.py",
    "pages/pay.py",
    "pages/sandbox.py",
    "pages/lossless.py",
    "pages/about.py",
]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_opens_without_exception(loads, page):
    at = app()
    at.switch_page(page).run()
    assert not at.exception
    assert at.title


def test_a_link_value_that_is_not_allowed_says_what_is(loads):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(decode_mode="fast", decode_tau="40")
    at.run()
    assert not at.exception
    toasts = [t.value for t in at.toast]
    assert "ignored decode_mode='fast' from the link: allowed values are 'textbook', 'lossless', 'greedy'" in toasts
    assert "ignored decode_tau='40' from the link: allowed values are 1 to 16" in toasts


def test_a_link_with_the_custom_pairs_old_label_opens_the_custom_pair(loads):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(decode_preset="Custom: hub id or local folder", decode_target="llamacpp:http://h:1/v1")
    at.run()
    assert not at.exception and not at.toast
    assert at.selectbox(key="decode_preset").value == settings.CUSTOM
    assert at.text_input(key="decode_target").value == "llamacpp:http://h:1/v1"


@pytest.mark.parametrize(
    "params, said",
    [  # issue 57.3: each was a traceback (on every page while it stayed in the address)
        ({"decode_drafts": '{"²":"x"}'}, "the link's typed drafts name step '²': steps are numbered from 1"),
        ({"decode_drafts": "[" * 3000}, "the link's typed drafts cannot be read: it nests deeper than 1 level"),
        ({"lossless_table": "[" * 3000}, "ignored the table in the link: the table cannot be read: it nests deeper"),
        ({"sandbox_table": "[" * 3000}, "the link's sandbox table cannot be read: it nests deeper than 3 levels"),
        (
            {"sandbox_table": '{"words":["a","b"],"q":[[' + "1" * 400 + ',1]],"p":[[1,1],[1,1]]}', "sandbox_tau": "1"},
            "the link's sandbox table cannot be read: it holds a whole number of 400 digits",
        ),
        (
            {"decode_tau": "٣", "sandbox_tau": "٣"},
            "ignored decode_tau='٣' from the link: not a whole number (digits 0-9)",
        ),
    ],
)
def test_a_link_that_cannot_be_read_is_a_message_and_every_page_opens(loads, params, said):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(params)
    at.run()
    assert not at.exception
    toasts = [t.value for t in at.toast]
    assert any(plain(said) in t for t in toasts), toasts
    assert at.slider(key="decode_tau").value == 4  # the default: nothing of the link's value used
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, page
    at.switch_page("pages/sandbox.py").run()
    assert at.number_input(key="sandbox_tau").value == 1 and at.success  # the first exercise, stepped
    at.switch_page("pages/lossless.py").run()
    assert not at.error  # the example table


HOSTILE = "![m](http://127.0.0.1:9/md.png) [l](http://127.0.0.1:9/x) http://127.0.0.1:9/auto"


UNESCAPED = re.compile(r"(?<!\\)(!\[|\]\(|<img|<a )|http://127")  # an image, a link, a tag or an autolink, live


def markdown_texts(at: AppTest) -> list[str]:
    """Every text on the page that Streamlit renders as markdown: the elements, alerts, captions, toasts and titles,
    st.table's cells, and the labels and help of buttons, expanders and metrics."""
    kinds = ("markdown", "caption", "info", "success", "warning", "error", "toast", "title", "subheader")
    texts = [e.value for kind in kinds for e in at.get(kind)]
    texts += [c for t in at.get("table") for c in t.value.to_numpy().ravel().tolist() if isinstance(c, str)]
    widgets = [w.proto for kind in ("button", "expander", "metric") for w in at.get(kind)]
    return texts + [getattr(w, name, "") for w in widgets for name in ("label", "help")]


def test_every_text_a_link_carries_reaches_the_page_as_text(loads):
    """Issue 57.2: every free-text setting a link may carry (prompts, pair specs, the context, the typed draft and the
    typed drafts of the steps it replays, a table's words) set to an image and two links; on every page, no markdown
    element, alert, caption, toast, table cell or widget label holds them live (the typed draft's note holds them, as
    text)."""
    params = {
        key: HOSTILE
        for key, s in settings.SETTINGS.items()
        if s.link and isinstance(s.default, str) and s.allowed is None and key not in settings.LINK_ONLY
    }
    assert {"decode_prompt", "decode_target", "decode_typed", "sandbox_context", "sweep_prompts"} <= set(params)
    params |= {f"{page}_preset": settings.CUSTOM for page in ("decode", "sweep", "lossless")}
    params |= {"decode_drafts": json.dumps({"1": HOSTILE}), "decode_steps": "1"}
    params["lossless_table"] = json.dumps({"token": [HOSTILE, "b"], "p (target)": [0.5, 0.5], "q (draft)": [0.5, 0.5]})
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update(params)
    at.run()
    shown = []
    for page in [None, *PAGES, "pages/lessons.py"]:
        if page:
            at.switch_page(page).run()
        assert not at.exception, page
        texts = markdown_texts(at)
        assert [t for t in texts if UNESCAPED.search(t)] == [], page
        shown += [t for t in texts if plain(HOSTILE) in t]
    assert any(t.startswith(f'**Your draft** "{plain(HOSTILE)}" (step 1)') for t in shown), shown
