"""Issue 67, "one pair everywhere": after a Step on Decode with a pair of the user's own (GGUF files found on this
computer), the Race, the τ sweep and Decode's own sidebar show that pair under the user's file names; a page's
settings change only on its own runs (a Step's fragment run made the next page's run read Decode's sidebar as its
first choices)."""

import asyncio

import pytest

from specviz.classroom import settings


@pytest.mark.slow
def test_decode_sidebar_keeps_its_pair_after_a_step_and_other_pages(tmp_path):
    """Over Streamlit's own websocket protocol (benchmarks.stclient speaks what the browser does; AppTest runs
    app.py's settings keeper only on a session's first run): a Custom pair, one Step (a fragment's run), the About
    and Race pages, then Decode: its sidebar still shows the pair, not the first preset."""
    from benchmarks.appserver import serve
    from benchmarks.stclient import StreamlitClient

    async def visit(url: str) -> list[str]:
        client = StreamlitClient(url)
        await client.connect(page_name="about", timeout=300)
        await client.switch_page("Decode", timeout=300)
        await client.set_value("decode_preset", settings.CUSTOM)
        await client.set_value("decode_target", str(tmp_path / "no-such-model"))
        await client.click("decode_step", timeout=300)  # refused (no such folder): a fragment's run all the same
        for page in ("About", "Race", "Decode"):
            await client.switch_page(page, timeout=300)
        _kind, preset = client.widget("decode_preset")
        _kind, target = client.widget("decode_target")
        seen = [preset.raw_value, target.value]
        await client.close()
        return seen

    with serve(tmp_path / "streamlit.log") as url:
        seen = asyncio.run(visit(url))
    assert seen == [settings.CUSTOM, str(tmp_path / "no-such-model")]
