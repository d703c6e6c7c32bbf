"""The Decode page's panels through Streamlit's AppTest: the reading of a trace (its bottleneck, measured on the
runtime that runs), the same step under each verification rule, the run as vLLM logs it, the timing tiles, and
the lazy panels built only while open. Model loading is patched to a tiny random pair (the `loads` fixture)."""

import json

import pytest
from streamlit.testing.v1 import AppTest

from specviz.analysis.diagnosis import UNMEASURED
from tests.app_helpers import LAZY_PANELS, ROOT, app, busy_machine, decoder


def test_the_trace_is_read_for_its_bottleneck_and_timed_on_the_runtime_that_runs(loads):
    from pages._decode.reading import CACHE

    at = app()
    at.button(key="decode_run_all").click().run()
    assert not at.exception
    run = decoder(at).trace()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["this run vs the target alone"] == "–"  # nothing measured yet: no number, never a stale one
    # issue 65.3: nor a verdict or an S from an assumed v = 1 (it said "S(τ = 4), v = 1: 2.45×", "τ = 6 predicts…")
    assert metrics[f"S(τ = {run.config.tau}), v = 1"] == "–"
    assert [m.value for m in at.markdown if m.value.startswith("**Bottleneck.**")] == [f"**Bottleneck.** {UNMEASURED}"]
    at.button(key="decode_measure").click().run()  # the run decoded again, each step beside the target alone
    assert not at.exception
    ((key, d),) = at.session_state[CACHE].items()
    assert key[0] == "torch, 1 thread" and key[3] == run.prompt_ids and key[5] == len(run.steps)
    shown = [m for m in at.metric if m.label in ("drafting", "verifying", "reading the prompt")]
    assert [m.value for m in shown] == [f"{v:.0%}" for v in d.shares().values()]
    assert any(md.value == f"**Bottleneck.** {d.bottleneck}" for md in at.markdown)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["this run vs the target alone"] == d.run_speedup.text()
    assert d.run_speedup.low <= d.run_speedup.value <= d.run_speedup.high
    assert metrics[f"S_v(τ = {run.config.tau}), measured v"] == d.predicted_speedup_v.text()
    assert any("timed on torch, 1 thread" in c.value for c in at.caption)
    # another runtime: the torch measurement is not shown for it (AppTest keeps app.py's sidebar widget only in the
    # first run, so the runtime is chosen before it, as the sidebar would)
    other = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    other.session_state["runtime"] = "torch-kernels"
    other.session_state["decode_reading_open"] = True
    other.session_state[CACHE] = dict(at.session_state[CACHE])  # the torch measurement at hand, same run
    other.run()
    other.button(key="decode_run_all").click().run()
    assert {m.label: m.value for m in other.metric}["this run vs the target alone"] == "–"
    other.button(key="decode_measure").click().run()
    assert sorted(k[0] for k in other.session_state[CACHE]) == ["torch, 1 thread", "torch-kernels, 1 thread"]
    assert any("timed on torch-kernels, 1 thread" in c.value for c in other.caption)
    assert not other.exception


def test_the_reading_costs_the_runs_counted_work_from_the_calibration_kept_on_disk(loads, monkeypatch):
    """Issue 63: the pair's calibration kept on disk before (as an earlier process leaves it) and every piece of work
    waiting for a core: the reading gives the run's speedup from its counted work at the kept costs (labelled) with
    no button pressed, and its ceiling; pressing "Time this run" cannot clock it, and says the counts stand."""
    import os

    from specviz.analysis import clock
    from specviz.analysis.counted import costed
    from specviz.analysis.pairtimes import TimingBook
    from tests.helpers import fake_ms, tiny_text_pair

    pair = tiny_text_pair(chat=True)
    ids = pair.codec.encode(" ".join(f"w{i}" for i in range(30)))
    kept = TimingBook(os.environ["SPECVIZ_TIMINGS_DIR"]).measure(pair, ids, timer=clock.FakeTimer(fake_ms))
    monkeypatch.setattr(clock, "_default", clock.FakeTimer(fake_ms, disturbed=lambda *_: True))
    at = app()
    at.session_state["decode_reading_open"] = True
    at.button(key="decode_run_all").click().run()
    assert not at.exception
    run = decoder(at).trace()
    metrics = {m.label: m.value for m in at.metric}
    speed = costed(run.steps, kept).spread()
    assert metrics["this run vs the target alone (counted × kept costs)"] == speed.text()
    assert metrics[f"S_v(τ = {run.config.tau}), kept v"] != "–"
    assert any(f"from {kept.label()}" in c.value for c in at.caption)
    (ceiling,) = [c.value for c in at.caption if c.value.startswith("**The ceiling.**")]
    assert f"would give {(run.config.tau + 1) / kept.v(run.config.tau + 1):.2f}× here" in ceiling
    at.button(key="decode_measure").click().run()
    assert not at.exception
    (said,) = [w.value for w in at.warning if w.value.startswith("**Could not clock this run.**")]
    assert "Its counts are read at the pair's kept costs below." in said
    assert {m.label: m.value for m in at.metric}["this run vs the target alone (counted × kept costs)"] == speed.text()


