"""The sweep page through Streamlit's AppTest: the τ sweep with theory beside measurement, a stop and a snapshot,
parallel against sequential verification, chain against tree, the verification rules, a busy server, and across
drafts for a GGUF target. Model loading is patched to a tiny random pair (the `loads` fixture) unless a test loads
for real."""

import json

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from specviz.classroom import settings
from tests.app_helpers import ROOT, app, busy_machine, figure
from tests.helpers import tiny_text_pair


def sweep_page(at: AppTest) -> AppTest:
    at.switch_page("pages/sweep.py").run()
    at.slider(key="sweep_taus").set_value((1, 3))
    at.text_area(key="sweep_prompts").set_value("w1 w2\nw5")
    at.number_input(key="sweep_max_new").set_value(8)
    return at.run()


def test_sweep_page_runs_and_shows_theory_beside_measurement(loads):
    at = sweep_page(app())
    assert not at.exception
    assert at.button(key="sweep_run").label == "Run 6 of 6 units"  # 3 τ × 2 prompts, each timed against the target
    at.button(key="sweep_run").click().run()
    assert not at.exception
    assert len(at.session_state["sweep_cache"]) == 6
    assert at.button(key="sweep_run").label == "All finished"
    verdict = (at.success or at.warning)[0].value  # green only when the best τ's whole interval is above 1
    assert verdict.startswith("Measured: ") and "Predicted with the verify cost measured" in verdict
    table = at.table[0].value  # the results, every measured number with its interval, as text
    assert list(table["τ"]) == [1, 2, 3] and all("×" in x for x in table["speedup (95% interval)"])
    traces = [t for i in range(4) for t in figure(at, i)["data"]]
    measured = next(t for t in traces if t.get("name") == "measured (95% interval)")
    assert measured["error_y"]["array"] and measured["error_y"]["arrayminus"]  # the spread is drawn
    assert [f"{y:.2f}×" for y in measured["y"]] == [x.split(" ")[0] for x in table["speedup (95% interval)"]]
    assert any(t.get("name") == "S_v: range of the measured v" for t in traces)
    assert len(at.get("plotly_chart")) == 4 and len(at.get("download_button")) == 3  # JSON, CSV, the snapshot
    assert [(str(t), str(d)) for t, d in loads].count(("embedded", "embedded")) == 1  # the decode page's load is reused
    at.toggle(key="sweep_present").set_value(True).run()  # a projector: the two charts, large
    assert len(at.get("plotly_chart")) == 2 and figure(at, 0)["layout"]["font"]["size"] == 20


def test_sweep_page_keeps_partial_results_after_a_stop(loads):
    from specviz.analysis.sweep import Sweep, SweepSettings

    settings = SweepSettings(taus=(1, 2, 3), prompts=("w1 w2", "w5"), mode="greedy", max_new_tokens=8, chat=None)
    cache: dict = {}
    progress = Sweep(tiny_text_pair(chat=True), settings, cache).advance()
    for _ in range(2):  # τ = 1 for both prompts finished before Stop
        next(progress)
    at = app()
    at.session_state["sweep_cache"] = cache
    sweep_page(at)
    assert not at.exception
    assert "Stopped with 4 of 6 units left" in at.warning[0].value
    assert list(at.table[0].value["τ"]) == [1]
    assert at.button(key="sweep_run").label == "Run 4 of 6 units"


def test_a_sweep_snapshot_reopens_from_its_link_as_it_was(loads):
    """Freeze the sweep (date, machine, runtime, load), open its link in a fresh session: the same verdict,
    the same chart numbers, a banner saying it is frozen, and no model work."""
    at = sweep_page(app())
    at.button(key="sweep_run").click().run()
    verdict = (at.success or at.warning)[0].value
    link = next(c.value for c in at.code if "snapshot=" in c.value)
    speedups = next(t for t in figure(at, 0)["data"] if t.get("name") == "measured (95% interval)")["y"]
    from urllib.parse import parse_qs, urlsplit

    fresh = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    fresh.query_params["snapshot"] = parse_qs(urlsplit(link).query)["snapshot"][0]
    fresh.run()
    fresh.switch_page("pages/sweep.py").run()
    assert not fresh.exception
    assert fresh.info[0].value.startswith("Frozen measurement: sweep, taken ")
    assert (fresh.success or fresh.warning)[0].value == verdict
    assert next(t for t in figure(fresh, 0)["data"] if t.get("name") == "measured (95% interval)")["y"] == speedups
    assert "sweep_cache" not in fresh.session_state  # nothing was run to show it


