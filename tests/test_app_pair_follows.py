"""Issue 67, "one pair everywhere": after a Step on Decode with a pair of the user's own (GGUF files found on this
computer), the Race, the τ sweep and Decode's own sidebar show that pair under the user's file names; a page's
settings change only on its own runs (a Step's fragment run made the next page's run read Decode's sidebar as its
first choices)."""

import asyncio

import pytest
from streamlit.testing.v1 import AppTest

from specviz.classroom import settings
from tests.app_helpers import ROOT, app, decoder


@pytest.mark.slow
@pytest.mark.numeric  # no clock: on both cores in `make test`
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


@pytest.fixture
def named_loads(monkeypatch):
    """Model loading patched to a tiny random pair named as real loading names the files asked for
    (specviz.loading.gguf_name: the user's file name and its quantization); returns the (target, draft) asked for."""
    import streamlit as st

    import specviz
    from specviz import HFCodec, HFModel, ModelPair, loading, specs
    from tests.helpers import tiny_llama, word_tokenizer

    calls = []

    def name(spec) -> str:
        spec = specs.parse(spec)
        found = spec.found if isinstance(spec, specs.GGUFFile) else None
        return loading.gguf_name(found.info, spec) if found is not None else str(spec)

    def fake_load_pair(target, draft, runtime="torch", **_kwargs):
        calls.append((target, draft))
        target_lm = HFModel(tiny_llama(0), name(target), "torch")
        draft_lm = HFModel(tiny_llama(1, layers=1), name(draft))
        return ModelPair(target_lm, draft_lm, HFCodec(word_tokenizer(chat=True), "tiny-Instruct"))

    monkeypatch.setattr(specviz, "load_pair", fake_load_pair)
    st.cache_resource.clear()
    yield calls
    st.cache_resource.clear()


def test_a_found_pair_stepped_on_decode_is_the_pair_of_the_race_and_the_sweep_under_its_file_names(
    named_loads, found_files, monkeypatch
):
    """Issue 67.1 and 67.2: after a Step on Decode with big.gguf drafted by mid.gguf (the user's files), the Race
    showed its first preset, the τ sweep the embedded pair, and Decode's sidebar fell back; names were the files'
    general.name. Now the Race races that pair naming its target, the sweep's sidebar holds it (and offers the Decode
    page's pair back after another is chosen there), Decode's sidebar keeps it, and every page names the files."""
    from specviz.analysis import outlook
    from specviz.analysis.race import YOURS
    from specviz.models import llamacpp

    monkeypatch.setattr(llamacpp, "available", lambda: True)
    big, mid = found_files["big"], found_files["mid"]
    at = app(panels_open=False)
    at.selectbox(key="decode_preset").set_value(settings.ON_THIS_COMPUTER).run()
    at.selectbox(key="decode_local_target").set_value(big).run()
    at.selectbox(key="decode_local_draft").set_value(mid).run()
    at.button(key="decode_step").click().run()
    assert not at.exception and len(decoder(at).steps) == 1
    names = ("big.gguf (F32)", "mid.gguf (F32)")
    assert (decoder(at).pair.target.name, decoder(at).pair.draft.name) == names  # not the header's general.name
    tau = decoder(at).config.tau  # issue 67.4: the settings from the user's own files and the τ they measured
    (server,) = [c.value for c in at.code if c.value.startswith("llama-server ")]
    assert server == (
        f"llama-server -m {big} --spec-type draft-simple --spec-draft-model {mid} --spec-draft-n-max {tau} "
        "--spec-draft-n-min 0 --spec-draft-p-min 0.00"
    )
    (studio,) = [c.value for c in at.code if "maxTokensToDraft" in c.value and '"mid.gguf"' in c.value]
    assert f'"llm.prediction.speculativeDecoding.maxTokensToDraft": {tau}' in studio
    fresh = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)  # app.py's sidebar: drawn on a first run
    fresh.session_state["decode_stepper"] = at.session_state["decode_stepper"]
    fresh.run()
    runtime_line = " ".join(c.value for c in fresh.sidebar.caption if "runs on" in c.value)
    assert "The target, **big.gguf (F32)**, runs on **llama.cpp**" in runtime_line
    assert "embedded target runs" not in runtime_line
    assert any("mid.gguf" in c.value for c in at.sidebar.caption)  # the draft's whole name under its box

    at.switch_page("pages/race.py").run()
    assert not at.exception and at.selectbox(key="race_preset").value == YOURS
    assert any(f"Target: {names[0]}. Draft: {names[1]}, τ = " in c.value for c in at.caption)

    at.switch_page("pages/sweep.py").run()
    assert not at.exception
    chosen = [at.selectbox(key=f"sweep_{key}").value for key in ("preset", "local_target", "local_draft")]
    assert chosen == [settings.ON_THIS_COMPUTER, big, mid]
    assert not [b for b in at.button if b.key == "sweep_use_decode"]  # the same pair: nothing to bring
    assert at.button(key="sweep_drafts_recommend").disabled  # Across drafts: nothing finished yet to recommend from
    assert any(
        c.value.startswith(f"{len(at.multiselect(key='sweep_drafts').value) * 4 * 8} runs: how long is said")
        for c in at.caption
    )  # no kept timings of this pair yet: said once they are timed
    at.selectbox(key="sweep_preset").set_value("Embedded pair").run()  # another pair chosen here stays
    assert at.selectbox(key="sweep_preset").value == "Embedded pair"
    at.button(key="sweep_use_decode").click().run()  # "Use the Decode page's pair here", as the docs say
    chosen = [at.selectbox(key=f"sweep_{key}").value for key in ("preset", "local_target", "local_draft")]
    assert chosen == [settings.ON_THIS_COMPUTER, big, mid]

    at.switch_page("pages/pay.py").run()
    assert not at.exception
    assert at.selectbox(key="pay_pair").value == outlook.YOUR_PAIR  # carried there too, on its preset hardware
    said = " ".join(e.value for e in [*at.success, *at.warning])
    assert f"{names[0]} drafted by {names[1]}" in said, said
    (few,) = [w.value for w in at.warning if "Decode step" in w.value]  # one step: rates of 0.00 or 1.00, said
    assert few.startswith("**This acceptance comes from 1 Decode step.** Each per-position rate is one of 2 values")

    sglang = (ROOT / "tests" / "fixtures" / "engine_logs" / "sglang_log.txt").read_text()
    at.text_area(key="pay_import_text").set_value(sglang).run()  # an engine's numbers pasted: the boxes for the
    assert not at.exception  # settings hold the user's own files, not target.gguf placeholders
    assert (at.text_input(key="pay_import_target").value, at.text_input(key="pay_import_model").value) == (big, mid)

    # Decode's own sidebar after the other pages: test_decode_sidebar_keeps_its_pair_after_a_step_and_other_pages
    # (AppTest runs app.py's settings keeper only on a session's first run)
