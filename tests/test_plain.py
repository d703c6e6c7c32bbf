"""Text from a link, a file or a model is text (specviz.viz.plain): hostile strings rendered through a
CommonMark renderer make no element, read as the same characters, and a replayed trace's names and texts
reach the Decode page escaped (issue 46, point 3)."""

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from specviz.viz.plain import JOINER, NEWLINE, plain, plain_cells
from tests.helpers import tiny_text_pair

APP = str(Path(__file__).resolve().parents[1] / "app.py")
IMAGE = "![t](http://127.0.0.1:9/x.png)"
HOSTILE = [
    IMAGE,
    "[click](http://127.0.0.1:9/) and [ref][1]\n\n[1]: http://127.0.0.1:9/",
    '<img src="http://127.0.0.1:9/y.png"> <b>bold</b> <script>alert(1)</script>',
    "# Heading",
    "   ## indented heading",
    "Title\n=====",
    "- one\n- two",
    "* star list",
    "+ plus list",
    "1. first\n2) second",
    "> quoted",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "```python\nimport os\n```",
    "    four spaces: a code block",
    "`inline code`",
    "**bold** __bold__ *em* _em_ ~~struck~~ ~tilde~",
    "<http://127.0.0.1:9/auto> www.example.com user@example.com https://127.0.0.1:9/bare",
    "---",
    "line one\r\n# heading\rline three",
    "a backslash first: \\**bold**",
]
# what CommonMark alone leaves as text but Streamlit renders: math (remark-math), colours (directives), entities
STREAMLIT = [
    "$x^2$ and $$\\int_0^1 x\\,dx$$",
    ":red[coloured] :blue-background[text]",
    "&lt;entity&gt; &#60;x&#62; &amp;",
    "www.example.com user@example.com https://127.0.0.1:9/bare",
]
# Streamlit's own markup (its frontend's StreamlitMarkdown, 1.67): directives, icons, shortcodes, symbols
DIRECTIVES = [
    ":material/pets: and :violet[VIO]",
    ":red[r] :blue-background[b] :rainbow-background[rb] :blue-badge[badge] :small[s] :shimmer[sh] :help[tip]",
    ':color[custom]{foreground="#f00"} :unknown[label dropped]',
    "::leaf[x]",
    ":::container",
    ":sunglasses: :+1: :-1: :100: :streamlit:",
    "a -> b <- c <-> d -- e >= f <= g ~= h",
    "-> at the start",
]


class Elements(HTMLParser):
    """Every element in rendered HTML, by tag."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)


def render(markdown: str) -> tuple[list[str], str]:
    """(the elements, the text) of `markdown` as GitHub-flavoured CommonMark renders it (tables and strikethrough
    on, as Streamlit has them)."""
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)
    elements = Elements()
    elements.feed(rendered)
    return elements.tags, html.unescape(rendered.removeprefix("<p>").removesuffix("</p>\n"))


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_markdown_makes_elements_unescaped(text):
    tags, _ = render(text)
    assert set(tags) - {"p"}, f"{text!r} makes no element unescaped: the cases below would test nothing"


@pytest.mark.parametrize("text", HOSTILE + STREAMLIT)
def test_hostile_text_renders_as_one_paragraph_of_its_own_characters(text):
    tags, shown = render(plain(text))
    assert tags == ["p"]  # no image, link, heading, list, table, code, emphasis or HTML: one paragraph
    one_line = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", NEWLINE)
    assert shown.replace(JOINER, "").replace("\u00a0", " ").strip() == one_line.strip()  # the same characters


@pytest.mark.parametrize("text", HOSTILE + STREAMLIT)
def test_what_a_renderer_finds_after_escapes_is_broken_too(text):
    """GFM finds literal autolinks, and remark-math finds formulas, in the text left after escapes: neither may
    find one; and every `$`, `[` and `&` is escaped."""
    escaped = plain(text)
    _, shown = render(escaped)
    for start in ("http://", "https://", "www.", "@e"):
        assert start not in shown
    for special in "$[&":  # formulas, directives' brackets, entities: each one escaped
        assert special not in escaped.replace("\\" + special, "")
    assert "\n" not in escaped and "\r" not in escaped


def streamlit_finds(markdown: str) -> list[str]:
    """What Streamlit's frontend (StreamlitMarkdown.tsx; the installed static/js/StreamlitMarkdown.*.js) would turn
    into an icon, a colour, a badge or a symbol in `markdown`: `:material/` is rewritten in the source before
    parsing; remark-directive opens a directive at a ":" before an ASCII letter in the text (an escaped ":" is the
    only other way out, and plain escapes none); remark-emoji, the logo and the icons are found in text nodes after
    escapes are resolved, as are the typographic symbols between spaces."""
    source = markdown.replace(":material/", ":material_")
    _, text = render(source)
    patterns = (
        r":material_\w+:",  # an icon
        r":[A-Za-z]",  # a directive: colours, backgrounds, badges, small, help, leaf and container directives
        r":[\w+-]+:",  # an emoji shortcode, :streamlit:
        r"(?:^|\s)(?:<->|->|<-|--|>=|<=|~=)(?:\s|$)",  # a typographic symbol
    )
    return [m.group(0) for pattern in patterns for m in re.finditer(pattern, text)]


@pytest.mark.parametrize("text", DIRECTIVES)
def test_streamlit_directives_icons_and_shortcodes_are_text(text):
    """Issue 68.4: `:material/pets:` and `:violet[VIO]` in a name rendered an icon and coloured text (the word gone).
    Escaped, none of Streamlit's own markup is found, and the text reads as its own characters."""
    assert streamlit_finds(text), f"{text!r} has no Streamlit markup: the case tests nothing"
    escaped = plain(text)
    assert streamlit_finds(escaped) == []
    tags, shown = render(escaped)
    assert tags == ["p"] and shown.replace(JOINER, "") == text


