"""The Decode page through Streamlit's AppTest: stepping, running to the end, going back, the settings a run keeps,
what it draws, a trace saved and replayed, and what a failed start or step leaves on screen. Model loading is
patched to a tiny random pair (the `loads` fixture)."""

import json

import pytest
import streamlit as st

import specviz
from specviz.viz.plain import plain
from tests.app_helpers import app, base_pair_with_template, decoder, figure, history_bars, step_table


def test_first_page_opens_ready_to_step_with_the_embedded_pair(loads):
    at = app()
    assert not at.exception
    assert [tuple(map(str, pair)) for pair in loads] == [("embedded", "embedded")]  # loaded up front, once
    assert at.text_area(key="decode_prompt").value == "Write a Python function that reverses a list."
    assert at.toggle(key="decode_chat").value and at.slider(key="decode_tau").value == 4
    assert [
        b.label for b in at.button if b.key in ("decode_step", "decode_run_all", "decode_back", "decode_reset")
    ] == [
        "Step",
        "Run to end",
        "Back",
        "Reset",
    ]
    assert at.button(key="decode_typed_step").disabled  # "Your draft": nothing typed yet
    assert "Press **Step**" in at.info[0].value
    expect = figure(at, 0)  # what a step can yield, drawn before the first Step (and the chart code loaded)
    assert [t["name"] for t in expect["data"]] == ["α = 0.5", "α = 0.7", "α = 0.9"]
    assert expect["data"][2]["y"][3] == pytest.approx((1 - 0.9**5) / 0.1)  # τ = 4: 4.0951 tokens per pass
    at.button(key="decode_step").click().run()
    assert "Step 1:" in figure(at, 0)["layout"]["title"]["text"]  # the step's chart replaces it


def test_variants_are_chosen_in_the_sidebar_and_labelled_on_the_page(loads):
    at = app()
    assert not any("Broken draft" in w.value for w in at.warning)
    at.selectbox(key="decode_policy").set_value("heuristic")
    at.toggle(key="decode_broken").set_value(True)
    at.slider(key="decode_tau").set_value(2)
    at.button(key="decode_step").click().run()
    assert not at.exception
    assert any(w.value.startswith("**Broken draft, on purpose.**") for w in at.warning)
    dec = decoder(at)
    assert dec.config.tau_policy == "heuristic" and dec.config.broken_draft
    step = dec.steps[0]
    assert len(set(step.q)) == 1  # the prefix alone: the same q at both positions (the same token: greedy q)
    at.button(key="decode_step").click().run()
    assert dec.steps[1].tau == (4 if step.n_accepted == 2 else 1)  # the heuristic schedule


def test_step_shows_the_trace_and_its_chart(loads):
    at = app()
    at.slider(key="decode_tau").set_value(3)
    at.radio(key="decode_mode").set_value("lossless")
    at.number_input(key="decode_seed").set_value(5)
    at.button(key="decode_step").click().run()
    assert not at.exception
    dec = decoder(at)
    assert len(dec.steps) == 1 and dec.config.tau == 3 and dec.config.mode == "lossless" and dec.config.seed == 5
    step = dec.steps[0]
    spec = figure(at, 0)
    assert spec["data"][0]["y"] == list(step.q) and spec["data"][1]["y"] == list(step.p)
    assert spec["data"][3]["y"] == list(step.r)
    assert f"Step 1: {step.n_accepted} of 3" in spec["layout"]["title"]["text"]
    table = step_table(at)
    assert list(table["q"]) == pytest.approx(step.q, abs=5e-5) and list(table["decision"]) == list(step.decision)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["target forward passes"] == "1"
    assert metrics["mean acceptance length"] == f"{1 + step.n_accepted:.2f}"
    assert [tuple(map(str, pair)) for pair in loads] == [("embedded", "embedded")]  # no second load
    assert dec.chat  # chat template on for an Instruct model


def test_position_selector_shows_that_positions_top_ten(loads):
    at = app()
    at.button(key="decode_step").click().run()
    at.segmented_control(key="decode_position").set_value(3).run()
    step = decoder(at).steps[0]
    spec = figure(at, 1)
    assert spec["data"][0]["x"] == [e.prob for e in reversed(step.q_top[2])]
    assert "position 3" in spec["layout"]["annotations"][0]["text"]