def test_the_same_step_under_each_rule_is_drawn_for_a_lossless_step(loads):
    """Lossless, one-hot rule: the panel shows the step's own draws r against each rule's thresholds, and the
    run's own rule keeps what the step kept."""
    at = app()
    at.radio(key="decode_mode").set_value("lossless").run()
    at.selectbox(key="decode_rule").set_value("one-hot")
    at.slider(key="decode_tau").set_value(4)
    at.button(key="decode_step").click().run()
    assert not at.exception
    step = decoder(at).steps[0]
    (panel,) = [e for e in at.expander if e.label.startswith("The same step under each rule")]
    (spec,) = [json.loads(c.proto.spec) for c in panel.get("plotly_chart")]
    bars = {t["name"].split(":")[0]: t for t in spec["data"] if t["type"] == "bar"}
    assert list(bars) == ["token-wise", "one-hot q", "block"]
    assert bars["one-hot q"]["name"] == f"one-hot q: keeps {step.n_accepted}"
    assert list(bars["one-hot q"]["y"]) == pytest.approx(step.p)  # one-hot compares r with p(ŷ)
    assert list(bars["token-wise"]["y"]) == pytest.approx([min(1.0, x) for x in step.ratio])
    (draws,) = [t for t in spec["data"] if t["type"] == "scatter"]
    assert list(draws["y"]) == list(step.r)
    words = panel.markdown[0].value
    assert "One-hot q (vLLM's default, SGLang, EAGLE)" in words and "Block verification" in words
    at.radio(key="decode_mode").set_value("textbook").run()  # another mode: a new run at the next Step
    at.button(key="decode_step").click().run()
    (panel,) = [e for e in at.expander if e.label.startswith("The same step under each rule")]
    assert not panel.get("plotly_chart") and "choose **lossless** mode" in panel.caption[0].value


def test_the_run_is_shown_as_vllm_logs_it(loads):
    at = app()
    for _ in range(3):
        at.button(key="decode_step").click().run()
    steps = decoder(at).steps
    (panel,) = [e for e in at.expander if e.label.startswith("This run as vLLM")]
    text = panel.code[0].value
    accepted, drafted = sum(s.n_accepted for s in steps), sum(s.tau for s in steps)
    assert f"Accepted: {accepted} tokens, Drafted: {drafted} tokens" in text
    assert f"Mean acceptance length: {1 + accepted / sum(s.tau > 0 for s in steps):.2f}" in text
    assert f"vllm:spec_decode_num_drafts_total {sum(s.tau > 0 for s in steps)}" in text
    panel.number_input(key="decode_log_every").set_value(1).run()
    (panel,) = [e for e in at.expander if e.label.startswith("This run as vLLM")]
    assert panel.code[0].value.count("SpecDecoding metrics:") == 3  # one log interval per step