def test_sweep_page_reports_bad_settings(loads):
    at = app()
    at.switch_page("pages/sweep.py").run()
    at.text_area(key="sweep_prompts").set_value("  \n ").run()
    assert not at.exception
    assert "at least one" in at.error[0].value


def test_sweep_measures_parallel_against_sequential_verification(loads):
    at = app()
    at.switch_page("pages/sweep.py").run()
    at.text_area(key="sweep_prompts").set_value("w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12").run()
    at.slider(key="sweep_taus").set_value((1, 3)).run()
    at.button(key="sweep_verify").click().run()
    assert not at.exception
    labels = [m.label for m in at.metric]
    assert "one pass over 4 tokens" in labels and "4 one-token passes" in labels


def test_sweep_page_compares_chain_and_tree_at_each_budget(loads):
    at = sweep_page(app())
    at.number_input(key="sweep_max_new").set_value(8)
    at.button(key="sweep_trees_run").click().run()
    assert not at.exception
    result = at.session_state["sweep_trees_result"]
    assert [r.budget for r in result.rows] == [4, 4, 8, 8, 16, 16]
    charts = [figure(at, i) for i in range(len(at.get("plotly_chart")))]
    tokens = next(c for c in charts if c["layout"]["yaxis"]["title"]["text"] == "tokens per step")
    assert tokens["data"][1]["y"] == [r.tokens_per_step for r in result.rows if r.shape == "tree"]
    assert any(s.value == result.verdict() for s in at.success)


def test_the_sweep_compares_the_verification_rules_and_runs_under_the_chosen_one(loads):
    at = sweep_page(app())
    assert at.selectbox(key="sweep_rule").disabled  # greedy: the rules decide lossless steps only
    at.radio(key="sweep_mode").set_value("lossless").run()
    assert not at.selectbox(key="sweep_rule").disabled
    at.selectbox(key="sweep_rule").set_value("block").run()
    at.button(key="sweep_rules_run").click().run(timeout=300)
    assert not at.exception
    result = at.session_state["sweep_rules_result"]
    (panel,) = [e for e in at.expander if e.label.startswith("Verification rules")]
    length, rate = (json.loads(c.proto.spec) for c in panel.get("plotly_chart"))
    assert [t["name"] for t in length["data"]] == ["token-wise", "one-hot q", "block"]
    for line in length["data"]:
        rule = {"token-wise": "token", "one-hot q": "one-hot", "block": "block"}[line["name"]]
        expected = [result.row(tau, rule) for tau in result.taus]
        assert line["y"] == pytest.approx([1 + sum(r.accepted) / r.steps for r in expected])
    tokenwise = [result.row(tau, "token") for tau in result.taus]
    assert rate["data"][0]["y"] == pytest.approx([sum(r.accepted) / sum(r.drafted) for r in tokenwise])
    assert panel.success[0].value.startswith("Mean acceptance length at τ = ")
    at.button(key="sweep_run").click().run(timeout=300)  # the sweep itself runs under the rule chosen
    configs = [key[-1] for key in at.session_state["sweep_cache"] if key[0] == "run"]
    assert configs and {(c.mode, c.verification) for c in configs} == {("lossless", "block")}


def test_the_sweep_says_where_it_measured_and_a_busy_server(loads, monkeypatch):
    busy_machine(monkeypatch)
    at = sweep_page(app())
    at.button(key="sweep_run").click().run()
    assert not at.exception
    assert any(w.value.startswith("**This server is busy** (other processes keep 1.0") for w in at.warning)
    (where,) = [c.value for c in at.caption if c.value.startswith("Measured: ")]
    assert where.startswith("Measured: timed just now on torch, 1 thread, ") and "on the 2 prompts in the" in where