def test_run_to_end_back_and_reset(loads):
    at = app()
    at.number_input(key="decode_max_new").set_value(12)
    at.button(key="decode_run_all").click().run()
    dec = decoder(at)
    assert dec.done and len(dec.new_tokens) == 12
    n_steps = len(dec.steps)
    history = figure(at, 3)  # after the step, top-10 and next-token charts
    assert history_bars(history) == [s.n_accepted for s in dec.steps]
    at.button(key="decode_back").click().run()
    assert len(decoder(at).steps) == n_steps - 1 and not decoder(at).done
    at.button(key="decode_step").click().run()
    assert len(decoder(at).steps) == n_steps
    at.button(key="decode_step").click().run()  # finished: says so, keeps the run
    assert "has finished" in at.info[0].value and len(decoder(at).steps) == n_steps
    at.button(key="decode_reset").click().run()
    assert decoder(at).steps == ()


def test_changed_settings_keep_the_run_until_the_next_step(loads):
    at = app()
    at.button(key="decode_step").click().run()
    at.slider(key="decode_tau").set_value(2).run()
    assert "Settings changed" in at.warning[0].value
    assert len(decoder(at).steps) == 1 and decoder(at).config.tau == 4
    at.button(key="decode_step").click().run()
    assert decoder(at).config.tau == 2 and len(decoder(at).steps) == 1
    assert not at.warning


def test_empty_prompt_is_a_message_and_the_run_is_kept(loads):
    at = app()
    at.button(key="decode_step").click().run()
    at.text_area(key="decode_prompt").set_value("   ").run()
    at.button(key="decode_step").click().run()
    assert not at.exception
    assert "prompt is empty: type some text to continue. The run below is kept." in at.error[0].value  # two sentences
    assert len(decoder(at).steps) == 1  # the earlier run survives


def test_over_long_prompt_is_a_message(loads):
    at = app()
    at.text_area(key="decode_prompt").set_value("word " * 600).run()  # the tiny target reads 512
    at.button(key="decode_step").click().run()
    assert not at.exception
    assert "shorten it" in at.error[0].value


def test_export_then_replay_without_any_model(loads):
    at = app()
    at.number_input(key="decode_max_new").set_value(10)
    at.button(key="decode_run_all").click().run()
    saved = decoder(at).trace()
    assert [b.label for b in at.get("download_button")] == ["Download as a log", "Trace as JSON", "Steps as CSV"]

    fresh = app()
    calls_before = len(loads)
    fresh.file_uploader(key="decode_upload").set_value(("run.json", saved.to_json().encode(), "application/json"))
    fresh.run()
    assert not fresh.exception and len(loads) == calls_before  # nothing loaded for a replay
    fresh.button(key="decode_step").click().run()
    fresh.button(key="decode_step").click().run()
    replay = fresh.session_state["decode_replay"]
    assert replay.steps == saved.steps[:2]
    assert "Replaying a saved trace: step 2 of" in fresh.info[0].value
    assert figure(fresh, 0)["data"][0]["y"] == list(saved.steps[1].q)
    fresh.button(key="decode_back").click().run()
    assert replay.steps == saved.steps[:1]
    fresh.button(key="decode_run_all").click().run()
    assert replay.trace() == saved  # the replay is identical to the run that was saved


def test_a_file_that_is_not_a_trace_is_a_message(loads):
    at = app()
    at.file_uploader(key="decode_upload").set_value(("notes.json", b'{"hello": 1}', "application/json"))
    at.run()
    assert not at.exception
    assert "not a specviz trace" in at.error[0].value


