"""The Decode page's pair through Streamlit's AppTest: the preset, a custom spec, the runtime chosen in the sidebar,
the GGUF files found on this computer and the draft box that follows the target, and a model that cannot load as
a message. Model loading is patched to a tiny random pair (the `loads` fixture) unless a test loads for real."""

import re

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import specviz
from specviz.analysis import outlook, race
from specviz.classroom import settings
from specviz.viz.plain import plain
from tests.app_helpers import ROOT, app, decoder, figure
from tests.helpers import tiny_text_pair


@pytest.mark.parametrize(
    "error",
    [
        specviz.VocabularyMismatchError("id 0 is 'v0' in the draft but 'w0' in the target"),
        specviz.HubUnreachableError("the Hugging Face hub is unreachable; choose the embedded pair"),
        specviz.ModelTooLargeError("about 7.00 B parameters, over the limit"),
    ],
)
def test_model_errors_are_messages_and_the_session_stays_usable(loads, monkeypatch, error):
    at = app()
    at.button(key="decode_step").click().run()

    def failing(target, draft, **_kwargs):
        raise error

    monkeypatch.setattr(specviz, "load_pair", failing)
    at.selectbox(key="decode_preset").set_value("Qwen2.5 0.5B → 1.5B").run()
    assert not at.exception
    assert str(error) in at.error[0].value
    at.button(key="decode_step").click().run()  # nothing to step with; no crash, old run kept
    assert not at.exception and len(decoder(at).steps) == 1
    monkeypatch.undo()
    monkeypatch.setattr(specviz, "load_pair", lambda t, d, **k: tiny_text_pair())
    at.selectbox(key="decode_preset").set_value("Embedded pair").run()
    at.button(key="decode_step").click().run()
    assert not at.exception and len(decoder(at).steps) == 2


def test_unknown_local_model_is_a_message(loads, monkeypatch):
    at = app()
    monkeypatch.setattr(specviz, "load_pair", specviz.loading.load_pair)  # real loading from here on
    at.selectbox(key="decode_preset").set_value(settings.CUSTOM).run()
    at.text_input(key="decode_target").set_value("/no/such/model").run()
    assert not at.exception
    assert any("no such folder: /no/such/model" in e.value for e in at.error)


@pytest.mark.parametrize("draft", ["early-exit:²", "early-exit:١"])
def test_an_early_exit_draft_written_without_the_digits_0_to_9_is_a_message(loads, monkeypatch, tmp_path, draft):
    """Issue 57.3: 'early-exit:²' was a ValueError on the page ('²'.isdigit() holds, int('²') fails), and 'early-exit:١'
    (Arabic-Indic one) loaded one layer."""
    from tests.helpers import save_tiny

    target = save_tiny(tmp_path / "tiny", seed=0)
    at = app()
    monkeypatch.setattr(specviz, "load_pair", specviz.loading.load_pair)  # real loading from here on
    at.selectbox(key="decode_preset").set_value(settings.CUSTOM).run()
    at.text_input(key="decode_target").set_value(target).run()
    at.text_input(key="decode_draft").set_value(draft).run()
    at.button(key="decode_step").click().run()
    assert not at.exception
    said = " ".join(e.value for e in at.error)
    assert plain(f"write the early-exit draft as early-exit:K with K ≥ 1 layers; got '{draft}'") in said, said


