""" "Would it pay there?" with the pastes of issue 64: a fork's llama-server log spelled from its own command line, the
draft's sampling mapped to a rule in every engine's flags, the engines' verification options listed with the lossy
ones marked, SGLang's meta_info as Python prints it, and a vLLM log with drafts but no acceptance said as that."""

import json
import pprint

from tests.app_helpers import ROOT, app

FIXTURES = ROOT / "tests" / "fixtures" / "engine_logs"


def text_of(name: str) -> str:
    return "".join(x for x in (FIXTURES / name).read_text().splitlines(True) if x[:3] != "#> ")


def open_pay(paste: str):
    at = app(panels_open=False)
    at.switch_page("pages/pay.py").run()
    at.selectbox(key="pay_hardware").set_value("NVIDIA H100 SXM")
    at.text_area(key="pay_import_text").set_value(paste).run()
    return at


def test_a_forks_log_gets_its_own_spelling_and_the_sampling_its_rule(loads):
    """The fork's log (build_info b484, its command line '--spec-type mtp --spec-draft-n-max 2'): the llama-server
    line uses --spec-type mtp and --spec-draft-*, never --draft-max, and says why. Then with a typed upstream build
    past b11368, draft_model and probabilistic sampling: --spec-draft-sampling probabilistic, vLLM's
    draft_sample_method, and SGLang's line says it verifies one-hot. The options table lists the eight options,
    three of them lossy."""
    at = open_pay(text_of("llamacpp_fork_mtp.txt"))
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.selectbox(key="pay_import_method").set_value("mtp").run()
    llama = next(c.value for c in at.code if c.value.startswith("llama-server"))
    assert "--spec-type mtp " in llama and "--spec-draft-n-max" in llama and "--draft-max" not in llama
    assert any("fork's build number" in m.value for m in at.markdown if m.value.startswith("**llama.cpp**"))
    at.selectbox(key="pay_import_method").set_value("draft_model")
    at.selectbox(key="pay_import_sampling").set_value("probabilistic")
    at.number_input(key="pay_import_build").set_value(11_400).run()
    assert not at.exception
    llama = next(c.value for c in at.code if c.value.startswith("llama-server"))
    assert llama.endswith("--spec-draft-sampling probabilistic") and "--spec-type draft-simple" in llama
    vllm = next(c.value for c in at.code if c.value.startswith("vllm serve"))
    assert '"draft_sample_method": "probabilistic"' in vllm
    assert any("verifies one-hot only" in m.value for m in at.markdown if m.value.startswith("**SGLang**"))
    (options,) = [t for t in at.table if "lossless?" in t.value.columns]
    assert len(options.value) == 8 and (options.value["lossless?"] != "lossless").sum() == 3


def test_python_printed_meta_info_reads_and_drafts_without_acceptance_are_said(loads):
    """SGLang's meta_info printed by pprint reads to its 32 steps (mean 3.125, shown as τ 3 it ran at); vLLM lines of
    drafts with no draft token say 'drafts seen, no acceptance', not 'nothing found'."""
    meta = json.loads(text_of("sglang_request.json"))["meta_info"]
    at = open_pay(pprint.pformat(meta))
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert {m.label: m.value for m in at.metric}["τ it ran at"] == "3"
    at.text_area(key="pay_import_text").set_value(text_of("vllm_nan_acceptance.txt")).run()
    (error,) = [e.value for e in at.error]
    assert error.startswith("**Cannot read it.** Line 2:") and "drafts seen, no acceptance" in error
    assert "nothing found" not in error.lower() and "Nothing was imported" in error