def test_presentation_view_hides_the_sidebar_and_enlarges_type(loads):
    at = app()
    assert not any("stSidebar" in h.proto.body for h in at.get("html"))
    at.toggle(key="decode_present").set_value(True).run()
    css = [h.proto.body for h in at.get("html") if "stSidebar" in h.proto.body]
    assert css and "display: none" in css[0] and "font-size" in css[0]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["steps"][0]["q"].__setitem__(0, "oops"), "q = 'oops' is not a probability in [0, 1]"),
        (lambda d: d["steps"][0].__setitem__("n_accepted", 99), "n_accepted = 99 is not between 0 and τ = 4"),
        # issue 57.3: an OverflowError and a TypeError on the page before
        (
            lambda d: d["steps"][0]["q"].__setitem__(0, 10**400),
            "this file cannot be read: it holds a whole number of 401 digits",
        ),
        (lambda d: d["steps"][0].__setitem__("residual_top", 0), "step 1: residual_top is neither null nor a list"),
    ],
)
def test_a_corrupt_trace_is_one_message_and_the_live_run_stays(loads, edit, message):
    at = app()
    at.button(key="decode_step").click().run()
    live = decoder(at)
    data = json.loads(live.trace().to_json())
    edit(data)
    at.file_uploader(key="decode_upload").set_value(("run.json", json.dumps(data).encode(), "application/json"))
    at.run()
    assert not at.exception
    assert len(at.main.error) == 1 and plain(message) in at.main.error[0].value  # the file's words, as text
    assert not at.sidebar.error  # one message per rejected file, at the top of the page
    assert decoder(at) is live and len(live.steps) == 1  # the live run is kept, and still shown
    assert figure(at, 0)["data"][0]["y"] == list(live.steps[0].q)
    assert not at.slider(key="decode_tau").disabled  # live settings stay in use


def test_while_a_trace_replays_the_banner_names_its_settings_and_live_ones_are_off(loads):
    at = app()
    at.slider(key="decode_tau").set_value(3)
    at.radio(key="decode_mode").set_value("lossless")
    at.button(key="decode_run_all").click().run()
    saved = decoder(at).trace()
    fresh = app()
    fresh.file_uploader(key="decode_upload").set_value(("run.json", saved.to_json().encode(), "application/json"))
    fresh.run()
    fresh.button(key="decode_step").click().run()
    banner = fresh.info[0].value
    assert "step 1 of" in banner and "tiny-target" in banner and "lossless mode, τ = 3" in banner
    assert fresh.slider(key="decode_tau").value == 4  # the live setting is not the trace's...
    assert fresh.slider(key="decode_tau").disabled and fresh.radio(key="decode_mode").disabled  # ...and is off
    assert "not in use" in fresh.sidebar.warning[0].value


def test_a_failed_start_keeps_the_run_on_screen(loads):
    at = app()
    at.button(key="decode_step").click().run()
    shown = decoder(at).steps[0]
    at.text_area(key="decode_prompt").set_value("").run()
    at.button(key="decode_step").click().run()
    assert "prompt is empty" in at.error[0].value and "The run below is kept" in at.error[0].value
    assert figure(at, 0)["data"][0]["y"] == list(shown.q)  # the chart of the old run is still drawn
    assert len(decoder(at).steps) == 1  # and nothing was stepped


def test_a_long_prompt_is_drawn_with_its_middle_cut(loads):
    at = app()
    at.text_area(key="decode_prompt").set_value(" ".join(f"w{i % 90}" for i in range(400))).run()
    at.button(key="decode_step").click().run()
    html = next(h.proto.body for h in at.get("html") if "sv-text" in h.proto.body)
    assert "characters not shown" in html and len(html) < 6000