def test_the_runtime_is_chosen_in_the_sidebar_said_in_words_and_missing_ones_are_a_message(monkeypatch):
    """The sidebar says what runs the target and how to get the faster runtime; a pair loads on the
    chosen runtime (each runtime its own cached pair); asking for llama.cpp where it is not installed
    is a message on the page that says what to run, and the session stays usable. (AppTest keeps
    app.py's own sidebar only on a session's first run, so each choice opens a fresh session.)"""
    from specviz.models import llamacpp

    runtimes = []

    def fake_load_pair(target, draft, runtime="auto", **_kwargs):
        runtimes.append(runtime)
        return tiny_text_pair(chat=True)

    def opened(runtime: str) -> AppTest:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.session_state["runtime"] = runtime
        return at.run()

    monkeypatch.setattr(specviz, "load_pair", fake_load_pair)
    monkeypatch.delenv("SPECVIZ_RUNTIME", raising=False)
    st.cache_resource.clear()
    try:
        monkeypatch.setattr(llamacpp, "available", lambda: True)
        at = app()
        assert at.selectbox(key="runtime").value == "auto"
        assert runtimes == ["llama.cpp"]  # auto: the faster runtime where it is installed
        assert any("runs on **llama.cpp**" in c.value for c in at.sidebar.caption)
        at = opened("torch")
        assert runtimes == ["llama.cpp", "torch"]  # its own pair
        assert any("runs on **torch**" in c.value and "slower" in c.value for c in at.sidebar.caption)
        at.button(key="decode_step").click().run()
        assert not at.exception and len(decoder(at).steps) == 1

        monkeypatch.setattr(llamacpp, "available", lambda: False)
        at = opened("auto")
        assert any("make llama" in c.value for c in at.sidebar.caption)
        at = opened("llama.cpp")
        assert not at.exception
        assert any("make llama" in e.value for e in at.error)  # the page: could not load, and what to run
        assert any("make llama" in c.value for c in at.sidebar.caption)
        at.session_state["runtime"] = "torch"
        at.run()
        assert not at.exception and not at.error
    finally:
        st.cache_resource.clear()