def test_the_decode_pages_panels_build_nothing_while_closed_and_everything_once_opened(loads):
    """The reading, the rules and the engine logs are built only while their panel is open: a class server reruns
    the page for every Step of every student. Opened (a rerun, as a click on the panel makes), each shows its
    content."""
    at = app(panels_open=False)
    at.radio(key="decode_mode").set_value("lossless").run()
    at.button(key="decode_step").click().run()
    assert not at.exception
    labels = [e.label for e in at.expander]
    assert any(label.startswith("Reading this trace") for label in labels)
    assert any(label.startswith("The same step under each rule") for label in labels)
    assert any(label.startswith("This run as vLLM") for label in labels)
    assert not any(m.value.startswith("**Bottleneck.**") for m in at.markdown)  # the reading: not built
    assert "drafting" not in {m.label for m in at.metric}
    assert not any(c.value.startswith("# specviz run") for c in at.code)  # the engine logs: not built
    (rules,) = [e for e in at.expander if e.label.startswith("The same step under each rule")]
    assert not rules.get("plotly_chart") and not rules.markdown  # the rules: not built
    assert "decode_log_every" not in [w.key for w in at.number_input]
    for key in LAZY_PANELS:
        at.session_state[key] = True
    at.run()
    assert not at.exception
    assert any(m.value.startswith("**Bottleneck.**") for m in at.markdown)
    assert "drafting" in {m.label for m in at.metric}
    assert any(c.value.startswith("# specviz run") for c in at.code)
    assert "decode_log_every" in [w.key for w in at.number_input]
    (rules,) = [e for e in at.expander if e.label.startswith("The same step under each rule")]
    assert rules.get("plotly_chart") and "One-hot q (vLLM's default, SGLang, EAGLE)" in rules.markdown[0].value


def test_decodes_timing_tiles_say_one_step_then_their_spread_and_a_busy_server(loads, monkeypatch):
    """Issue 47: tokens/s read 28.9 after step 1 and 2.2 after step 2 with no word on either, and nothing on the page
    said the machine was busy. One step: its time, said to be one step's; two: the 95% interval over them."""
    busy_machine(monkeypatch)
    at = app(panels_open=False)
    at.button(key="decode_step").click().run()
    tiles = {m.label: m for m in at.metric}
    assert tiles["tokens/s"].proto.delta == "one step's time: not yet a rate"
    assert tiles["time: draft / verify"].proto.delta == "one step's time"
    (notice,) = [w.value for w in at.warning if "This server is busy" in w.value]
    assert notice.startswith("**This server is busy** (other processes keep 1.0 of its 2 cores busy)")
    busy_machine(monkeypatch, 0.2)
    at.button(key="decode_step").click().run()
    tiles = {m.label: m for m in at.metric}
    assert tiles["tokens/s"].proto.delta.endswith("over 2 steps (95%)")
    assert not tiles["time: draft / verify"].proto.delta
    assert not any("This server is busy" in w.value for w in at.warning) and not at.exception


def test_the_reading_says_it_could_not_measure_an_impossible_run(loads, monkeypatch):
    from pages._decode import reading as _reading
    from specviz.analysis.measure import MeasurementError

    def impossible(run, measured=None):
        if measured is None:
            return _reading.Diagnosis.from_dict(real(run).to_dict())
        raise MeasurementError("a target pass over 5 tokens would have cost 0.30 single-token passes")

    real = _reading.diagnose
    at = app()
    at.button(key="decode_run_all").click().run()
    at.button(key="decode_measure").click().run()  # timed once: a verdict from its costs
    assert not any(m.value == f"**Bottleneck.** {UNMEASURED}" for m in at.markdown)
    monkeypatch.setattr(_reading, "diagnose", impossible)
    at.button(key="decode_measure").click().run()  # timed again, and refused: the earlier verdict is not left standing
    assert not at.exception
    (said,) = [w.value for w in at.warning if w.value.startswith("**Could not clock this run.**")]
    assert said.startswith(
        "**Could not clock this run.** A target pass over 5 tokens would have cost 0.30 single-token passes. Time it "
        "again when the server is quieter. "
    )
    labels = {m.label for m in at.metric}  # issue 65.3: no stale verdict; the clocked one is gone, and the reading is
    assert "this run vs the target alone" not in labels  # the run's counted work at the pair's kept costs, labelled
    assert "this run vs the target alone (counted × kept costs)" in labels
    assert any("from the calibration kept" in c.value for c in at.caption)
