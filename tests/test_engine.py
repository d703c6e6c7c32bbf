"""Engine invariants on tiny random models and tables, checked against docs/algorithm.md and against
Hugging Face's own greedy decoding."""

import pytest
import torch
from transformers import GenerationConfig

from specviz import (
    MODES,
    ConfigError,
    Decoder,
    DecodingFinished,
    HFModel,
    IncompatibleModelsError,
    ModelPair,
    PromptError,
    PromptLookupDrafter,
    SpecConfig,
    TableModel,
)
from tests.helpers import IdsCodec, Wrapped, full_logits, hf_pair, table_pair, tiny_llama

PROMPT = [5, 17, 42, 8, 3, 77]


def hf_greedy(model, prompt, n):
    config = GenerationConfig(do_sample=False, max_new_tokens=n, eos_token_id=None, pad_token_id=0)
    out = model.generate(torch.tensor([prompt]), generation_config=config)
    return tuple(out[0, len(prompt) :].tolist())


@pytest.fixture(scope="module")
def target():
    return tiny_llama(0)


@pytest.fixture(scope="module")
def drafts(target):
    t = HFModel(target, "target")
    return {
        "random": HFModel(tiny_llama(1, layers=1), "random"),
        "self": t,
        "adversarial": Wrapped(t, negate=True),
    }


@pytest.mark.parametrize("draft_kind", ["random", "self", "adversarial"])
@pytest.mark.parametrize("tau", [1, 3, 5])
def test_greedy_mode_equals_target_greedy_generate(target, drafts, draft_kind, tau):
    pair = ModelPair(HFModel(target, "target"), drafts[draft_kind], IdsCodec())
    run = Decoder(pair, PROMPT, SpecConfig(tau=tau, mode="greedy", max_new_tokens=24)).run()
    assert run.new_tokens == hf_greedy(target, PROMPT, 24)
    if draft_kind == "adversarial":
        assert run.metrics.accepted_tokens == 0
    if draft_kind == "self":
        assert run.metrics.draft_acceptance_rate == 1.0


def test_textbook_at_temperature_zero_equals_target_greedy(target, drafts):
    pair = ModelPair(HFModel(target, "target"), drafts["random"], IdsCodec())
    run = Decoder(pair, PROMPT, SpecConfig(tau=3, temperature=0.0, max_new_tokens=20)).run()
    assert run.new_tokens == hf_greedy(target, PROMPT, 20)


@pytest.mark.parametrize("mode", MODES)
def test_draft_equal_to_target_accepts_everything(mode):
    model = HFModel(tiny_llama(0), "same")
    pair = ModelPair(model, model, IdsCodec())
    run = Decoder(pair, PROMPT, SpecConfig(tau=4, mode=mode, max_new_tokens=25)).run()
    full_steps = run.steps[:-1]  # the last step is shortened to fit max_new_tokens
    assert all(s.n_accepted == s.tau == 4 and len(s.emitted) == 5 for s in full_steps)
    assert all(all(s.accepted) and s.next_rule == "bonus" for s in run.steps)
    assert run.metrics.draft_acceptance_rate == 1.0
    assert len(run.new_tokens) == 25
    assert all(b == pytest.approx(1.0) for s in run.steps for b in s.beta)


def _recomputed_probs(model, ids):
    return torch.softmax(full_logits(model, ids), dim=-1)


@pytest.mark.parametrize(
    ("draft_kind", "mode"), [("random", "textbook"), ("self", "lossless"), ("adversarial", "greedy")]
)
def test_cached_scores_equal_a_recompute_without_cache(target, drafts, draft_kind, mode):
    """Every step's p and q (and top-n slices) match a cache-free forward over the confirmed
    sequence plus the draft: caches survive crops, all-accepted and all-rejected steps."""
    pair = ModelPair(HFModel(target, "target"), drafts[draft_kind], IdsCodec())
    dec = Decoder(pair, PROMPT, SpecConfig(tau=3, mode=mode, max_new_tokens=30))
    draft_model = drafts[draft_kind]
    while not dec.done:
        confirmed = list(PROMPT) + list(dec.new_tokens)
        step = dec.step()
        seq = confirmed + list(step.draft_tokens)
        p_all = _recomputed_probs(target, seq)[len(confirmed) - 1 :]
        for t, y in enumerate(step.draft_tokens):
            assert step.p[t] == pytest.approx(float(p_all[t, y]), abs=1e-12)
        assert [e.prob for e in step.next_top] == pytest.approx(
            torch.topk(p_all[step.n_accepted], len(step.next_top)).values.tolist(), abs=1e-12
        )
        if draft_kind != "adversarial":  # plain HF drafts: q recomputed without cache
            q_all = _recomputed_probs(draft_model.model, seq)[len(confirmed) - 1 :]
            for t, y in enumerate(step.draft_tokens):
                assert step.q[t] == pytest.approx(float(q_all[t, y]), abs=1e-12)
    all_accepted = {s.n_accepted == s.tau for s in dec.steps if s.tau}
    expected = {"self": {True}, "adversarial": {False}, "random": {False, True}}[draft_kind]
    assert all_accepted == expected  # all-accepted and all-rejected steps were both exercised


