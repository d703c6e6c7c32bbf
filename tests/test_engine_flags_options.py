"""The engines' current options (issue 64.2), held against the names each engine's own parser lists
(tests/fixtures/engine_flags/*_options.txt): the draft's sampling mapped to this app's one-hot and token-wise rules,
the lossy options marked, a fork's or unknown llama.cpp build spelled from the log's own command line (never a removed
flag), and a --spec-type a,b log read as several sources."""

from __future__ import annotations

import json
import shlex

from specviz.analysis import engine_advice as ea
from specviz.analysis import engine_flags as ef
from specviz.analysis import engine_import as ei
from specviz.analysis.costmodel import HARDWARE, MODELS
from specviz.core.config import VERIFICATIONS
from tests.test_engine_advice import CURRENT, log, parser, refusals

LLAMA, SGLANG, VLLM = parser("llamacpp_options.txt"), parser("sglang_options.txt"), parser("vllm_options.txt")


def test_every_option_named_is_its_engines_own_and_the_lossy_ones_are_marked():
    """Each option's name is one its engine's parser lists, its values ones that parser takes; exactly SGLang's two
    accept thresholds and vLLM's rejection_sample_method (its 'synthetic') are lossy."""
    for option in ef.OPTIONS:
        if option.engine == "vLLM":
            assert option.name in VLLM["keys"], option.name
            assert set(option.values) <= VLLM["values"][option.name] and option.default in option.values
        else:
            names = LLAMA if option.engine == "llama.cpp" else SGLANG
            assert option.name in names["options"] and option.name not in names["removed"], option.name
            assert set(option.values) <= names["values"].get(option.name, set(option.values)), option.name
        assert option.what and option.source
    lossy = {o.name for o in ef.OPTIONS if o.lossy}
    assert lossy == {
        "--speculative-accept-threshold-single",
        "--speculative-accept-threshold-acc",
        "rejection_sample_method",
    }
    assert "synthetic is lossy" in next(o.what for o in ef.OPTIONS if o.name == "rejection_sample_method")


def test_the_drafts_sampling_is_the_one_hot_or_the_token_wise_rule():
    """greedy → this app's one-hot rule, probabilistic → its token-wise rule (both SpecConfig.verification values).
    llama.cpp: probabilistic written as --spec-draft-sampling (a name of the b11368 parser, unknown to the 00dc8057
    one), for draft-simple and draft-mtp only, and not for a build before b11368; greedy is its default, not
    written. vLLM: draft_sample_method in --speculative-config. SGLang verifies one-hot only: said, nothing added."""
    assert ef.RULE_OF_SAMPLING == {"greedy": "one-hot", "probabilistic": "token"}
    assert set(ef.RULE_OF_SAMPLING.values()) <= set(VERIFICATIONS)
    sampled = ef.llamacpp_server("t.gguf", "d.gguf", 3, 1, 0.5, kind="draft-mtp", sampling="probabilistic")
    assert sampled.text.endswith("--spec-draft-sampling probabilistic") and "token rule" in sampled.reason
    assert refusals(sampled.text, LLAMA) == [] and refusals(sampled.text, CURRENT) == ["--spec-draft-sampling"]
    greedy = ef.llamacpp_server("t.gguf", "d.gguf", 3, sampling="greedy")
    assert "--spec-draft-sampling" not in greedy.text and "one-hot rule" in greedy.reason
    eagle = ef.llamacpp_server("t.gguf", "d.gguf", 3, kind="draft-eagle3", sampling="probabilistic")
    assert "--spec-draft-sampling" not in eagle.text and "not draft-eagle3" in eagle.reason
    before = ef.llamacpp_server("t.gguf", "d.gguf", 3, build=11367, sampling="probabilistic")
    assert "--spec-draft-sampling" not in before.text and "came with b11368" in before.reason
    vllm = ef.vllm("meta-llama/Llama-3.1-8B-Instruct", "d", 3, "draft_model", sampling="probabilistic")
    config = json.loads(shlex.split(vllm.text)[-1])
    assert config["draft_sample_method"] == "probabilistic" and set(config) <= VLLM["keys"]
    assert refusals(vllm.text, VLLM) == [] and config["draft_sample_method"] in VLLM["values"]["draft_sample_method"]
    assert "draft_sample_method" not in ef.vllm("t", "d", 3, sampling="greedy").text
    sglang = ef.sglang("t", "d", 3, "eagle3", sampling="probabilistic")
    assert refusals(sglang.text, SGLANG) == [] and "threshold" not in sglang.text and "one-hot" in sglang.reason