def test_the_sweep_takes_out_a_tau_it_could_not_measure_and_times_it_again(loads):
    """τ = 2's runs re-timed as a busy minute would (a verify pass of 6 ms for 2 tokens the target alone took 30 ms
    for: v = 0.4): the page says τ = 2 could not be measured, and Run times its 2 runs again."""
    import dataclasses

    from specviz.analysis.measure import PairedStep

    at = sweep_page(app())
    at.button(key="sweep_run").click().run()
    cache = at.session_state["sweep_cache"]
    busy = PairedStep(tokens=2, drafted=2, spec_ms=40.0, draft_ms=1.0, verify_ms=6.0, alone_ms=30.0)
    for key, run in list(cache.items()):
        if run.tau == 2:
            cache[key] = dataclasses.replace(run, paired=(busy,) * len(run.paired))
    at.run()
    assert not at.exception
    (said,) = [w.value for w in at.warning if w.value.startswith("**τ = 2 could not be measured:**")]
    assert "0.40 single-token passes" in said and at.button(key="sweep_run").label == "Run 2 of 6 units"
    assert list(at.table[0].value["τ"]) == [1, 3]  # the rest is drawn


def test_a_busy_sweep_answers_from_counted_work_at_the_calibration_an_earlier_process_kept(loads, monkeypatch):
    """Issue 63: a calibration kept on disk before (a TimingBook on the server's timings folder, as an earlier process
    leaves it), then every step of the sweep waiting for a core: the page answers from the counted work at the kept
    costs, labelled with when and where they were measured, draws that line and the ceiling, and discards nothing
    it counted (the acceptance lengths are in the table; only the clocked columns are empty)."""
    import os

    from specviz.analysis import clock
    from specviz.analysis.pairtimes import TimingBook
    from tests.helpers import fake_ms

    pair = tiny_text_pair(chat=True)
    ids = pair.codec.encode(" ".join(f"w{i}" for i in range(30)))
    TimingBook(os.environ["SPECVIZ_TIMINGS_DIR"]).measure(pair, ids, timer=clock.FakeTimer(fake_ms))
    monkeypatch.setattr(clock, "_default", clock.FakeTimer(fake_ms, disturbed=lambda *_: True))
    busy_machine(monkeypatch)
    at = sweep_page(app())
    at.button(key="sweep_run").click().run()
    assert not at.exception and not any("could not be measured" in w.value for w in at.warning)
    (verdict,) = [i.value for i in at.info if "From counted work at the pair's kept costs" in i.value]
    assert "(the calibration kept just now on torch (1 thread), " in verdict and "are withheld" in verdict
    assert "a perfect draft that costs nothing would give" in verdict
    table = at.table[0].value
    assert list(table["τ"]) == [1, 2, 3] and all(x > 0 for x in table["mean acceptance length"])
    assert set(table["speedup (95% interval)"]) == {"–"} and all(x.endswith("×") for x in table["from kept costs"])
    traces = [t for i in range(4) for t in figure(at, i)["data"]]
    costed = next(t for t in traces if t.get("name") == "counted work × the kept costs")
    assert [f"{y:.2f}×" for y in costed["y"]] == list(table["from kept costs"])
    assert any(str(t.get("name", "")).startswith("ceiling: a perfect free draft") for t in traces)


# --- issue 53.1: across drafts for any target -------------------------------------------------------------------------


@pytest.fixture
def tiny_ggufs(tmp_path, monkeypatch):
    """Real tiny llama GGUFs that llama.cpp runs in milliseconds, in $SPECVIZ_MODELS_DIR: target.gguf (2 layers), its
    8-bit copy made by llama.cpp's quantizer (a smaller file), small.gguf (1 layer: fewer parameters) and other.gguf
    (token 300 spelled otherwise: another vocabulary). Pass times injected (the tests' default FakeTimer, tests.helpers
    .fake_ms): a target pass over k tokens 10 + 2(k − 1) ms, a draft forward 1 ms."""
    from specviz.models import llamacpp, quantize
    from tests.helpers import write_tiny_gguf

    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")
    folder = tmp_path / "models"
    folder.mkdir()
    files = {"target": write_tiny_gguf(folder / "target.gguf")}
    files["copy"] = quantize.quantized(files["target"], "Q8_0", folder)
    files["small"] = write_tiny_gguf(folder / "small.gguf", seed=1, layers=1)
    files["other"] = write_tiny_gguf(folder / "other.gguf", seed=2, layers=1, renamed=300)
    monkeypatch.setenv("SPECVIZ_MODELS_DIR", str(folder))
    monkeypatch.setenv("SPECVIZ_CACHE_DIR", str(tmp_path / "cache"))  # specviz's own cache: empty
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no other place holds a model
    for name in ("HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME", "OLLAMA_MODELS"):
        monkeypatch.delenv(name, raising=False)
    st.cache_data.clear()
    st.cache_resource.clear()
    yield {name: str(path) for name, path in files.items()}
    st.cache_resource.clear()  # the pairs held: closed
    st.cache_data.clear()