def test_no_step_re_encodes_the_confirmed_prefix():
    model = tiny_llama(0)
    target, draft = Wrapped(HFModel(model, "t")), Wrapped(HFModel(tiny_llama(1, layers=1), "d"))
    dec = Decoder(ModelPair(target, draft, IdsCodec()), PROMPT, SpecConfig(tau=3, max_new_tokens=40))
    assert target.fed == [len(PROMPT) - 1] and draft.fed == [len(PROMPT) - 1]  # prefill
    while not dec.done:
        target.fed.clear()
        draft.fed.clear()
        prev = dec.steps[-1] if dec.steps else None
        step = dec.step()
        assert target.fed == [1 + step.tau]  # the last confirmed token + the draft, once
        pending = 2 if prev is not None and prev.n_accepted == prev.tau else 1
        assert draft.fed == ([pending] + [1] * (step.tau - 1) if step.tau else [])


def test_same_seed_same_trace_different_seed_different_trace():
    pair = hf_pair()
    runs = [
        Decoder(pair, PROMPT, SpecConfig(tau=3, mode="lossless", seed=s, max_new_tokens=16)).run() for s in (7, 7, 8)
    ]
    strip = [[s.to_dict() | {"draft_ms": 0, "verify_ms": 0} for s in r.steps] for r in runs]
    assert strip[0] == strip[1]
    assert strip[0] != strip[2]
    assert [s.r for s in runs[0].steps] != [s.r for s in runs[2].steps]


def test_undo_restores_output_caches_and_random_state():
    pair = hf_pair()
    cfg = SpecConfig(tau=3, mode="lossless", seed=3, max_new_tokens=20)
    dec = Decoder(pair, PROMPT, cfg)
    first = [dec.step() for _ in range(3)]
    undone = dec.undo()
    assert undone == first[-1]
    assert len(dec.steps) == 2
    again = dec.step()
    assert again.draft_tokens == undone.draft_tokens and again.r == undone.r
    assert again.emitted == undone.emitted
    while dec.undo():
        pass
    assert dec.new_tokens == () and dec.steps == ()
    assert dec.step().r == first[0].r


def test_stops_at_max_new_tokens_and_never_emits_past_it():
    pair = hf_pair()
    for n in (1, 2, 7):
        run = Decoder(pair, PROMPT, SpecConfig(tau=5, max_new_tokens=n)).run()
        assert len(run.new_tokens) == n and run.stop_reason == "max_new_tokens"


def test_stops_at_eos_and_emits_it_last():
    # token 2 (the EOS) is likely under both tables, so runs end early
    p = [0.3, 0.3, 0.4]
    pair = table_pair(p, [0.4, 0.3, 0.3], eos=2)
    for seed in range(20):
        run = Decoder(pair, [0], SpecConfig(tau=4, mode="lossless", seed=seed, max_new_tokens=50)).run()
        assert run.stop_reason == "eos"
        assert run.new_tokens[-1] == 2 and 2 not in run.new_tokens[:-1]
    finished = Decoder(pair, [0], SpecConfig(max_new_tokens=1))
    finished.run()
    with pytest.raises(DecodingFinished):
        finished.step()


def test_empirical_acceptance_frequency_matches_overlap():
    """P(first draft token accepted) = Σ_y q(y) min(1, p/q) = Σ min(p, q) = β (lossless draft)."""
    p = [0.45, 0.25, 0.2, 0.1, 0.0]
    q = [0.1, 0.2, 0.3, 0.2, 0.2]
    beta = sum(min(a, b) for a, b in zip(p, q, strict=True))
    pair = table_pair(p, q)
    run = Decoder(pair, [0], SpecConfig(tau=1, mode="lossless", max_new_tokens=8000, seed=1)).run()
    freq = sum(s.n_accepted for s in run.steps) / len(run.steps)
    sigma = (beta * (1 - beta) / len(run.steps)) ** 0.5
    assert abs(freq - beta) < 4 * sigma
    assert run.metrics.alpha == pytest.approx(beta)


