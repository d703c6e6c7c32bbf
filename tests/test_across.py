"""Across drafts for any target (specviz.classroom.across, specviz.analysis.draft_sweep): which drafts fit a GGUF, the
embedded or a hub target and why the others do not; the interleaved benchmark on a tiny pair with injected pass
times, its recommendation (a draft and τ, or why none pays, in the words of c and v) worked out by hand; the settings
to run it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from gguf import LlamaFileType

from specviz import ModelPair
from specviz.analysis.clock import FakeTimer
from specviz.analysis.draft_sweep import GRADED, needed_alpha
from specviz.analysis.pairtimes import TimingBook
from specviz.analysis.sweep import SweepSettings
from specviz.classroom import across
from specviz.models import embedded
from specviz.models import gguf as g
from specviz.training.prompts import eval_prompts
from tests.helpers import fake_ms, tiny_text_pair, write_gguf

# --- which drafts fit --------------------------------------------------------------------------------------------


def test_a_gguf_targets_drafts_are_the_found_files_that_pair_and_each_other_file_says_why_not(tmp_path):
    """target.gguf (width 64: 7 × 64 = 448 parameters) among six others: fewer.gguf (width 8) and f16.gguf (as many
    parameters, a smaller file) pair and are smaller; copy.gguf is as large; bigger.gguf larger; other-bos.gguf
    has another BOS; template.gguf another chat template; bad.gguf is no GGUF; a symlink to the target is the target."""
    folder = tmp_path / "models"
    target = write_gguf(folder / "target.gguf", width=64)
    write_gguf(folder / "fewer.gguf", width=8)
    write_gguf(folder / "f16.gguf", width=64, embd_dtype=np.float16, file_type=LlamaFileType.MOSTLY_F16)
    copy = write_gguf(folder / "copy.gguf", width=64)
    bigger = write_gguf(folder / "bigger.gguf", width=128)
    write_gguf(folder / "other-bos.gguf", width=8, bos=2)
    write_gguf(folder / "template.gguf", width=8, template="{{ other }}")
    (folder / "bad.gguf").write_text("nope")
    (folder / "zz-link.gguf").symlink_to(target)
    found = g.find_models([g.Place(source=g.MODELS_DIR, path=folder)])
    drafts = across.drafts_for(str(target), str(folder / "fewer.gguf"), found, llama=True)
    assert drafts.gguf_file == str(target) and drafts.model_id == ""
    assert [(c.label, c.kind, c.file) for c in drafts.fit] == [
        ("f16.gguf", across.GGUF, str(folder / "f16.gguf")),
        ("fewer.gguf", across.GGUF, str(folder / "fewer.gguf")),
        ("prompt lookup", across.LOOKUP, ""),
    ]
    size = lambda n, path: f"{n:,} parameters in {g.format_bytes(path.stat().st_size)}"  # noqa: E731
    reasons = {u.label: u.reason for u in drafts.unfit}
    assert reasons["copy.gguf"] == f"not smaller than the target: {size(448, copy)}, the target {size(448, target)}"
    assert reasons["bigger.gguf"] == f"not smaller than the target: {size(896, bigger)}, the target {size(448, target)}"
    assert reasons["other-bos.gguf"] == "BOS: id 1 '<s>' in the target, id 2 '</s>' in the draft"
    assert reasons["template.gguf"] == (
        "chat template: differs from character 3: 'messages }}' in the target, 'other }}' in the draft"
    )
    assert reasons["bad.gguf"].startswith("could not be read: ")
    assert set(reasons) == {"bad.gguf", "bigger.gguf", "copy.gguf", "other-bos.gguf", "template.gguf"}


def test_a_found_target_is_read_from_what_was_found_not_looked_for_again(tmp_path, monkeypatch):
    """Issue 56.2: the sidebar hands a found file on as the spec that keeps its path and header (specs.found); the
    drafts for it come from that, with nothing looked for or read again. Written as text, the target is read."""
    from specviz import specs

    folder = tmp_path / "models"
    write_gguf(folder / "target.gguf", width=64)
    write_gguf(folder / "fewer.gguf", width=8)
    found = g.find_models([g.Place(source=g.MODELS_DIR, path=folder)])
    (target,) = [m for m in found if m.name == "target.gguf"]
    (draft,) = [m for m in found if m.name == "fewer.gguf"]
    as_text = across.drafts_for(str(target.path), str(draft.path), found, llama=True)

    def looked_for(*args, **kwargs):
        raise AssertionError("the found target was looked for or read again")

    monkeypatch.setattr(g, "read_info", looked_for)
    monkeypatch.setattr(across, "gguf_path", looked_for)
    kept = across.drafts_for(specs.found(target), specs.found(draft), found, llama=True)
    assert kept.gguf_file == str(target.path) and kept.target == str(target.path)
    assert [(c.label, c.kind, c.file) for c in kept.fit] == [(c.label, c.kind, c.file) for c in as_text.fit]
    assert [c.label for c in kept.fit] == ["fewer.gguf", "prompt lookup"]
    with pytest.raises(AssertionError, match="looked for or read again"):
        across.drafts_for(str(target.path), str(draft.path), found, llama=True)


def test_the_embedded_targets_drafts_are_its_own_and_the_found_files_of_its_vocabulary(tmp_path):
    """The embedded target (SmolLM2-135M-Instruct, run in float32): its trained draft, its copies in 8, 4 and 2 bits,
    its first 8 layers and prompt lookup; and a found file: its own Q4_1 file from the package (smaller than the
    float32 target it runs, the same vocabulary) fits, a tiny model of six tokens does not. Without llama.cpp the
    copies cannot be made, and the found files not run."""
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "smol.Q4_1.gguf").symlink_to(embedded.gguf_path())
    write_gguf(folder / "tiny.gguf")
    found = g.find_models([g.Place(source=g.MODELS_DIR, path=folder)])
    drafts = across.drafts_for("embedded", "embedded", found, llama=True)
    labels = [*list(GRADED)[:4], "the first 8 layers, untrained (early-exit:8)", "smol.Q4_1.gguf", "prompt lookup"]
    assert drafts.labels() == labels
    assert [c.kind for c in drafts.fit] == ["trained", "gguf", "gguf", "gguf", "early exit", "gguf", "lookup"]
    assert drafts.by_label()["the target in 8 bits (Q8_0)"].spec == "embedded:Q8_0"
    assert drafts.model_id == "HuggingFaceTB/SmolLM2-135M-Instruct"
    ((label, reason),) = [(u.label, u.reason) for u in drafts.unfit]
    assert label == "tiny.gguf" and reason.startswith("vocabulary: 49152 tokens in the target, 6 in the draft")
    without = across.drafts_for("embedded", "embedded", found, llama=False)
    assert without.labels() == [
        "distilled draft (trained)",
        "the first 8 layers, untrained (early-exit:8)",
        "prompt lookup",
    ]
    assert {u.label for u in without.unfit} == {*list(GRADED)[1:4], "smol.Q4_1.gguf", "tiny.gguf"}
    assert all("make llama" in u.reason for u in without.unfit)


def test_a_hub_targets_drafts_are_the_pairs_own_a_presets_its_first_quarter_and_prompt_lookup(tmp_path):
    """SmolLM2-360M (32 layers) drafted by the 135M: the pair's draft (also a preset's), its first 32 / 4 = 8 layers,
    prompt lookup; a found GGUF file runs only beside a GGUF target or the embedded one."""
    found = g.find_models([g.Place(source=g.MODELS_DIR, path=write_gguf(tmp_path / "m" / "x.gguf").parent)])
    target, draft = "HuggingFaceTB/SmolLM2-360M-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"
    drafts = across.drafts_for(target, draft, found, layers=32, llama=True)
    assert drafts.labels() == [draft, "the first 8 layers, untrained (early-exit:8)", "prompt lookup"]
    assert drafts.model_id == target and drafts.gguf_file == ""
    ((unfit),) = drafts.unfit
    assert unfit.label == "x.gguf" and "a GGUF draft runs beside a GGUF target or the embedded one" in unfit.reason


def test_the_held_out_prompts_are_one_instruction_of_each_kind():
    assert across.held_out(eval_prompts()) == (
        "Tell a tale about a retired beekeeper who opens a bakery.",
        "Can you explain how a refrigerator keeps food cold?",
        "Implement a Python function that checks whether two strings are anagrams.",
        "Give an overview of the history of Kyoto.",
    )


# --- the recommendation, by hand --------------------------------------------------------------------------------


def test_the_alpha_a_draft_needs_to_pay():
    """E(α, τ) = 1 + α + … + α^τ = τ·c + v(τ + 1). τ = 1, c = 0.1, v(2) = 1.2: 1 + α = 1.3, α = 0.30. τ = 4, c = 0.6,
    v(5) = 1.8: 1 + α + α² + α³ + α⁴ = 4.2; at α = 0.9127 the left side is 4.19995, at 0.9128 4.20078: α ≈ 0.9127.
    c = 1.2, v(2) = 1.2 at τ = 1: 2.4 passes for at most 2 tokens, no α pays; c = 0, v(3) = 0.9: any α does."""
    assert needed_alpha(1, 0.1, 1.2) == pytest.approx(0.3)
    assert needed_alpha(4, 0.6, 1.8) == pytest.approx(0.9127, abs=1e-4)
    assert needed_alpha(1, 1.2, 1.2) is None
    assert needed_alpha(2, 0.0, 0.9) == 0.0


def candidates(*labels: str) -> across.Drafts:
    fit = tuple(
        across.Candidate(label=label, spec=label, kind=across.GGUF, file=f"/models/{label}.gguf", name=label)
        for label in labels
    )
    return across.Drafts(target="/models/target.gguf", gguf_file="/models/target.gguf", model_id="", fit=fit, unfit=())


def benchmark(draft_ms: float, *labels: str) -> across.Across:
    """The tiny target drafted by itself ("copy": greedy, every token accepted) and by a random one-layer model
    ("random"), τ = 1 and 3 on one prompt; a target pass over k tokens 10 + 2(k − 1) ms, a draft forward `draft_ms`."""
    base = tiny_text_pair()
    pairs = {"copy": ModelPair(base.target, base.target, base.codec), "random": base}
    settings = SweepSettings(taus=(1, 3), prompts=("a b c",), mode="greedy", max_new_tokens=8)
    timer = FakeTimer(lambda what, k: draft_ms if what == "draft" else 10.0 + 2.0 * (k - 1))
    told = []
    result = across.run(
        candidates(*labels), labels, settings, pairs.__getitem__, TimingBook(), {}, timer=timer,
        progress=lambda fraction, text: told.append(fraction),
    )  # fmt: skip
    assert told == sorted(told) and told[-1] < 1.0  # progress only forward
    return result


def test_the_recommendation_on_a_tiny_pair_with_injected_pass_times():
    """The tiny target leaves room for 7 new tokens. A draft forward 1 ms. The copy at τ = 3: two steps of
    3 · 1 + 16 = 19 ms emitting 4 and 3 tokens, the target alone 10 ms a token: 70 / 38 = 1.84×; resampling the two
    steps, both the first gives 80 / 38 = 2.11×, both the second 60 / 38 = 1.58× (each a quarter of the resamples,
    so the 95% interval's ends): 1.58–2.11×. At τ = 1, four steps of 1 + 12 = 13 ms emitting 2, 2, 2, 1: 70 / 52 =
    1.35×, so τ = 3 is its best. The random draft is accepted never: at τ = 1 seven steps of one token, 10 / 13 = 0.77×.
    The pair's timings, from the book: T(1) = 10 ms, v(4) = 16 / 10 = 1.60, c = 1 / 10 = 0.10. Beside each speedup its
    ceiling, (τ + 1)/v(τ + 1), and what α and c cost of it."""
    result = benchmark(1.0, "copy", "random")
    rec = result.recommendation
    assert (rec.draft, rec.tau) == ("copy", 3)
    assert (rec.speedup.value, rec.speedup.low, rec.speedup.high) == pytest.approx((70 / 38, 60 / 38, 80 / 38))
    assert rec.sentence == (
        "copy at τ = 3: 1.84× (1.58–2.11×) the target alone's speed here (α = 1.00, 4.00 tokens a step; c = 0.10, "
        "v(4) = 1.60)."
    )
    assert result.table() == [
        {
            "draft": "copy",
            "best τ": "3",
            "speedup (95% interval)": "1.84× (1.58–2.11×)",
            "α (accepted)": "1.00",
            "tokens per step": "4.00",
            "c": "0.10",
            "v(τ + 1)": "1.60",
            "ceiling (τ + 1)/v": "2.50×",  # 4/1.6; E = 4 keeps it all (α costs 0); 4/(3 · 0.1 + 1.6) = 2.11×
            "α costs": "0.00×",
            "c costs": "0.39×",
        },
        {
            "draft": "random",
            "best τ": "1",
            "speedup (95% interval)": "0.77×",
            "α (accepted)": "0.00",
            "tokens per step": "1.00",
            "c": "0.10",
            "v(τ + 1)": "1.20",
            "ceiling (τ + 1)/v": "1.67×",  # 2/1.2; E = 1: 1/1.2 = 0.83× (α costs 0.83×); 1/1.3 = 0.77× (c 0.06×)
            "α costs": "0.83×",
            "c costs": "0.06×",
        },
    ]
    server, studio = result.flags  # the settings to run the copy at τ = 3: every step drafts 3 (p-min 0)
    assert server.text == (
        "llama-server -m /models/target.gguf --spec-type draft-simple --spec-draft-model /models/copy.gguf "
        "--spec-draft-n-max 3 --spec-draft-n-min 0 --spec-draft-p-min 0.00"
    )
    assert studio.engine == "LM Studio" and '"llm.prediction.speculativeDecoding.maxTokensToDraft": 3' in studio.text
    assert '"llm.prediction.speculativeDecoding.draftModel": "copy"' in studio.text


def test_drafts_within_noise_of_the_recommended_one_are_named_beside_it():
    """Two drafts that are both the target itself: the same runs, the same 1.84× (1.58–2.11×) at τ = 3 (above): the
    first is recommended and the second named as within noise of it."""
    base = tiny_text_pair()
    pairs = {"copy": ModelPair(base.target, base.target, base.codec)}
    settings = SweepSettings(taus=(1, 3), prompts=("a b c",), mode="greedy", max_new_tokens=8)
    timer = FakeTimer(fake_ms)
    load = lambda spec: pairs["copy"]  # noqa: E731
    result = across.run(candidates("copy", "twin"), ("copy", "twin"), settings, load, TimingBook(), {}, timer=timer)
    assert result.recommendation.sentence == (
        "copy at τ = 3: 1.84× (1.58–2.11×) the target alone's speed here (α = 1.00, 4.00 tokens a step; c = 0.10, "
        "v(4) = 1.60); twin at τ = 3 (measured 1.84×, 1.58–2.11×) is within noise of it."
    )


def test_none_pays_with_a_slow_draft_and_the_sentence_says_why_in_c_and_v():
    """A draft forward 12 ms (c = 12 / 10 = 1.20). The copy at τ = 1: four steps of 12 + 12 = 24 ms for 70 ms of the
    target alone, 70 / 96 = 0.73×; at τ = 3, two of 36 + 16 = 52 ms: 70 / 104 = 0.67×, so τ = 1 is its best.
    Resampling τ = 1's four steps (20, 20, 20 and 10 ms alone, 24 each): all four 20 gives 80 / 96 = 0.83× (a third of
    the resamples), three of the 10 ms step 50 / 96 = 0.52× (the 2.5% quantile: four of it is 0.4%, three or more 5%).
    v(2) = 12 / 10 = 1.20. Even α = 1 makes 2 tokens a step, for τ·c + v(2) = 1.20 + 1.20 = 2.40 passes: none pays."""
    rec = benchmark(12.0, "copy", "random").recommendation
    assert rec.draft is None and rec.tau == 1
    assert rec.sentence == (
        "None pays here, because the closest, copy at τ = 1 (measured 0.73×, 0.52–0.83×), costs c = 1.20 of a target "
        "pass per draft token and v(2) = 1.20 for the pass that checks them: even if every draft token were accepted, "
        "a step would make 2 tokens for τ·c + v(2) = 1.20 + 1.20 = 2.40 target passes."
    )


def test_none_pays_with_a_draft_the_target_rejects_and_the_sentence_names_the_alpha_it_would_need():
    """The random draft alone, a forward 1 ms: never accepted, its best τ = 1 at 10 / 13 = 0.77×. c = 0.10, v(2) =
    1.20: 1 + α must beat 0.10 + 1.20, so α above 0.30; it accepts 0."""
    rec = benchmark(1.0, "random").recommendation
    assert rec.draft is None
    assert rec.sentence == (
        "None pays here, because the closest, random at τ = 1 (measured 0.77×), costs c = 0.10 of a target pass per "
        "draft token and v(2) = 1.20 for the pass that checks them: it needs α above 0.30 to pay, and accepts "
        "α = 0.00."
    )


def test_a_draft_within_noise_of_the_target_alone_is_not_recommended():
    """A draft forward 6 ms (c = 0.60). The copy at τ = 3: two steps of 18 + 16 = 34 ms for 70 ms alone, 70 / 68 =
    1.03×, resampled 60 / 68 = 0.88× to 80 / 68 = 1.18×: within noise of 1. With v(4) = 1.60 it needs
    1 + α + α² + α³ = 3 · 0.6 + 1.6 = 3.4, α ≈ 0.89 (at 0.89: 3.387; at 0.893: 3.402), and accepts 1.00: a whole step
    would pay 40 / 34 = 1.18×, the last one, cut to 3 tokens, 30 / 34."""
    rec = benchmark(6.0, "copy", "random").recommendation
    assert rec.draft is None and rec.tau == 3
    assert rec.sentence == (
        "None pays here for certain, because the closest, copy at τ = 3, measured 1.03× (0.88–1.18×), is within noise "
        "of the target alone: it costs c = 0.60 of a target pass per draft token and v(4) = 1.60 for the pass that "
        "checks them, so it needs α above 0.89, and it accepts 1.00, but the rest of its steps (their other work, "
        "steps that drafted nothing, a last one cut short) left no margin here."
    )


def test_a_draft_that_cannot_load_or_be_timed_is_said_and_the_others_still_compared():
    """The random draft's pair fails to load: withheld with why; the copy's passes are timed on a busy machine
    (every piece disturbed): its c and v are said not timed, with the message, and its recommendation has none."""
    from specviz.errors import ModelError

    base = tiny_text_pair()
    copy = ModelPair(base.target, base.target, base.codec)

    def load(spec: str) -> ModelPair:
        if spec == "random":
            raise ModelError("random.gguf is gone")
        return copy

    timer = FakeTimer(
        lambda what, k: 1.0 if what == "draft" else 10.0 + 2.0 * (k - 1),
        disturbed=lambda what, k, index: what in ("pass", "draft"),  # the book's pieces; the runs' are quiet
    )
    settings = SweepSettings(taus=(1, 3), prompts=("a b c",), mode="greedy", max_new_tokens=8)
    result = across.run(candidates("copy", "random"), ("copy", "random"), settings, load, TimingBook(), {}, timer=timer)
    assert result.result.withheld == {"random": "could not be loaded: random.gguf is gone"}
    assert result.timings["copy"] is None and "busy machine" in result.untimed["copy"]
    assert result.recommendation.draft == "copy"
    assert result.recommendation.sentence.endswith("(α = 1.00, 4.00 tokens a step).")
    assert result.table()[1]["speedup (95% interval)"] == "withheld"


# --- the settings to run it ----------------------------------------------------------------------------------------


def test_prompt_lookup_and_a_hub_draft_run_on_vllm_and_sglang_and_a_trained_draft_nowhere():
    target = "HuggingFaceTB/SmolLM2-360M-Instruct"
    drafts = across.drafts_for(target, "HuggingFaceTB/SmolLM2-135M-Instruct", [], layers=32, llama=True)
    lookup, hub = drafts.by_label()["prompt lookup"], drafts.by_label()["HuggingFaceTB/SmolLM2-135M-Instruct"]
    (vllm, sglang), _ = across.run_settings(drafts, lookup, 4)
    assert vllm.text == (
        "vllm serve HuggingFaceTB/SmolLM2-360M-Instruct --speculative-config "
        '\'{"method": "ngram", "num_speculative_tokens": 4}\''
    )
    assert "--speculative-algorithm NGRAM" in sglang.text and "--speculative-num-draft-tokens 5" in sglang.text
    (vllm, sglang), _ = across.run_settings(drafts, hub, 2)
    assert '"model": "HuggingFaceTB/SmolLM2-135M-Instruct"' in vllm.text
    assert "--speculative-draft-model-path HuggingFaceTB/SmolLM2-135M-Instruct" in sglang.text
    trained = across.drafts_for("embedded", "embedded", [], llama=True)
    flags, note = across.run_settings(trained, trained.fit[0], 4)
    assert flags == () and note.startswith("No serving engine loads distilled draft (trained)")


def test_a_draft_that_reads_the_targets_hidden_states_is_benchmarked_and_timed():
    """The embedded pair's distilled draft reads the target's hidden states (a feature draft): its pair's passes are
    timed with the target's session handed to it (they raised a TypeError before), c = 1 / 10 = 0.10 and v(2) = 12 /
    10 = 1.20 from the injected times, and as specviz's own format no engine runs it."""
    from specviz import HFModel
    from specviz.drafts.feature import FeatureDraftModel
    from tests.helpers import make_feature_draft, tiny_llama, word_tokenizer

    target = tiny_llama(0)
    pair = ModelPair(HFModel(target, "t"), FeatureDraftModel(make_feature_draft(target), "f"), tiny_text_pair().codec)
    assert word_tokenizer().vocab_size == pair.target.vocab_size
    drafts = across.Drafts(
        target="t",
        gguf_file="",
        model_id="",
        fit=(across.Candidate(label="feature", spec="feature", kind=across.TRAINED),),
        unfit=(),
    )
    settings = SweepSettings(taus=(1,), prompts=("a b c",), mode="greedy", max_new_tokens=4)
    timer = FakeTimer(fake_ms)
    result = across.run(drafts, ("feature",), settings, lambda spec: pair, TimingBook(), {}, timer=timer)
    assert result.untimed == {} and (result.timings["feature"].c, result.timings["feature"].v(2)) == (0.1, 1.2)
    (row,) = result.table()
    assert (row["c"], row["v(τ + 1)"]) == ("0.10", "1.20")


