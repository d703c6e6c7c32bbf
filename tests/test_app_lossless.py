"""The lossless page through Streamlit's AppTest: a verdict per mode on the example table, kept through a Stop.
Model loading is patched to a tiny random pair (the `loads` fixture)."""

from tests.app_helpers import app, figure


def test_lossless_page_verdicts_on_tables(loads):
    at = app()
    at.switch_page("pages/lossless.py").run()
    at.number_input(key="lossless_trials").set_value(2000)
    at.button(key="lossless_run").click().run(timeout=600)
    assert not at.exception
    good = [s.value for s in at.success]
    bad = [e.value for e in at.error]
    assert [v.split(":")[0] for v in good] == ["lossless", "lossless, one-hot", "lossless, block", "greedy"]
    lossy = ["typical acceptance (lossy)", "SGLang thresholds 0.5 (lossy)", "static ensemble w = 0.7 (lossy)"]
    assert [v.split(":")[0] for v in bad] == ["textbook", *lossy] and "differs from the target's distribution" in bad[0]
    assert all("not lossless" in v for v in bad)
    assert len(at.get("plotly_chart")) == 8
    specs = [figure(at, i) for i in range(5)]
    assert [spec["data"][0]["x"] for spec in specs] == [["a", "b", "c"]] * 4 + [["a"]]  # one order (greedy: argmax)
    assert "p-value < 0.0001" in specs[0]["layout"]["title"]["text"] and "p-value < 0.0001" in bad[0]  # one format
    assert at.button(key="lossless_run").label == "All modes finished"
    # a Stop between modes keeps the finished ones: drop one as a Stop would have left it, and go on
    (checks,) = at.session_state["lossless_results"].values()
    kept = {mode: checks[mode] for mode in ("textbook", "lossless")}
    del checks["greedy"]
    at.run()
    assert "Stopped with 1 of 8 modes left (greedy)" in at.warning[0].value and len(at.get("plotly_chart")) == 7
    at.button(key="lossless_run").click().run(timeout=600)
    (checks,) = at.session_state["lossless_results"].values()
    assert list(checks)[-1] == "greedy" and all(checks[m] is kept[m] for m in kept)  # not rerun
    assert not at.warning and len(at.get("plotly_chart")) == 8
    at.toggle(key="lossless_present").set_value(True).run()  # a projector: the verdicts in one row, large type
    assert [s.value for s in at.success][:4] == [
        f"{label}: consistent (p = {checks[label].p_value_text})"
        for label in ("lossless", "lossless, one-hot", "lossless, block", "greedy")
    ]
    assert figure(at, 0)["layout"]["font"]["size"] == 20
