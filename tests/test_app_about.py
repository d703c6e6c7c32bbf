"""The About page through Streamlit's AppTest: the engine glossary as docs/algorithm.md's table."""

from streamlit.testing.v1 import AppTest

from tests.app_helpers import ROOT


def test_the_about_page_shows_the_engine_glossary_as_the_documents_table():
    from specviz.analysis.glossary import COLUMNS, glossary_rows

    text = (ROOT / "docs" / "algorithm.md").read_text()
    block = text[text.index("| specviz | formula | vLLM | SGLang | llama.cpp |") :].split("\n\n")[0].splitlines()
    rows = [[c.strip() for c in line.strip().strip("|").split(" | ")] for line in block if not line.startswith("|---")]
    assert tuple(rows[0]) == COLUMNS and [list(r.values()) for r in glossary_rows()] == rows[1:]
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("pages/about.py").run()
    table = at.table[-1].value
    assert list(table.index) == [r[0] for r in rows[1:]] and list(table.columns) == list(COLUMNS[1:])
    assert table.loc["draft acceptance rate", "vLLM"] == "`Avg Draft acceptance rate: %.1f%%` = `100·Σ a / Σ k`"
    assert table.loc["mean acceptance length", "llama.cpp"].startswith("`mean acceptance length = %.2f`")
    assert table.loc["conditional per-position rate `i`", "llama.cpp"] == "not reported"