@pytest.mark.slow
@pytest.mark.numeric  # no clock: on both cores in `make test`
def test_models_on_this_computer_lists_the_gguf_files_found_and_a_found_pair_steps(
    embedded_cache, tmp_path, monkeypatch
):
    """A folder named by $SPECVIZ_MODELS_DIR holding the embedded target's float32 file and two quantized copies (and
    a file that is not a model): the sidebar lists the three with quantization, parameters and size, offers the two
    smaller ones as drafts for the float32 target (besides self and prompt lookup), says what the pair needs, reports
    the unreadable file; Step runs the pair on llama.cpp with p and q labelled by each file's quantization."""
    from specviz.models import embedded, llamacpp, quantize

    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")
    folder = tmp_path / "models"
    folder.mkdir()
    for kind in ("Q8_0", "Q2_K"):
        (folder / f"smol.{kind}.gguf").symlink_to(quantize.embedded_quantized(kind))
    (folder / "smol.F32.gguf").symlink_to(embedded.ensure_f32_gguf())
    (folder / "notes.gguf").write_text("not a model")
    monkeypatch.setenv("SPECVIZ_MODELS_DIR", str(folder))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no other place holds a model
    for name in ("HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME", "OLLAMA_MODELS"):
        monkeypatch.delenv(name, raising=False)
    st.cache_resource.clear()
    st.cache_data.clear()
    at = app(panels_open=False)
    at.selectbox(key="decode_preset").set_value(settings.ON_THIS_COMPUTER).run()
    targets = at.selectbox(key="decode_local_target")
    ours = sorted(o for o in targets.options if o.endswith("$SPECVIZ_MODELS_DIR"))  # specviz's cache is listed too
    assert ours == [
        "F32 · 0.13 B · 539.8 MB · smol.F32.gguf · $SPECVIZ_MODELS_DIR",
        "Q2_K · 0.13 B · 88.2 MB · smol.Q2_K.gguf · $SPECVIZ_MODELS_DIR",
        "Q8_0 · 0.13 B · 144.8 MB · smol.Q8_0.gguf · $SPECVIZ_MODELS_DIR",
    ]
    targets.set_value(str(folder / "smol.F32.gguf")).run()
    drafts = at.selectbox(key="decode_local_draft")
    assert drafts.options[-3:] == [
        "the target itself (self)",
        "prompt lookup (no model)",
        "suffix decoding (no model)",
    ]
    assert [o for o in ours if not o.startswith("F32")] == sorted(o for o in drafts.options if o in ours)
    assert not any(o.startswith("F32") for o in drafts.options)  # not smaller than the target: no draft for it
    assert any("of the other" in c.value and "files fit this target as drafts" in c.value for c in at.sidebar.caption)
    assert any("The pair needs about" in c.value for c in at.sidebar.caption)
    drafts.set_value(str(folder / "smol.Q8_0.gguf")).run()
    at.button(key="decode_step").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    run = decoder(at)
    assert run.pair.runtime == "llama.cpp" and run.pair.draft.name == "SmolLM2-135M-Instruct (Q8_0)"
    assert len(run.steps) == 1
    names = {t["name"] for t in figure(at)["data"]}
    assert {"q (draft, Q8_0)", "p (target, F32)"} <= names, names
    # the same pair raced against its target alone (issue 43.5), on the Decode run's prompt and τ; its passes timed
    # by the tests' FakeTimer (tests.helpers.fake_ms; a busy machine would withhold real timings): a target pass over
    # k tokens 10 + 2(k − 1) ms, a draft forward 1 ms, so the draft costs c = 1 / 10 = 0.10 of a one-token pass
    at.switch_page("pages/race.py").run()
    at.selectbox(key="race_preset").set_value(race.YOURS).run()
    at.number_input(key="race_max_new").set_value(8).run()
    at.button(key="race_start").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    ((result, raced, _load),) = at.session_state["race_results"].values()
    assert raced.target is run.pair.target and raced.draft.name == run.pair.draft.name
    assert result.same_text and len(result.alone.tokens) == 8
    # the race timed the pair's passes (issue 52.4: one set of timings), and "Would it pay there?" reads the same
    # ones on this machine, nothing timed again: the target's sizes read from its header
    (raced_costs,) = [c.value for c in at.caption if c.value.startswith("**The pair's costs**")]
    at.switch_page("pages/pay.py").run()
    at.selectbox(key="pay_hardware").set_value(outlook.HERE).run()
    timed_on = f"Timed on {run.pair.target.name} drafted by {run.pair.draft.name}"
    assert any(c.value.startswith(timed_on) for c in at.caption)
    assert not [b for b in at.button if b.key == "pay_measure"]  # kept from the race: nothing to press
    assert not at.exception and not at.error, [e.value for e in at.error]
    (pay_costs,) = [c.value for c in at.caption if c.value.startswith("**The pair's costs**")]
    c_of = lambda text: re.search(r"a draft forward c = ([\d.]+)", text).group(1)  # noqa: E731
    assert c_of(raced_costs) == c_of(pay_costs)
    (calibration, c), *_ = at.session_state["pay_calibration"].values()
    assert f"{c.value:.2f}" == c_of(pay_costs)
    assert calibration.model.source == "the GGUF header of smol.F32.gguf" and calibration.model.layers == 30
    assert c.value == pytest.approx(0.10) and c_of(pay_costs) == "0.10"  # real timings: benchmarks/gguf_drafts.py
    summary = (at.success or at.warning)[0].value
    assert f"{run.pair.target.name} drafted by SmolLM2-135M-Instruct (Q8_0)" in summary, summary
    # the same pair carried to an H100, sized from its headers: the 540 MB target reads in 0.16 ms there
    at.selectbox(key="pay_hardware").set_value("NVIDIA H100 SXM").run()
    at.selectbox(key="pay_pair").set_value(outlook.YOUR_PAIR).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    from specviz.analysis.costmodel import HARDWARE
    from specviz.models.gguf import read_info

    names = (run.pair.target.name, run.pair.draft.name)
    files = (read_info(folder / "smol.F32.gguf"), read_info(folder / "smol.Q8_0.gguf"))
    target, draft = outlook.header_pair(*files, names)
    accept = outlook.Acceptance.from_rates(run.trace().metrics.per_position_acceptance_rate, "run")
    expected = outlook.outlook(target, draft, HARDWARE["NVIDIA H100 SXM"], accept, 1, 512)
    said = [e.value for e in [*at.success, *at.warning] if "At batch 1" in e.value]
    assert said == [expected.summary()] and names[1] in said[0]
    st.cache_resource.clear()


