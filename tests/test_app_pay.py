"""The "Would it pay there?" page through Streamlit's AppTest: the H100 question with the Decode run's acceptance,
vLLM and llama.cpp logs read into τ per batch and the flags, and uploads capped. Model loading is patched to a tiny
random pair (the `loads` fixture)."""

import json

import pytest

from tests.app_helpers import ROOT, app, decoder


def test_would_it_pay_answers_the_h100_70b_question_and_carries_the_decode_runs_acceptance(loads):
    from specviz.analysis import outlook as ol
    from specviz.analysis.costmodel import HARDWARE, MODELS

    at = app()
    at.button(key="decode_step").click().run()
    run = decoder(at).trace()
    at.switch_page("pages/pay.py").run()
    assert not at.exception
    at.selectbox(key="pay_hardware").set_value("NVIDIA H100 SXM")
    at.selectbox(key="pay_pair").set_value("Llama-3.1-70B + Llama-3.2-1B").run()
    accept = ol.Acceptance.from_rates(run.metrics.per_position_acceptance_rate, "run")
    target, draft = (MODELS[n] for n in ol.PAIRS["Llama-3.1-70B + Llama-3.2-1B"])
    expected = ol.outlook(target, draft, HARDWARE["NVIDIA H100 SXM"], accept, 1, 512)
    said = [e.value for e in [*at.success, *at.warning] if "At batch 1" in e.value]
    assert said == [expected.summary()]  # batch 1 and batch 64, in one sentence (a warning: the tiny pair loses)
    assert "the Decode run (1 step," in at.caption[0].value
    batch = json.loads(at.get("plotly_chart")[1].proto.spec)["data"][0]
    assert batch["y"] == pytest.approx([s for _, s in expected.best_by_batch])
    at.radio(key="pay_source").set_value("α by hand").run()
    at.slider(key="pay_alpha").set_value(0.9).run()
    by_hand = ol.outlook(target, draft, HARDWARE["NVIDIA H100 SXM"], ol.Acceptance("α by hand", alpha=0.9), 1, 512)
    assert at.success[0].value == by_hand.summary()
    assert any("takes 2 of them" in w.value for w in at.warning)  # 142 GB on an 80 GB device
    tau, _ = by_hand.best  # the ceiling at the best τ from this hardware's own v(τ + 1)
    v = by_hand.verify[by_hand.taus.index(tau)]
    (ceiling,) = [c.value for c in at.caption if c.value.startswith("**The ceiling.**")]
    assert f"would give {(tau + 1) / v:.2f}× here ((τ + 1)/v(τ + 1) = {tau + 1}/{v:.2f})" in ceiling


def test_would_it_pay_reads_twenty_vllm_lines_and_gives_tau_per_batch_and_the_flags(loads):
    """An engineer pastes twenty log intervals of their vLLM server, picks an H100 and their pair, and reads the best
    τ at batch 1 and 64, where to turn it off and the flags: the numbers of specviz.analysis.engine_advice on the same
    text; a cut line is refused, named and escaped, with nothing imported."""
    from specviz.analysis import engine_advice as ea
    from specviz.analysis import engine_import as ei
    from specviz.analysis.costmodel import HARDWARE, MODELS
    from specviz.analysis.engine_logs import EngineCounts, vllm_line

    lines = []
    for i in range(20):  # 40–59 drafts an interval, positions kept by 80%, 60% and 45% of them
        n = 40 + i
        per_pos = (round(0.8 * n), round(0.6 * n), round(0.45 * n))
        line = vllm_line(EngineCounts(n, 3 * n, sum(per_pos), per_pos, 10.0, n))
        lines.append(f"(APIServer pid=1) INFO 06-01 10:{i:02d}:00 [metrics.py:101] {line}")
    at = app(panels_open=False)
    at.switch_page("pages/pay.py").run()
    at.selectbox(key="pay_hardware").set_value("NVIDIA H100 SXM")
    at.selectbox(key="pay_pair").set_value("Llama-3.1-8B + EAGLE-3 head")
    at.text_area(key="pay_import_text").set_value("\n".join(lines)).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    accept = ea.from_import(ei.parse("\n".join(lines)))
    target, draft = MODELS["Llama-3.1-8B"], MODELS["EAGLE-3 head for Llama-3.1-8B"]
    expected = ea.advise(accept, HARDWARE["NVIDIA H100 SXM"], target, draft)
    shown = {m.label: m.value for m in at.metric}
    one, busy = expected.at(1), expected.at(64)
    assert shown["τ it ran at"] == "3" and "pay_import_tau" not in [w.key for w in at.number_input]  # as read
    assert shown["best τ, batch 1"] == str(one.tau) and shown["speedup, batch 1"] == f"{one.speedup:.2f}×"
    assert shown["best τ, batch 64"] == str(busy.tau) and shown["speedup, batch 64"] == f"{busy.speedup:.2f}×"
    assert shown["off from batch"] == str(expected.break_even or "–")
    wanted = [f.text for f in ea.flags(expected, 1, "eagle3", "")]
    flags = [c.value for c in at.code][: len(wanted)]  # then the page's share link
    assert flags == wanted
    config = json.loads(flags[0].split("'")[1])
    assert config["num_speculative_tokens_per_batch_size"] == ea.vllm_schedule(expected)
    assert f" --speculative-num-steps {one.tau} " in flags[1]
    assert flags[2].startswith("llama-server -m target.gguf --spec-type draft-eagle3 --spec-draft-model ")
    at.text_input(key="pay_import_model").set_value("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B").run()
    assert '"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"' in at.code[0].value
    at.radio(key="pay_import_hw").set_value(ea.HARDWARE_CHOICES[1]).run()  # their own timings: T(1), T(64)
    at.number_input(key="pay_import_k").set_value(64)
    at.number_input(key="pay_import_tk").set_value(9.0).run()
    typed, _ = ea.typed_hardware(HARDWARE["NVIDIA H100 SXM"], target, 6.32, 9.0, 64)
    busy = ea.advise(accept, typed, target, draft).at(64)
    assert {m.label: m.value for m in at.metric}["speedup, batch 64"] == f"{busy.speedup:.2f}×"
    assert any(c.value.startswith("Fitted to your T(1) = 6.32 ms and T(64) = 9 ms") for c in at.caption)
    cut = lines[3][: lines[3].index("Per-position")] + "<b>x</b> [y](http://z)"
    at.text_area(key="pay_import_text").set_value("\n".join([*lines[:3], cut])).run()
    assert not at.exception and "best τ, batch 1" not in {m.label for m in at.metric}
    assert not any(c.value.startswith("--speculative") for c in at.code)
    (error,) = [e.value for e in at.error]
    assert error.startswith("**Cannot read it.** Line 4:") and "Nothing was imported" in error
    assert "\\<b\\>x" in error and "\\[y\\]" in error  # the quoted line as text: no markup, no link
    sglang = (ROOT / "tests" / "fixtures" / "engine_logs" / "sglang_log.txt").read_text()
    at.text_area(key="pay_import_text").set_value(sglang).run()  # 4 tokens verified: a chain of 3, or a tree
    assert not at.exception and not at.error and {m.label: m.value for m in at.metric}["τ it ran at"] == "3"
    at.toggle(key="pay_import_tree").set_value(True).run()
    assert at.number_input(key="pay_import_tau").label == "its --speculative-num-steps" and not at.exception