def test_the_benchmark_says_how_long_it_takes_from_injected_pass_times():
    """Issue 67.3: Across drafts ran 40 minutes with no estimate. T(1) = 10 ms, T(2) = 12, T(3) = 14, a draft forward
    1 ms (c = 0.1); 2 drafts, τ 1 and 2, one prompt and seed, 6 tokens a run. τ = 1: a step costs (0.1 + 1.2) × 10 =
    13 ms, the target alone 60 ms; 3 steps (all accepted) or 6: 99 or 138 ms. τ = 2: (0.2 + 1.4) × 10 = 16 ms a step,
    2 steps or 6: 92 or 156 ms. Two drafts: 382 to 588 ms, 4 runs."""
    from specviz.analysis.measure import point
    from specviz.analysis.pairtimes import PairTimings

    kept = PairTimings(
        target="t", draft="d", runtime="llama.cpp", threads=2, draft_ms=point(1.0), context=64, quiet=True, at=0.0,
        passes_ms={1: point(10.0), 2: point(12.0), 3: point(14.0)}, machine="a CPU",
    )  # fmt: skip
    settings = SweepSettings(taus=(1, 2), prompts=("a b c",), max_new_tokens=6)
    told = across.estimate(settings, 2, kept)
    assert told.runs == 4 and told.fewest_s == pytest.approx(0.382) and told.most_s == pytest.approx(0.588)
    assert told.words().startswith("4 runs: under a minute on this machine, from the pair's kept timings (T(1) = 10.0")
    many = across.estimate(dataclasses.replace(settings, max_new_tokens=6000, seeds=tuple(range(5))), 2, kept)
    assert (many.fewest_s, many.most_s) == pytest.approx((1910.0, 2940.0), abs=1.0)  # ×1000 tokens, ×5 seeds
    assert many.words().startswith("20 runs: about 32–49 min on this machine")


