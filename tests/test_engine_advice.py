"""The settings each engine is given (specviz.analysis.engine_flags, engine_advice.flags) held against the names its
own argument parser lists (tests/fixtures/engine_flags/, each with its source file and commit), the spelling chosen
by the llama.cpp build, and what an acceptance read from a rate or from a prefix of rates assumes, worked by hand."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from specviz.analysis import engine_advice as ea
from specviz.analysis import engine_flags as ef
from specviz.analysis import engine_import as ei
from specviz.errors import ConfigError

NAMES = Path(__file__).parent / "fixtures" / "engine_flags"
LOGS = Path(__file__).parent / "fixtures" / "engine_logs"


def parser(name: str) -> dict[str, set | dict]:
    """A parser-names fixture: options (every name), removed names, values per option, keys, the command, engines."""
    read: dict = {"options": set(), "removed": set(), "values": {}, "keys": set(), "command": "", "engines": {}}
    for line in (NAMES / name).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        kind, *words = line.split()
        if kind == "option":
            read["options"].update(words)
        elif kind == "removed":
            read["removed"].update(words)
        elif kind == "values":
            read["values"][words[0]] = set(words[1:])
        elif kind == "key":
            read["keys"].update(words)
        elif kind == "command":
            read["command"] = " ".join(words)
        elif kind == "engine":
            read["engines"][words[0]] = set(words[1:])
    return read


def log(name: str) -> str:
    return "".join(x for x in (LOGS / name).read_text().splitlines(True) if not x.startswith("#> "))


def refusals(command: str, names: dict) -> list[str]:
    """Every flag of a command line the parser would refuse: not one of its names, removed, or a value it lacks."""
    words = shlex.split(command)
    if names["command"] and command.startswith(names["command"] + " "):
        words = words[len(names["command"].split()) :]
    bad = []
    for i, word in enumerate(words):
        if word.startswith("-"):
            if word not in names["options"] or word in names["removed"]:
                bad.append(word)
            elif word in names["values"] and words[i + 1] not in names["values"][word]:
                bad.append(f"{word} {words[i + 1]}")
    return bad


CURRENT, OLD = parser("llamacpp_current.txt"), parser("llamacpp_old.txt")


def test_the_llama_cpp_line_starts_a_current_llama_server():
    """The default spelling: every flag a name of the current parser, none of its removed ones; the same line is
    refused by a build before b8955 (--spec-type and --spec-draft-* unknown there)."""
    for kind in ("draft-simple", "draft-eagle3", "draft-mtp"):
        flag = ef.llamacpp_server("models/target.gguf", "models/draft.gguf", 4, 1, 0.62, kind=kind)
        assert flag.text.startswith("llama-server -m models/target.gguf --spec-type " + kind)
        assert refusals(flag.text, CURRENT) == []
        assert "--spec-type" in refusals(flag.text, OLD) and "--spec-draft-n-max" in refusals(flag.text, OLD)
    assert "--spec-draft-n-max 4 --spec-draft-n-min 1 --spec-draft-p-min 0.62" in flag.text


def test_an_older_build_gets_its_older_spelling():
    """Build 8954 (before ggml-org/llama.cpp#22397 at b8955): -md, --draft-max, --draft-min, --draft-p-min, all names of
    that parser, and two of them refused by the current one. b8955–b9133: the new names without --spec-type (a draft
    model enabled drafting there); b9134 on: --spec-type draft-simple."""
    old = ef.llamacpp_server("t.gguf", "d.gguf", 5, 2, 0.5, build=8954)
    assert old.text == "llama-server -m t.gguf -md d.gguf --draft-max 5 --draft-min 2 --draft-p-min 0.50"
    assert refusals(old.text, OLD) == [] and refusals(old.text, CURRENT) == ["--draft-max", "--draft-min"]
    middle = ef.llamacpp_server("t.gguf", "d.gguf", 5, 2, 0.5, build=8955)
    assert "--spec-type" not in middle.text and "--spec-draft-n-max 5" in middle.text
    assert refusals(middle.text, CURRENT) == []
    assert "--spec-type draft-simple" in ef.llamacpp_server("t.gguf", "d.gguf", 5, build=9134).text
    assert "build 8954" in old.reason and "b8955" in old.reason


def test_lm_studio_settings_are_its_own_keys_for_each_engine():
    """LM Studio's llama.cpp engine takes draftModel, maxTokensToDraft, minDraftLengthToConsider and
    minContinueDraftingProbability; its MLX engine draftModel and numDraftTokensExact (lmstudio-js schema.ts)."""
    names = parser("lmstudio.txt")
    llama = json.loads(ef.lmstudio("qwen2.5-0.5b-instruct", 4, 1, 0.6).text)
    assert llama == {
        "llm.prediction.speculativeDecoding.draftModel": "qwen2.5-0.5b-instruct",
        "llm.prediction.speculativeDecoding.maxTokensToDraft": 4,
        "llm.prediction.speculativeDecoding.minDraftLengthToConsider": 1,
        "llm.prediction.speculativeDecoding.minContinueDraftingProbability": 0.6,
    }
    mlx = json.loads(ef.lmstudio("qwen2.5-0.5b-instruct", 3, mlx=True).text)
    for config, engine in ((llama, "llama.cpp"), (mlx, "MLX")):
        assert set(config) <= names["keys"]
        assert {k.rsplit(".", 1)[1] for k in config} <= names["engines"][engine]
    assert mlx["llm.prediction.speculativeDecoding.numDraftTokensExact"] == 3


def test_vllm_and_sglang_lines_are_their_parsers_names():
    vllm, old_vllm, sglang = parser("vllm.txt"), parser("vllm_old.txt"), parser("sglang.txt")
    line = ef.vllm("meta-llama/Llama-3.1-8B-Instruct", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", 3, "eagle3").text
    assert line.startswith(vllm["command"] + " meta-llama/Llama-3.1-8B-Instruct ") and refusals(line, vllm) == []
    config = json.loads(shlex.split(line)[-1])
    assert set(config) <= vllm["keys"] and config["method"] in vllm["values"]["method"]
    assert config == {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}
    before = ef.vllm("target", "draft", 3, version=(0, 7, 3)).text  # before --speculative-config
    assert before == "vllm serve target --speculative-model draft --num-speculative-tokens 3"
    assert refusals(before, old_vllm) == [] and refusals(before, vllm) == [
        "--speculative-model",
        "--num-speculative-tokens",
    ]
    for method, algorithm in (("draft_model", "STANDALONE"), ("eagle3", "EAGLE3"), ("ngram", "NGRAM")):
        line = ef.sglang("meta-llama/Llama-3.1-8B-Instruct", "draft", 4, method).text
        assert line.startswith(sglang["command"] + " ") and refusals(line, sglang) == []
        assert f"--speculative-algorithm {algorithm} " in line
        assert line.endswith("--speculative-num-steps 4 --speculative-eagle-topk 1 --speculative-num-draft-tokens 5")


def test_settings_for_each_engine_and_refusals():
    """issue 53.2: one call, a line per engine (LM Studio twice: its llama.cpp and MLX engines), or one engine's."""
    every = ef.settings("t.gguf", "d.gguf", 3, p_min=0.7, n_min=1)
    assert [f.engine for f in every] == ["llama.cpp", "LM Studio", "LM Studio (MLX)", "vLLM", "SGLang"]
    assert all(f.reason for f in every) and "--spec-draft-p-min 0.70" in every[0].text
    (old,) = ef.settings("t.gguf", "d.gguf", 3, engine="llama.cpp", build=8000)
    assert "--draft-max 3" in old.text
    with pytest.raises(ConfigError, match="no settings for 'Ollama'"):
        ef.settings("t", "d", 3, engine="Ollama")
    with pytest.raises(ConfigError, match="at least 1"):
        ef.settings("t", "d", 0)
    with pytest.raises(ConfigError, match="p-min is a probability"):
        ef.llamacpp_server("t", "d", 3, p_min=1.5)
    with pytest.raises(ConfigError, match="between 0 and τ = 3"):
        ef.lmstudio("d", 3, n_min=4)


def test_a_rate_only_reading_states_how_far_full_drafts_can_overstate():
    """vLLM v0.8.3's 66 of 66 (rate 1.0) read at τ = 3: full drafts give E(3) = 1 + 1.0 · 3 = 4; drafts of 1 token keep
    the same rate and give 1 + 1.0 · 1 = 2, so up to 4 / 2 − 1 = 100% over. With n-min 2: 1 + 2 = 3, 33%. With p-min 0
    every draft is full: no floor."""
    imp = ei.parse(log("vllm_v08_rate_only.txt").splitlines()[1])
    full = ea.from_import(imp, positions=3)
    assert full.tokens(3) == pytest.approx(4.0) and full.floor == pytest.approx(2.0)
    assert "2.00 to 4.00" in full.assumption and "up to 100%" in full.assumption
    longer = ea.from_import(imp, positions=3, n_min=2)
    assert longer.floor == pytest.approx(3.0) and "up to 33%" in longer.assumption
    exact = ea.from_import(imp, positions=3, p_min=0.0)
    assert exact.floor is None and "with p-min 0" in exact.assumption


def test_rates_printed_for_the_first_positions_get_a_tail_that_keeps_the_exact_mean():
    """A statistics line in ngram-mod's layout, counts by hand: 10 drafts of 12 tokens, 60 accepted, rates 0.900, 0.800
    printed (17 of the 60: a prefix). Read at τ = 12: positions 3 … 12 take 0.8·q^j with Σ = 6 − 1.7 = 4.3, so
    E(12) = 1 + 60 / 10 = 7.0 exactly. The real ngram-mod line (mean 18.0) needs 17 tokens a step: past τ = 16."""
    line = (
        "statistics        ngram-mod: #calls(b,g,a) =    1     10     10, #gen drafts =     10, #acc drafts =     9, "
        "#gen tokens =    120, #acc tokens =    60, #mean acc len = 7.00, #acc rate/pos = (0.900, 0.800)"
    )
    imp = ei.parse(line)
    assert (imp.steps, imp.accepted, imp.counts, imp.partial, imp.positions) == (10, 60, (9, 8), True, None)
    accept = ea.from_import(imp, positions=12)
    assert accept.rates[:2] == pytest.approx((0.9, 0.8)) and accept.measured_upto == 12
    assert accept.tokens(12) == pytest.approx(7.0, abs=1e-9)
    ratios = [accept.rates[i + 1] / accept.rates[i] for i in range(1, 11)]
    assert max(ratios) - min(ratios) < 1e-12 and 0 < ratios[0] < 1  # one q: geometric
    assert "positions 1–2 only" in accept.assumption and "E(12) = 7.000" in accept.assumption
    ngram = ei.read(log("llamacpp_two_impls.txt")).sources[1]
    with pytest.raises(ConfigError, match="needs at least 17 draft tokens per step"):
        ea.from_import(ngram, positions=16)


def test_the_pages_flags_follow_the_build_and_name_the_pair():
    """The advice's flags: llama.cpp in the spelling of the build given, the user's target and draft in every line."""
    imp = ei.parse(log("llamacpp_server.txt"))
    from specviz.analysis.costmodel import HARDWARE, MODELS

    advice = ea.advise(
        ea.from_import(imp),
        HARDWARE["NVIDIA H100 SXM"],
        MODELS["Llama-3.1-8B"],
        MODELS["EAGLE-3 head for Llama-3.1-8B"],
    )
    tau = advice.at(1).tau
    now = ea.flags(advice, 1, "draft_model", "d.gguf", "t.gguf")
    llama = next(f for f in now if f.engine == "llama.cpp")
    assert llama.text.startswith(
        f"llama-server -m t.gguf --spec-type draft-simple --spec-draft-model d.gguf --spec-draft-n-max {tau} "
    )
    assert refusals(llama.text, CURRENT) == []
    then = next(
        f for f in ea.flags(advice, 1, "draft_model", "d.gguf", "t.gguf", build=8000) if f.engine == "llama.cpp"
    )
    assert refusals(then.text, OLD) == [] and f"--draft-max {tau} " in then.text
    assert all("t.gguf" in f.text for f in now if f.engine in ("vLLM", "SGLang", "llama.cpp"))