def test_would_it_pay_lists_each_implementation_of_a_llama_cpp_log_and_spells_flags_for_its_build(loads):
    """A llama.cpp log of `--spec-type draft-dflash,ngram-mod` (two statistics lines) printed by build 8900: both
    implementations are offered, the exact one with more steps first (draft-dflash, 511 steps, 1 + 974 / 511 = 2.906);
    picking ngram-mod reads its 31 steps (1 + 527 / 31 = 18.0, its rates printed for 2 positions only, so its τ is
    asked, and 18 tokens a step is past what the model goes to). The llama.cpp line is spelled for the log's build
    (--draft-max, before b8955) and for a build typed in."""
    from specviz.analysis import engine_import as ei

    fixtures = ROOT / "tests" / "fixtures" / "engine_logs"
    log = "".join(x for x in (fixtures / "llamacpp_two_impls.txt").read_text().splitlines(True) if x[:3] != "#> ")
    at = app(panels_open=False)
    at.switch_page("pages/pay.py").run()
    at.selectbox(key="pay_hardware").set_value("NVIDIA H100 SXM")
    at.text_area(key="pay_import_text").set_value("build: 8900 (14e733e36) with cc for x86_64\n" + log).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    picker = at.selectbox(key="pay_import_source")
    assert len(picker.options) == len(ei.read(log).sources) == 2
    assert "draft-dflash" in picker.options[0] and "ngram-mod" in picker.options[1]
    assert {m.label: m.value for m in at.metric}["τ it ran at"] == "4"  # 4 rates over drafts of 2041 / 511 tokens
    llama = next(c.value for c in at.code if c.value.startswith("llama-server"))
    assert " -md draft.gguf --draft-max " in llama and "--spec-" not in llama  # build 8900: the older spelling
    at.number_input(key="pay_import_build").set_value(10_000).run()
    llama = next(c.value for c in at.code if c.value.startswith("llama-server"))
    assert "--spec-type draft-eagle3 --spec-draft-model draft.gguf --spec-draft-n-max " in llama
    picker.set_value(1).run()
    assert not at.exception and "pay_import_tau" in [w.key for w in at.number_input]  # drafts longer than its 2 rates
    (error,) = [e.value for e in at.error]  # 18 tokens a step need 17 drafted: more than τ = 4, or than 16
    assert error.startswith("**Cannot advise.**") and "needs at least 17 draft tokens per step" in error


def test_every_upload_is_capped_and_an_oversized_engine_log_is_refused_with_a_message(loads):
    """Issue 57.4: "Would it pay there?" took four 150 MB files. The server refuses any upload past the app's largest
    cap (Streamlit's own default: 200 MB), every uploader says its cap, and a log past the 1,000,000 bytes read is
    a message, nothing imported."""
    from streamlit import config

    from pages._common import widgets as _shared

    at = app(panels_open=False)
    assert config.get_option("server.maxUploadSize") == _shared.upload_mb() <= 50
    assert at.file_uploader(key="decode_upload").proto.max_upload_size_mb == _shared.upload_mb()
    at.switch_page("pages/pay.py").run()
    upload = at.file_uploader(key="pay_import_upload")
    assert upload.proto.max_upload_size_mb == 1
    upload.set_value(("vllm.log", b"x" * 1_000_001, "text/plain")).run()
    assert not at.exception
    assert any("Cannot read the file." in e.value and "1,000,001 bytes" in e.value for e in at.error)
    assert not any(m.value.startswith("Best τ") for m in at.success)