def test_after_run_to_end_the_last_step_with_a_draft_stays_and_any_step_can_be_picked(loads):
    at = app()
    for max_new in range(4, 24):  # a run whose last step had one token of budget left: no room to draft
        at.number_input(key="decode_max_new").set_value(max_new)
        at.button(key="decode_reset").click().run()
        at.button(key="decode_run_all").click().run()
        steps = decoder(at).steps
        if steps[-1].tau == 0:
            break
    assert steps[-1].tau == 0
    drafted = max(s.index for s in steps if s.tau > 0)
    assert figure(at, 0)["layout"]["title"]["text"].startswith(f"Step {drafted + 1}:")  # a chart, not a blank
    assert f"Showing step {drafted + 1}, the last with one" in " ".join(c.value for c in at.caption)
    picker = at.select_slider(key=f"decode_show_{len(steps)}")
    assert picker.value == drafted + 1
    picker.set_value(1).run()
    assert figure(at, 0)["data"][0]["y"] == list(steps[0].q)  # step 1's q against p
    html = next(h.proto.body for h in at.get("html") if "sv-text" in h.proto.body)
    assert html.count('class="sv-tgt"') == 1 and 'class="sv-tgt-old"' not in html  # the text stops at step 1
    # the metrics follow the step shown: step 1 alone (1 + n accepted), the history marks step 1
    assert f"steps 1–1 of {len(steps)}" in at.subheader[0].value
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["mean acceptance length"] == f"{1 + steps[0].n_accepted:.2f}"
    assert metrics["target forward passes"] == "1"
    history = figure(at, 3)
    assert history_bars(history) == [s.n_accepted for s in steps]  # the whole run, with step 1 marked
    assert any(t["name"] == "step shown (1)" for t in history["data"])
    assert "the whole run" in at.expander[-1].label or any("whole run" in e.label for e in at.expander)
    at.button(key="decode_reset").click().run()
    at.button(key="decode_step").click().run()
    assert not at.select_slider  # one step: nothing to pick


def test_a_remote_targets_alpha_is_marked_approximate(loads):
    at = app()
    at.number_input(key="decode_max_new").set_value(6)
    at.button(key="decode_run_all").click().run()
    saved = decoder(at).trace()
    labels = [m.label for m in at.metric]
    assert "α" in labels and "α ≈ (top-k)" not in labels
    remote_run = {**saved.to_dict(), "target_top_k": 20}  # as a run through a serving engine saves it
    fresh = app()
    fresh.file_uploader(key="decode_upload").set_value(
        ("run.json", json.dumps(remote_run).encode(), "application/json")
    )
    fresh.run()
    fresh.button(key="decode_run_all").click().run()
    assert not fresh.exception
    tile = next(m for m in fresh.metric if m.label.startswith("α"))
    assert tile.label == "α ≈ (top-k)" and "top-20" in tile.help
    assert any("approximate (top-20)" in c.value for c in fresh.caption)


def test_a_step_that_fails_is_a_message_and_the_run_is_kept(loads, monkeypatch):
    from specviz.models.remote import RemoteTimeoutError

    at = app()
    at.button(key="decode_step").click().run()
    assert len(decoder(at).steps) == 1

    def down(self):
        raise RemoteTimeoutError("http://gpu:8000/v1/completions did not answer within 30 s")

    monkeypatch.setattr(specviz.Decoder, "step", down)
    at.button(key="decode_step").click().run()
    assert not at.exception
    assert "The step failed." in at.error[0].value and "within 30 s" in at.error[0].value
    assert len(decoder(at).steps) == 1 and at.get("plotly_chart")  # the run and its charts are still there


def test_the_tree_variant_draws_the_tree_and_its_steps(loads):
    at = app()
    at.toggle(key="decode_tree").set_value(True).run()
    at.number_input(key="decode_tree_topk").set_value(2)
    at.number_input(key="decode_tree_steps").set_value(3)
    at.number_input(key="decode_tree_nodes").set_value(6)
    at.button(key="decode_step").click().run()
    assert not at.exception
    dec = decoder(at)
    assert (dec.config.topk, dec.config.steps, dec.config.num_draft_tokens) == (2, 3, 6)
    step = dec.steps[0]
    tree = figure(at, 0)
    drawn = [t for t in tree["data"] if t.get("name") in ("accepted", "rejected", "not tested")]
    assert sum(len(t["x"]) for t in drawn) == len(step.tree.nodes) == 6
    assert "6 nodes verified in one pass" in tree["layout"]["title"]["text"]
    assert f"Step 1: {step.n_accepted} of {step.tau}" in figure(at, 1)["layout"]["title"]["text"]  # the main line
    at.button(key="decode_step").click().run()
    runs = [figure(at, i) for i in range(len(at.get("plotly_chart")))]
    per_step = next(f for f in runs if any(t.get("name") == "nodes verified" for t in f["data"]))
    assert next(t for t in per_step["data"] if t["name"] == "nodes verified")["y"] == [s.nodes for s in dec.steps]
    # a tree that cannot exist is a message, and the run stays
    at.number_input(key="decode_tree_nodes").set_value(64).run()
    assert not at.exception
    assert any("do not make a run" in e.value and "num_draft_tokens" in e.value for e in at.error)