def advice_for(name: str) -> tuple[ei.Reading, ea.Advice]:
    reading = ei.read(log(name))
    accept = ea.from_import(reading.best, positions=reading.best.positions or 2)
    advice = ea.advise(
        accept, HARDWARE["NVIDIA H100 SXM"], MODELS["Llama-3.1-8B"], MODELS["EAGLE-3 head for Llama-3.1-8B"]
    )
    return reading, advice


def test_a_forks_build_number_gets_the_current_spelling_from_its_own_command_line():
    """build_info b484 (a fork's numbering: upstream's b484 predates any drafting llama-server) beside the fork's own
    command line '--spec-type mtp --spec-draft-n-max 2': read as build 484 with the current spelling and the type
    'mtp'; the flags the page writes use --spec-type mtp and --spec-draft-*, none of the names the current parser
    removed (--draft-max, --draft-min), and say why. With no command line, a number below b4000 gets the same."""
    reading, advice = advice_for("llamacpp_fork_mtp.txt")
    assert (reading.build, reading.spelling, reading.types) == (484, "current", ("mtp",))
    assert (reading.best.accepted, reading.best.drafted, reading.best.steps) == (308, 405, 203)
    flags = ea.flags(advice, 1, "mtp", "", "qwen.gguf", reading.build, None, None, reading.spelling, reading.types)
    llama = next(f for f in flags if f.engine == "llama.cpp")
    words = shlex.split(llama.text)
    assert "--spec-type mtp" in llama.text and "--spec-draft-n-max" in words and not set(words) & CURRENT["removed"]
    assert "fork's build number" in llama.reason and "as the log's own command line names draft-mtp" in llama.reason
    assert refusals(llama.text, CURRENT) == ["--spec-type mtp"]  # the fork's own type name, from its command line
    bare = ef.llamacpp_server("t.gguf", "d.gguf", 2, build=484, kind="draft-mtp")
    assert bare.text.startswith("llama-server -m t.gguf --spec-type draft-mtp --spec-draft-model d.gguf")
    assert refusals(bare.text, CURRENT) == [] and "older than any upstream llama-server that drafts" in bare.reason
    upstream = ef.llamacpp_server("t.gguf", "d.gguf", 2, build=8900)  # a real upstream number, no command line
    assert "--draft-max 2" in upstream.text
    said = ef.llamacpp_server("t.gguf", "d.gguf", 2, build=8900, spelling="current")  # its command line says now
    assert "--draft-max" not in said.text and refusals(said.text, CURRENT) == []


def test_a_spec_type_list_log_is_several_sources():
    """'--spec-type draft-dflash,ngram-mod' on the command line and the two statistics lines: two sources (draft-dflash
    511 steps, ngram-mod 31), and the note says the per-request lines would pool both."""
    command = "llama-server -m q.gguf --spec-type draft-dflash,ngram-mod --spec-draft-n-max 4\n"
    reading = ei.read(command + log("llamacpp_two_impls.txt"))
    assert reading.types == ("draft-dflash", "ngram-mod") and [s.steps for s in reading.sources] == [511, 31]
    assert any("--spec-type draft-dflash,ngram-mod" in n and "pool them all" in n for n in reading.notes)


def test_every_line_the_page_writes_starts_the_current_engines():
    """For every draft kind and sampling the page offers, at batches 1 and 64: the llama-server, vLLM and SGLang
    lines use only names (and values) their current parsers list."""
    _, advice = advice_for("llamacpp_server.txt")
    for method in ea.METHODS:
        for sampling in ef.SAMPLINGS:
            for batch in (1, 64):
                flags = {f.engine: f for f in ea.flags(advice, batch, method, "d", "t", sampling=sampling)}
                if not flags["llama.cpp"].text.startswith("#"):
                    assert refusals(flags["llama.cpp"].text, LLAMA) == [], (method, sampling)
                if not flags["SGLang"].text.startswith("#"):
                    assert refusals(flags["SGLang"].text, SGLANG) == [], (method, sampling)
                if not flags["vLLM"].text.startswith("#"):
                    config = json.loads(shlex.split(flags["vLLM"].text)[-1])
                    assert refusals(flags["vLLM"].text, VLLM) == [] and set(config) <= VLLM["keys"]
                    assert config["method"] in VLLM["values"]["method"]