def test_the_progress_counts_one_way_over_the_runs_planned_with_busy_runs_again_counted_apart(monkeypatch):
    """Issue 67.3: "23 / 160 runs" became "167 / 320 runs" when the τ values withheld as busy ran again. The total
    said is the one planned from start to end; the runs again are counted apart; the bar only moves forward."""
    steps = [(1, 4, "a"), (2, 4, "b"), (3, 4, "a"), (4, 4, "b"), (5, 6, "a"), (6, 6, "b")]  # then 2 τ values again
    monkeypatch.setattr(across, "sweep_drafts", lambda *_args, **_kw: iter(steps))
    base = tiny_text_pair()
    told: list[tuple[float, str]] = []
    across.run(
        candidates("a", "b"), ("a", "b"), SweepSettings(taus=(1,), prompts=("a b",), max_new_tokens=4),
        lambda _spec: ModelPair(base.target, base.draft, base.codec), TimingBook(), {},
        timer=FakeTimer(lambda what, k: 1.0 if what == "draft" else 10.0 + 2.0 * (k - 1)),
        progress=lambda fraction, text: told.append((fraction, text)),
    )  # fmt: skip
    counts = [text for _f, text in told if " runs" in text and "/" in text]
    planned = [f"{k} / 4 runs, each beside the target alone: {x}" for k, x in zip((1, 2, 3, 4), "abab", strict=True)]
    assert counts[:4] == planned
    assert counts[4:] == [f"4 / 4 runs; the τ values withheld as busy, run again: {k} / 2" for k in (1, 2)]
    fractions = [f for f, _t in told]
    assert fractions == sorted(fractions) and max(fractions) < 1.0