# --- issue 53: the found pair as chosen, kept from Decode to the Race --------------------------------------------


def shown_value(box, before: str) -> str:
    """What a browser shows in a select box after a rerun: the value the script sends (`set_value`), else the one it
    showed `before` (Streamlit's frontend keeps its own value unless the script sets one)."""
    return box.proto.raw_value if box.proto.set_value else before


def test_the_draft_box_follows_a_new_target_and_the_run_uses_the_draft_shown(loads, found_files, monkeypatch):
    """Issue 53: target big with draft mid; then target mid. The box showed mid.gguf (the target itself, not in its
    own list) while the run and the memory line used small.gguf."""
    from specviz.models import gguf, llamacpp

    monkeypatch.setattr(llamacpp, "available", lambda: True)  # the pair is loaded by `loads`: a tiny one
    at = app(panels_open=False)
    at.selectbox(key="decode_preset").set_value(settings.ON_THIS_COMPUTER).run()
    at.selectbox(key="decode_local_target").set_value(found_files["big"]).run()
    drafts = at.selectbox(key="decode_local_draft")
    assert drafts.value == found_files["mid"]  # the first that fits
    before = drafts.proto.raw_value or drafts.options[drafts.index]
    at.selectbox(key="decode_local_target").set_value(found_files["mid"]).run()
    assert not at.exception
    drafts = at.selectbox(key="decode_local_draft")
    shown = shown_value(drafts, before)
    assert shown in drafts.options and "mid.gguf" not in shown and "small.gguf" in shown
    assert drafts.value == found_files["small"]
    needed = gguf.memory_needed(gguf.read_info(found_files["mid"]), gguf.read_info(found_files["small"]))
    assert any(f"The pair needs about {gguf.format_bytes(needed)}" in c.value for c in at.sidebar.caption)
    at.button(key="decode_step").click().run()
    assert tuple(map(str, loads[-1])) == (found_files["mid"], found_files["small"])  # the run: the draft shown


# --- issue 56.2: the pair carried as parsed specs, from the sidebar to the store -----------------------------------


def test_a_found_pair_reaches_loading_as_the_files_it_listed_and_is_looked_for_no_more(loads, found_files, monkeypatch):
    """Issue 56.2: "Models on this computer" hands loading a spec of each file that keeps the FoundModel it listed
    (path and header): with every way of looking for a GGUF file or reading its header broken afterwards, the specs
    still give their files and headers. The run's settings hold the same specs, equal to the files written out."""
    from specviz import specs
    from specviz.loading import open_gguf
    from specviz.models import gguf, llamacpp

    monkeypatch.setattr(llamacpp, "available", lambda: True)  # the pair is loaded by `loads`: a tiny one
    at = app(panels_open=False)
    at.selectbox(key="decode_preset").set_value(settings.ON_THIS_COMPUTER).run()
    at.selectbox(key="decode_local_target").set_value(found_files["big"]).run()
    at.button(key="decode_step").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    target, draft = loads[-1]
    assert [str(t) for t, _ in loads] == ["embedded", found_files["big"]]  # the page's first pair, then this one
    for spec, name in ((target, "big"), (draft, "mid")):  # mid: the first draft that fits big
        assert isinstance(spec, specs.GGUFFile) and spec.found is not None
        assert str(spec) == found_files[name] and str(spec.found.path) == found_files[name]
        assert spec.found.info == gguf.read_info(found_files[name])  # the header discovery read
    assert at.session_state["decode_stepper"].settings[:2] == (target, draft)
    assert (target, draft) == (specs.parse(found_files["big"]), specs.parse(found_files["mid"]))  # by value

    def looked_for(*_args, **_kwargs):
        raise AssertionError("a found file was looked for or read again")

    for name in ("find_models", "resolve", "read_info"):
        monkeypatch.setattr(gguf, name, looked_for)
    opened = open_gguf(target)
    assert str(opened.path) == found_files["big"] and opened.info is target.found.info
    with pytest.raises(AssertionError, match="looked for or read again"):  # a text of the same file would be
        open_gguf(specs.parse(found_files["big"]))