def test_across_drafts_for_a_gguf_target_recommends_a_draft_and_tau_with_the_llama_cpp_line(tiny_ggufs):
    """Issue 53.1: the Decode page's target, a GGUF file found on this computer, taken to the τ sweep with one button
    (Across drafts said "choose an embedded pair above" for a GGUF target). Its drafts: the
    one-layer model and the 8-bit copy (the files that pair with it, smaller) and prompt lookup; other.gguf listed
    with its own reason. One button runs all three on the 4 held-out prompts, τ = 1 to 3, 8 tokens each. The copy
    keeps every greedy token of its target there, so a step at τ makes τ + 1 tokens in τ · 1 + (10 + 2τ) ms against
    the target alone's 10 ms a token: τ = 1 20 / 13 = 1.54×, τ = 2 30 / 16 = 1.88×, τ = 3 40 / 19 = 2.11×, the same
    for every step (an interval of one point). The pair's timings: T(1) = 10 ms, c = 1 / 10 = 0.10, v(4) = 16 / 10 =
    1.60. llama-server's line runs that file at τ = 3."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for page in ("decode", "sweep"):  # Decode on the tiny target, the τ sweep on the one-layer file
        at.session_state[f"{page}_preset"] = settings.ON_THIS_COMPUTER
    at.session_state["decode_local_target"] = tiny_ggufs["target"]
    at.session_state["sweep_local_target"] = tiny_ggufs["small"]
    at.run()
    at.switch_page("pages/sweep.py").run()
    (use,) = [b for b in at.button if b.label.startswith("Use the Decode page's pair here")]
    assert use.label == "Use the Decode page's pair here (target target.gguf)"
    use.click().run()  # the Decode page's target, here
    assert at.selectbox(key="sweep_local_target").value == tiny_ggufs["target"]
    assert not [b for b in at.button if b.label.startswith("Use the Decode page's pair here")]
    at.slider(key="sweep_taus").set_value((1, 3))
    at.number_input(key="sweep_max_new").set_value(8).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    drafts = at.multiselect(key="sweep_drafts")
    assert drafts.options == ["small.gguf", "target.Q8_0.gguf", "prompt lookup"] and drafts.value == drafts.options
    (unfit,) = [m.value for m in at.markdown if "not fit this target" in m.value]
    assert "**other.gguf**: token 300: '▁t41' in the target, '▁x' in the draft" in unfit
    sidebar = [c.value for c in at.sidebar.caption]  # the sidebar says it too, file by file (no more "1 do not: …")
    assert "other.gguf: token 300: '▁t41' in the target, '▁x' in the draft" in sidebar
    at.button(key="sweep_drafts_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (said,) = [s.value for s in at.success if " at τ = " in s.value]
    assert said == (  # the copy kept its target's every greedy token: τ + 1 a step
        "target.Q8_0.gguf at τ = 3: 2.11× the target alone's speed here (α = 1.00, 4.00 tokens a step; c = 0.10, "
        "v(4) = 1.60)."
    )
    draft, tau = "target.Q8_0.gguf", 3
    table = at.table[0].value
    assert list(table["draft"]) == drafts.options and set(table["c"]) == {"0.10"}
    row = table[table["draft"] == draft].iloc[0]
    assert (row["best τ"], row["speedup (95% interval)"], row["v(τ + 1)"]) == ("3", "2.11×", "1.60")
    (server,) = [c.value for c in at.code if c.value.startswith("llama-server ")]
    assert server == (
        f"llama-server -m {tiny_ggufs['target']} --spec-type draft-simple --spec-draft-model {tiny_ggufs['copy']} "
        f"--spec-draft-n-max {tau} --spec-draft-n-min 0 --spec-draft-p-min 0.00"
    )
    (studio,) = [c.value for c in at.code if "maxTokensToDraft" in c.value]
    assert f'"llm.prediction.speculativeDecoding.maxTokensToDraft": {tau}' in studio
    (chart,) = [f for f in (json.loads(p.proto.spec) for p in at.get("plotly_chart")) if len(f["data"]) == 4]
    assert [t["name"] for t in chart["data"]] == [*drafts.options, "target alone (1×)"]