def test_a_benchmark_cut_short_recommends_from_the_runs_it_finished_and_runs_none_again(monkeypatch):
    """Issue 67.3: cut short (Stop), the benchmark keeps what it has: the runs finished are in `caches`, and
    `finished_only` recommends from them without running any: the copy's τ = 1 run (it keeps every greedy token, 2 a
    step) and the random draft's τ = 1 and 3 runs (it keeps none) are read; the copy's τ = 3 never ran."""
    from specviz.analysis import draft_sweep

    base = tiny_text_pair()
    pairs = {"copy": ModelPair(base.target, base.target, base.codec), "random": base}
    settings = SweepSettings(taus=(1, 3), prompts=("a b c",), mode="greedy", max_new_tokens=8)
    timer = FakeTimer(lambda what, k: 1.0 if what == "draft" else 10.0 + 2.0 * (k - 1))
    caches: dict[str, dict] = {}  # a round of each draft in turn: copy τ = 1, random τ = 1, then random τ = 3
    finished = draft_sweep.sweep_drafts(pairs, settings, caches, timer)
    for _ in range(3):  # then Stop: the 4th run never starts
        next(finished)
    finished.close()

    def never(*_args, **_kwargs):
        raise AssertionError("no run is started")

    monkeypatch.setattr(across, "sweep_drafts", never)
    result = across.run(
        candidates("copy", "random"), ("copy", "random"), settings, pairs.__getitem__, TimingBook(), caches,
        timer=timer, finished_only=True,
    )  # fmt: skip
    table = {row["draft"]: row for row in result.table()}  # the copy's τ = 1 run, the random draft's τ = 1 and 3
    assert (table["copy"]["best τ"], table["copy"]["α (accepted)"], table["copy"]["tokens per step"]) == (
        "1",
        "1.00",
        "2.00",  # every token kept: τ + 1 a step
    )
    assert table["random"]["α (accepted)"] == "0.00" and table["random"]["tokens per step"] == "1.00"
    assert result.recommendation.sentence.startswith("None pays here for certain, because the closest, copy at τ = 1")