def test_a_step_exports_as_one_16_9_picture_at_1920_by_1080(loads):
    from specviz.viz import slide

    at = app(panels_open=False)
    at.button(key="decode_step").click().run()
    at.session_state["decode_slide_open"] = True
    at.run()
    assert not at.exception
    (chart,) = [c for c in at.get("plotly_chart") if "toImageButtonOptions" in c.proto.config]
    options = json.loads(chart.proto.config)["toImageButtonOptions"]
    spec = json.loads(chart.proto.spec)["layout"]
    assert (spec["width"], spec["height"]) == (960, 540) and spec["width"] * 9 == spec["height"] * 16
    assert (options["width"] * options["scale"], options["height"] * options["scale"]) == (1920, 1080)
    assert options["format"] == "png" and options["filename"] == "specviz-step-1"
    step = decoder(at).steps[0]
    text = next(a["text"] for a in spec["annotations"] if "Mono" in a["font"].get("family", ""))
    first = slide._escape(slide._visible(step.draft_text[0]))
    assert f"<b>{first}</b>" in text or f"<s>{first}</s>" in text  # the draft, marked
    lines = slide.marked_lines("x " * 100, step)  # a long context: cut to its end, lines of at most 78 characters
    assert lines[0].startswith("<span style='color:#555555'>…") and len(lines) >= 2


def test_the_chat_toggle_on_wraps_the_prompt_whatever_the_models_name(monkeypatch):
    """Issue 53: the toggle read on while a file named "Smollm2 135M 8k Lc100K Mix1 Ep2" ran the raw text (Decode passed
    chat=None, the model's default, which came from its name)."""
    monkeypatch.setattr(specviz, "load_pair", base_pair_with_template)
    st.cache_resource.clear()
    at = app(panels_open=False)
    assert at.toggle(key="decode_chat").value
    at.button(key="decode_step").click().run()
    dec = decoder(at)
    assert dec.pair.codec.chat_default is False and dec.chat is True
    assert dec.prompt_text == dec.pair.codec.encode_chat("Write a Python function that reverses a list.")[0]
    at.toggle(key="decode_chat").set_value(False).run()
    at.button(key="decode_step").click().run()
    assert decoder(at).chat is False and decoder(at).prompt_text == "Write a Python function that reverses a list."
    st.cache_resource.clear()


def test_presentation_view_changes_tau_and_keeps_its_toggles(loads):
    """Issue 65.5: presentation view had no τ control, and leaving it to change τ turned "q, p, r under tokens" off.
    Its row now has τ: changed there, the next Step drafts that many, with the sidebar's τ the same and every toggle
    kept; leaving presentation view and coming back keeps them too."""
    at = app()
    at.toggle(key="decode_present").set_value(True).run()
    at.toggle(key="decode_figures").set_value(True).run()
    at.button(key="decode_step").click().run()
    at.number_input(key="decode_tau_present").set_value(6).run()
    assert not at.exception
    assert at.session_state["decode_tau"] == 6 and at.slider(key="decode_tau").value == 6
    assert at.toggle(key="decode_present").value and at.toggle(key="decode_figures").value
    at.button(key="decode_step").click().run()  # settings changed: a new run at τ = 6
    assert decoder(at).steps[-1].tau == 6
    assert any('class="sv-num"' in h.proto.body for h in at.get("html"))  # q, p, r still under the tokens
    at.toggle(key="decode_present").set_value(False).run()  # out, τ changed in the sidebar, and back
    at.slider(key="decode_tau").set_value(3).run()
    at.toggle(key="decode_present").set_value(True).run()
    assert at.toggle(key="decode_figures").value and at.number_input(key="decode_tau_present").value == 3