def test_ordinary_text_is_left_as_it_reads():
    for text in (
        "ignored decode_mode='fast' from the link: allowed values are 'textbook', 'lossless', 'greedy'",
        "snake_case_name, 10:30, 2026-01-01, 3.5 tokens per pass (95% interval); a - b",
        "SmolLM2-135M-Instruct, 2 threads",
        "early-exit:3, 10:30, a: b, x-1, a--b",
    ):
        assert plain(text) == text
    assert plain(42) == "42" and plain(ValueError("bad [x]")) == "bad \\[x\\]"
    assert plain("- item") == "\\- item" and plain("12. item") == "12\\. item" and plain("a - b") == "a - b"
    assert plain("0.0113") == "0.0113" and plain("3)") == "3\\)"  # a number is no list


def test_table_cells_are_escaped_and_numbers_kept():
    frame = pd.DataFrame({"token": [IMAGE, "ok"], "q": [0.5, 0.25]})
    cells = plain_cells(frame)
    assert list(cells["token"]) == [plain(IMAGE), "ok"] and list(cells["q"]) == [0.5, 0.25]
    assert plain_cells([{"name": "<b>x</b>", "n": 3}]) == [{"name": "\\<b\\>x\\</b\\>", "n": 3}]


# --- a replayed trace on the Decode page -------------------------------------------------------------


@pytest.fixture
def saved_run():
    import specviz

    return specviz.Decoder(tiny_text_pair(chat=False), "w1 w2 w3", specviz.SpecConfig(tau=3, max_new_tokens=8)).run()


@pytest.fixture
def app(monkeypatch):
    """The app with model loading patched to the tiny pair."""
    import streamlit as st

    import specviz

    monkeypatch.setattr(specviz, "load_pair", lambda target, draft, runtime="torch", **_: tiny_text_pair(chat=True))
    st.cache_resource.clear()
    yield AppTest.from_file(APP, default_timeout=120).run()
    st.cache_resource.clear()


MARKUP = re.compile(r"(?<!\\)(!\[|\]\(|<img|<a )")  # an image, a link or a tag, unescaped


def shown(at: AppTest) -> list[str]:
    """Every markdown body AppTest sees: text, alerts, captions."""
    kinds = ("markdown", "error", "warning", "info", "success", "caption")
    return [e.value for kind in kinds for e in getattr(at, kind)]


def test_a_replayed_trace_whose_text_is_markdown_is_refused_in_words_not_markup(app, saved_run):
    data = json.loads(saved_run.to_json())
    data["steps"][0]["draft_text"][0] = IMAGE  # edited by hand: its tokens' texts then disagree
    app.file_uploader(key="decode_upload").set_value(("run.json", json.dumps(data).encode(), "application/json"))
    app.run()
    assert not app.exception
    error = app.error[0].value
    assert error.startswith("**This file is not a specviz trace that can be replayed:**")
    assert plain(IMAGE) in error and "![" not in error
    assert not any(MARKUP.search(body) for body in shown(app))


def test_a_replayed_trace_shows_its_names_as_text(app, saved_run):
    data = json.loads(saved_run.to_json())
    data["target_name"], data["draft_name"] = IMAGE, "<img src=http://127.0.0.1:9/y.png>"
    app.file_uploader(key="decode_upload").set_value(("run.json", json.dumps(data).encode(), "application/json"))
    app.run()
    app.button(key="decode_step").click().run()
    assert not app.exception and not app.error
    banner = next(i.value for i in app.info if i.value.startswith("Replaying a saved trace"))
    assert f"**{plain(IMAGE)}** with draft **\\<img src=http:{JOINER}//127.0.0.1:9/y.png\\>**" in banner
    assert not any(MARKUP.search(body) for body in shown(app))


def test_a_replayed_traces_names_of_streamlit_directives_show_as_text(app, saved_run):
    """Issue 68.4: a trace whose model names are `:material/pets:` and `:violet[VIO]` shows them in the replay banner as
    their own characters: no icon, no colour."""
    data = json.loads(saved_run.to_json())
    data["target_name"], data["draft_name"] = ":material/pets:", ":violet[VIO] :blue-badge[B]"
    app.file_uploader(key="decode_upload").set_value(("run.json", json.dumps(data).encode(), "application/json"))
    app.run()
    app.button(key="decode_step").click().run()
    assert not app.exception and not app.error
    banner = next(i.value for i in app.info if i.value.startswith("Replaying a saved trace"))
    assert f"**:{JOINER}material/pets:** with draft **:{JOINER}violet\\[VIO\\] :{JOINER}blue-badge\\[B\\]**" in banner
    assert streamlit_finds(banner.split(" with draft ")[0].split("no model loaded. ")[1]) == []
