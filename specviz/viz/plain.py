"""Text that came from a link, a file or a model, put into Streamlit's markdown as text: it reads as the
same characters and makes no element (no image, link, heading, list, table, code, formula, colour, icon or
HTML). Streamlit renders GitHub-flavoured markdown (CommonMark, GFM tables, strikethrough and literal
autolinks, `$` math) and its own directives in st.markdown, the alerts, captions, toasts, widget labels
and st.table's cells; every one of them gets such text through `plain`.

Streamlit's own markup (its frontend's StreamlitMarkdown): text directives `:name[label]{attributes}` (the
colours `:violet[…]`, `:blue-background[…]`, badges `:blue-badge[…]`, `:small[…]`, `:shimmer[…]`, `:help[…]`,
`:color[…]{foreground=…}`; an unknown name drops its label), leaf and container directives (`::name`,
`:::name` at a line's start), Material icons `:material/name:` (rewritten in the source before parsing, so a
backslash does not stop them), emoji shortcodes `:name:`, `:streamlit:`, and typographic symbols (` -> `,
` <- `, ` <-> `, ` -- `, ` >= `, ` <= `, ` ~= ` between spaces become arrows and signs). All of them are found
in the text after escapes are resolved, or before parsing: each is broken with the word joiner after its
first character (a `:` before a letter, or before a shortcode's `name:`; the first of a symbol's
characters).

CommonMark lets a backslash make any ASCII punctuation literal; only the characters that can open a
construct are escaped, so that an ordinary sentence reads the same in the source as on screen. GFM's
literal autolinks (`http://…`, `www.…`, `a@b.c`) are found in the text after escapes are resolved, so
they are broken with an invisible word joiner instead. For HTML (st.html) use `html.escape`."""

from __future__ import annotations

import re
from typing import Any

# can open a construct anywhere in a line: escapes, code, emphasis, links and images ([ ]), autolinks and
# HTML (< >), entities (&), strikethrough (~), math ($), table cells (|)
ANYWHERE = frozenset("\\`*[]<>&~$|")
# can open a block at the start of a line: headings, block quotes, lists, setext underlines
LINE_START = frozenset("#>+-=")
ORDERED = re.compile(r"\d{1,9}[.)](?=[ \t]|$)")  # "1. " or "1)" at the start of a line: an ordered list (not "0.5")
AUTOLINK = re.compile(r"(?i)(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)(?=\w)")  # where GFM would start a link
# Streamlit's own: a ":" that could open a directive, an icon or an emoji shortcode (":name", ":material/x:",
# ":+1:"); a typographic symbol between spaces (its first character)
DIRECTIVE = re.compile(r":(?=[A-Za-z]|[\w+-]+:)")
SYMBOL = re.compile(r"(?<!\S)(?:<->|->|<-|--|>=|<=|~=)(?!\S)")
JOINER = "\u2060"  # WORD JOINER: invisible, no line break, and not a character a link can contain
NEWLINE = "↵"  # a line break in the text, shown (as the token charts show it), never a new block


def plain(text: object) -> str:
    """`text` (str() of it) as markdown that shows exactly its characters: one line (a line break shows as
    ↵), every character that could open markdown or HTML escaped. Never put the result inside a code span
    (`…`), where backslashes show."""
    one_line = str(text).replace("\r\n", "\n").replace("\r", "\n").replace("\n", NEWLINE)
    body = one_line.lstrip(" \t")
    out = ["\u00a0" * (len(one_line) - len(body))]  # no spaces at the start: four would make a code block
    for i, ch in enumerate(body):
        if ch in ANYWHERE or (ch == "_" and not _inside_word(body, i)) or (i == 0 and ch in LINE_START):
            out.append("\\" + ch)
        else:
            out.append(ch)
    if number := ORDERED.match(body):  # escape its "." or ")"
        end = number.end() - 1
        out[1 + end] = "\\" + body[end]
    for found in (*DIRECTIVE.finditer(body), *SYMBOL.finditer(body)):  # Streamlit's own markup: a joiner inside
        out[1 + found.start()] += JOINER
    return AUTOLINK.sub(JOINER, "".join(out))


def _inside_word(text: str, i: int) -> bool:
    """Whether text[i] has a letter or digit on both sides: an "_" there opens no emphasis (snake_case)."""
    return 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()


def plain_cells(rows: Any) -> Any:
    """A table for st.table (which renders each cell as markdown) with every text cell made `plain`: a
    pandas DataFrame, or a list of dicts."""
    if isinstance(rows, list):
        return [{k: plain(v) if isinstance(v, str) else v for k, v in row.items()} for row in rows]
    return rows.map(lambda v: plain(v) if isinstance(v, str) else v)