def test_trace_fields_are_consistent_with_spec():
    run = Decoder(hf_pair(), PROMPT, SpecConfig(tau=4, mode="textbook", max_new_tokens=40, seed=2)).run()
    for s in run.steps:
        assert s.n_accepted == sum(s.accepted)
        assert s.accepted == tuple(t < s.n_accepted for t in range(s.tau))
        for t in range(s.tau):
            assert s.ratio[t] == pytest.approx(s.p[t] / s.q[t])
            passes = s.r[t] <= s.ratio[t]
            if t < s.n_accepted:
                assert passes and s.decision[t] == "accepted"
            elif t == s.n_accepted:
                assert not passes and s.decision[t] == "rejected"
            else:
                assert s.decision[t] == "not reached"
        assert s.next_rule == ("bonus" if s.n_accepted == s.tau else "argmax")
        assert s.next_token == s.next_top[0].token  # textbook: the mode of p at n+1
        assert s.emitted == (*s.draft_tokens[: s.n_accepted], s.next_token)
        assert s.q_top[0][0].token == s.draft_tokens[0]  # greedy drafting: the mode of q
    m = run.metrics
    assert m.emitted_tokens == m.accepted_tokens + m.steps == len(run.new_tokens)
    assert list(m.per_position_acceptance_rate) == sorted(m.per_position_acceptance_rate, reverse=True)


def test_lossless_records_residual_only_when_it_resamples():
    run = Decoder(hf_pair(), PROMPT, SpecConfig(tau=3, mode="lossless", max_new_tokens=40, seed=4)).run()
    rules = {s.next_rule for s in run.steps}
    assert rules <= {"residual", "bonus"} and "residual" in rules
    for s in run.steps:
        assert (s.residual_top is not None) == (s.next_rule == "residual")
        if s.residual_top:
            # the residual puts no mass where q >= p, so never on the rejected draft token
            assert s.draft_tokens[s.n_accepted] not in [e.token for e in s.residual_top]


def test_greedy_mode_draws_no_r():
    run = Decoder(hf_pair(), PROMPT, SpecConfig(tau=2, mode="greedy", max_new_tokens=10)).run()
    assert all(r is None for s in run.steps for r in s.r)
    assert {s.next_rule for s in run.steps} <= {"greedy", "bonus"}


def test_prompt_lookup_drafter_proposes_the_continuation_of_the_last_ngram():
    drafter = PromptLookupDrafter(vocab_size=10, max_ngram=2)
    assert drafter.propose([1, 2, 3, 4, 1, 2]) == 3
    assert drafter.propose([5, 2, 7, 1, 2, 9, 3, 2]) == 9  # most recent match of "2"
    assert drafter.propose([1, 2, 3]) is None
    # a repetitive target: the drafter's one-hot q is accepted whenever the pattern repeats
    cycle = torch.zeros(10, 10, dtype=torch.float64)
    for a in range(4):
        cycle[a, (a + 1) % 4] = 1.0
    for a in range(4, 10):
        cycle[a, 0] = 1.0
    pair = ModelPair(TableModel(cycle), drafter, IdsCodec())
    run = Decoder(pair, [0, 1, 2, 3, 0], SpecConfig(tau=4, mode="greedy", max_new_tokens=20)).run()
    assert run.new_tokens == tuple([1, 2, 3, 0] * 5)
    assert run.metrics.draft_acceptance_rate == 1.0
    assert all(q == 1.0 for s in run.steps for q in s.q)


def test_prompt_lookup_without_a_match_drafts_nothing():
    pair = ModelPair(TableModel([0.5, 0.5]), PromptLookupDrafter(2), IdsCodec())
    step = Decoder(pair, [0], SpecConfig(tau=3, mode="greedy", max_new_tokens=2)).step()
    assert step.tau == 0 and step.draft_tokens == () and step.next_rule == "bonus"
    assert len(step.emitted) == 1


def test_bad_inputs_raise_typed_errors():
    with pytest.raises(ConfigError):
        SpecConfig(tau=0)
    with pytest.raises(ConfigError):
        SpecConfig(mode="fast")
    with pytest.raises(ConfigError):
        SpecConfig(top_p=0.0)
    with pytest.raises(ConfigError):
        SpecConfig(temperature=-1)
    pair = hf_pair()
    with pytest.raises(PromptError):
        Decoder(pair, "")
    with pytest.raises(PromptError):
        Decoder(pair, list(range(90)) * 6)  # longer than max_position_embeddings
    with pytest.raises(IncompatibleModelsError):
        ModelPair(TableModel([0.5, 0.5]), TableModel([0.2, 0.3, 0.5]), IdsCodec())