def test_a_custom_draft_written_wrong_is_said_in_the_sidebar_and_the_earlier_run_is_kept(loads):
    """Issue 56.2: the sidebar parses the custom pair once; "early-exit:x" is a message there, not a traceback, nothing
    loads for it, and a Step keeps the run before it; written right, the pair loads."""
    at = app(panels_open=False)
    at.button(key="decode_step").click().run()
    assert len(decoder(at).steps) == 1 and len(loads) == 1
    at.selectbox(key="decode_preset").set_value(settings.CUSTOM).run()
    at.text_input(key="decode_target").set_value("some/model").run()
    before = len(loads)
    at.text_input(key="decode_draft").set_value("early-exit:x").run()
    assert not at.exception
    (said,) = [e.value for e in at.sidebar.error]
    assert said.startswith("**This pair cannot be read.**")
    assert plain("write the early-exit draft as early-exit:K with K ≥ 1 layers; got 'early-exit:x'.") in said, said
    assert len(loads) == before  # nothing loaded for the pair
    assert len([w for w in at.main.warning if w.value.startswith("**No pair to run.**")]) == 1  # beside Step too
    at.button(key="decode_step").click().run()
    assert not at.exception and len(decoder(at).steps) == 1  # the earlier run, kept
    assert [str(spec) for spec in at.session_state["decode_stepper"].settings[:2]] == ["embedded", "embedded"]
    at.text_input(key="decode_draft").set_value("early-exit:2").run()
    assert not at.exception and not at.sidebar.error
    assert not [w for w in at.main.warning if w.value.startswith("**No pair to run.**")]
    assert [str(spec) for spec in loads[-1]] == ["some/model", "early-exit:2"]


def test_a_typed_target_of_streamlit_directives_shows_as_its_own_text(loads, monkeypatch):
    """Issue 68.4: a Custom target typed as `:material/pets: :violet[VIO]` showed an icon and violet text (the word
    gone) in the message that it cannot load. Through the real loader (the hub switched off in tests), the message
    shows the name's own characters: no icon, no directive (the word joiner after each ":" that could open one)."""
    from specviz import loading

    hostile = ":material/pets: :violet[VIO] :blue-badge[B] :sunglasses:"
    monkeypatch.setattr(specviz, "load_pair", loading.load_pair)  # the real one: it refuses a hub id offline
    at = app(panels_open=False)
    at.selectbox(key="decode_preset").set_value(settings.CUSTOM).run()
    at.text_input(key="decode_target").set_value(hostile).run()
    at.button(key="decode_step").click().run()
    assert not at.exception
    bodies = [e.value for kind in ("markdown", "error", "warning", "info", "caption") for e in getattr(at, kind)]
    said = [b for b in bodies if "VIO" in b]
    assert said and all(":material/pets" not in b and ":violet" not in b and ":sunglasses" not in b for b in said)
    (error,) = [e.value for e in at.error if "VIO" in e.value]
    assert error.startswith("**Could not load the models.**")
    assert plain(hostile) in error  # markdown that reads back as the typed characters (tests/test_plain.py)
    assert ":\u2060material/pets: :\u2060violet\\[VIO\\] :\u2060blue-badge\\[B\\] :\u2060sunglasses:" in error
