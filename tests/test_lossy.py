"""The lossy rules (docs/algorithm.md, "Lossy rules"): typical acceptance,
SGLang's two thresholds on a chain, the static ensemble. Each decision is checked against numbers worked out by
hand on 3- and 4-token vocabularies, and each rule's emitted distribution o_t (specviz.core.lossy, closed form) against
an exact enumeration of the rule's own decisions through `specviz.choose` (every draft token x ~ q, the draw on or
just above the recorded threshold, every next token of the recorded distribution), never against the formula."""

from __future__ import annotations

import math

import pytest
import torch

import specviz
from specviz import choose
from specviz.core import lossy
from specviz.core.config import Knobs
from specviz.core.trace import CostTrace
from specviz.errors import ConfigError, TraceError

ABOVE = 1e-9
P = (0.5, 0.3, 0.2)
Q = (0.2, 0.3, 0.5)


def rows(*values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def vec(values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


def enumerated_first_token(rule: str, p: tuple, q: tuple, knobs: Knobs) -> list[float]:
    """The distribution of the token a τ = 1 step emits at position 1, by enumeration of the rule's own decisions:
    each draft x with q(x); the pass chance from what `choose` records (typical: its deterministic pass; the others:
    r on the threshold passes, r just above fails); on a failure, the recorded distribution of the next token (typical:
    the token itself, argmax p)."""
    out = [0.0] * len(p)
    pr, qr = rows(p, p), rows(q)
    for x, qx in enumerate(q):
        if qx == 0:
            continue
        probe = choose("lossless", [x], qr, pr, torch.Generator(), [0.0], rule, 0.5, knobs)
        chance = float(probe.passed[0]) if rule == "typical" else min(1.0, probe.threshold[0])
        out[x] += qx * chance
        if chance < 1.0:
            r = min(probe.threshold[0] + ABOVE, 1 - 1e-12)
            failed = choose("lossless", [x], qr, pr, torch.Generator(), [r], rule, 0.5, knobs)
            assert failed.n == 0
            dist = (failed.dist / failed.dist.sum()).tolist()
            if failed.rule == "argmax":  # no draw: the token itself
                dist = [float(v == failed.token) for v in range(len(p))]
            for v, mass in enumerate(dist):
                out[v] += qx * (1.0 - chance) * mass
    return out


# --- typical acceptance -------------------------------------------------------------------------------------------


def test_typical_acceptance_keeps_tokens_above_min_eps_delta_exp_minus_h_and_recovers_the_argmax():
    """p = (0.5, 0.45, 0.05): H = −(0.5·ln 0.50001 + 0.45·ln 0.45001 + 0.05·ln 0.05001) = 0.3466 + 0.3593 + 0.1498
    = 0.8557, δ·exp(−H) = 0.3·0.4250 = 0.1275, so the threshold is ε = 0.09. ŷ = 1 (0.45 > 0.09) is kept whatever
    r says; ŷ = 2 (0.05 ≤ 0.09) is not, and the next token is argmax p = 0 (no draw)."""
    p, q = rows((0.5, 0.45, 0.05), (0.2, 0.2, 0.6)), rows((0.2, 0.3, 0.5))
    assert lossy.typical_threshold(p[0], Knobs()) == pytest.approx(0.09)
    kept = choose("lossless", [1], q, p, torch.Generator(), [0.999], "typical")
    assert (kept.n, kept.passed, kept.rule) == (1, (True,), "bonus")
    cut = choose("lossless", [2], q, p, torch.Generator(), [0.0], "typical")
    assert (cut.n, cut.passed, cut.token, cut.rule) == (0, (False,), 0, "argmax")


def test_typical_acceptance_uses_the_entropy_branch_on_a_flat_row():
    """p = (0.3, 0.3, 0.3, 0.1): H = −(3·0.3·ln 0.30001 + 0.1·ln 0.10001) = 1.08355 + 0.23025 = 1.31379,
    δ·exp(−H) = 0.3·0.26880 = 0.080641 < ε = 0.09: the threshold is 0.080641, so p = 0.1 is kept (and would not be at
    a threshold of 0.1)."""
    p = rows((0.3, 0.3, 0.3, 0.1), (0.25,) * 4)
    assert lossy.typical_threshold(p[0], Knobs()) == pytest.approx(0.080641, abs=2e-6)
    assert lossy.typical_threshold(p[0], Knobs(posterior_alpha=1.0, posterior_threshold=0.1)) == pytest.approx(0.1)
    step = choose("lossless", [3], rows((0.1, 0.1, 0.1, 0.7)), p, torch.Generator(), [0.5], "typical")
    assert step.n == 1


def test_typical_acceptances_emitted_distribution_and_its_distance_by_hand():
    """p = (0.5, 0.45, 0.05), q = (0.2, 0.3, 0.5), threshold 0.09: a = (1, 1, 0), so o = (0.2, 0.3, 0) + 0.5 at
    argmax p = (0.7, 0.3, 0); TV(o, p) = ½(0.2 + 0.15 + 0.05) = 0.2."""
    p, q = (0.5, 0.45, 0.05), (0.2, 0.3, 0.5)
    o = lossy.emitted("typical", vec(p), vec(q), Knobs())
    assert o.tolist() == pytest.approx([0.7, 0.3, 0.0])
    assert enumerated_first_token("typical", p, q, Knobs()) == pytest.approx([0.7, 0.3, 0.0])
    assert lossy.tv(o, vec(p)) == pytest.approx(0.2)


# --- SGLang's thresholds ------------------------------------------------------------------------------------------


def test_sglang_thresholds_at_a_half_keep_p_over_t_acc_or_anything_above_t_single():
    """t_s = t_a = 0.5, p = (0.5, 0.3, 0.2): ŷ = 0 has p ≥ t_s, kept whatever r; ŷ = 1 is kept while
    r ≤ 0.3/0.5 = 0.6 (one-hot: r ≤ 0.3); ŷ = 2 while r ≤ 0.4. A failure samples p without ŷ: (5/7, 0, 2/7)."""
    knobs = Knobs(threshold_single=0.5, threshold_acc=0.5)
    p, q = rows(P, P), rows(Q)
    sure = choose("lossless", [0], q, p, torch.Generator(), [0.999], "sglang", knobs=knobs)
    assert (sure.n, sure.threshold) == (1, (1.0,))
    kept = choose("lossless", [1], q, p, torch.Generator(), [0.55], "sglang", knobs=knobs)
    assert (kept.n, kept.threshold) == (1, pytest.approx((0.6,)))
    assert choose("lossless", [1], q, p, torch.Generator(), [0.55], "one-hot").n == 0  # lossless: r > 0.3
    cut = choose("lossless", [1], q, p, torch.Generator(), [0.61], "sglang", knobs=knobs)
    assert (cut.n, cut.rule) == (0, "residual")
    assert cut.dist.tolist() == pytest.approx([5 / 7, 0.0, 2 / 7])


def test_sglangs_emitted_distribution_at_a_half_by_hand():
    """t_s = t_a = 0.5, p = (0.5, 0.3, 0.2), q = (0.2, 0.3, 0.5): a = (1, 0.6, 0.4);
    c(x) = q(x)(1 − a(x))/(1 − p(x)) = (0, 0.3·0.4/0.7, 0.5·0.6/0.8) = (0, 6/35, 3/8), C = 153/280;
    o(v) = q(v)a(v) + p(v)(C − c(v)) = (0.2 + 0.5·153/280, 0.18 + 0.3·105/280, 0.2 + 0.2·48/280)
         = (53/112, 0.2925, 41/175); TV(o, p) = ½(|53/112 − 1/2| + 0.0075 + 6/175) = 6/175 ≈ 0.0343."""
    knobs = Knobs(threshold_single=0.5, threshold_acc=0.5)
    o = lossy.emitted("sglang", vec(P), vec(Q), knobs)
    assert o.tolist() == pytest.approx([53 / 112, 0.2925, 41 / 175])
    assert enumerated_first_token("sglang", P, Q, knobs) == pytest.approx([53 / 112, 0.2925, 41 / 175])
    assert lossy.tv(o, vec(P)) == pytest.approx(6 / 175)


def test_sglang_at_its_defaults_is_the_one_hot_rule():
    """t_s = t_a = 1: the threshold is p(ŷ) (1 only where p(ŷ) = 1), the same decision, next token and o = p."""
    p, q = rows(P, (0.1, 0.1, 0.8), (0.3, 0.3, 0.4)), rows(Q, (0.6, 0.2, 0.2))
    for r in ([0.1, 0.1], [0.45, 0.05], [0.2, 0.5]):
        a = choose("lossless", [1, 0], q, p, torch.Generator(), r, "sglang", 0.3)
        b = choose("lossless", [1, 0], q, p, torch.Generator(), r, "one-hot", 0.3)
        assert (a.n, a.threshold, a.token) == (b.n, b.threshold, b.token)
    assert lossy.tv(lossy.emitted("sglang", vec(P), vec(Q), Knobs()), vec(P)) == pytest.approx(0.0, abs=1e-15)


# --- the static ensemble ------------------------------------------------------------------------------------------


def test_the_ensemble_verifies_against_the_mixture_with_w_on_the_target():
    """transformers' assistant_ensemble_weight w = 0.7 weights the target: m = 0.7·(0.5, 0.3, 0.2) + 0.3·(0.2, 0.3,
    0.5) = (0.41, 0.3, 0.29). ŷ = 2 is kept while r ≤ 0.29/0.5 = 0.58 (token-wise: 0.2/0.5 = 0.4); a failure
    samples norm(max(0, m − q)) = (0.21, 0, 0)/0.21: token 0. The output follows m: TV(m, p) = ½(0.09 + 0 + 0.09) =
    0.09 = (1 − w)·TV(q, p) = 0.3·0.3."""
    knobs = Knobs(ensemble_weight=0.7)
    p, q = rows(P, P), rows(Q)
    step = choose("lossless", [2], q, p, torch.Generator(), [0.5], "ensemble", knobs=knobs)
    assert (step.n, step.threshold) == (1, pytest.approx((0.58,)))
    cut = choose("lossless", [2], q, p, torch.Generator(), [0.59], "ensemble", knobs=knobs)
    assert (cut.n, cut.token, cut.rule) == (0, 0, "residual")
    assert cut.dist.tolist() == pytest.approx([1.0, 0.0, 0.0])
    o = lossy.emitted("ensemble", vec(P), vec(Q), knobs)
    assert o.tolist() == pytest.approx([0.41, 0.3, 0.29])
    assert enumerated_first_token("ensemble", P, Q, knobs) == pytest.approx([0.41, 0.3, 0.29])
    assert lossy.tv(o, vec(P)) == pytest.approx(0.09)


# --- the cost is zero for the lossless rules ----------------------------------------------------------------------


@pytest.mark.parametrize("rule", ["token", "one-hot"])
@pytest.mark.parametrize("seed", range(4))
def test_the_lossless_rules_emit_p_exactly(rule, seed):
    """Over the draft's draw, token-wise and one-hot emit p itself at every position: TV 0 (within rounding), by the
    closed form and by enumerating the rule's own decisions. (Block is lossless over the whole block, Sun et al.;
    the lossless check covers it.)"""
    gen = torch.Generator().manual_seed(seed)
    p = torch.softmax(2 * torch.randn(4, generator=gen, dtype=torch.float64), -1)
    q = torch.softmax(2 * torch.randn(4, generator=gen, dtype=torch.float64), -1)
    assert lossy.tv(lossy.emitted(rule, p, q, Knobs()), p) < 1e-12
    enumerated = enumerated_first_token(rule, tuple(p.tolist()), tuple(q.tolist()), Knobs())
    assert enumerated == pytest.approx(p.tolist(), abs=1e-9)


# --- a step's cost record and a run's -----------------------------------------------------------------------------


def test_a_steps_cost_record_by_hand():
    """Draft (1, 0) under SGLang at 0.5, with p = (0.5, 0.3, 0.2) then (0.1, 0.1, 0.8): position 1 keeps ŷ = 1 with
    0.6 (one-hot: 0.3), position 2 keeps ŷ = 0 with 0.1/0.5 = 0.2 (one-hot 0.1). Tokens per pass on this draft:
    1 + 0.6 + 0.6·0.2 = 1.72 against 1 + 0.3 + 0.03 = 1.33: 0.39 more."""
    knobs = Knobs(threshold_single=0.5, threshold_acc=0.5)
    p, q = rows(P, (0.1, 0.1, 0.8), (0.3, 0.3, 0.4)), rows(Q, (0.6, 0.2, 0.2))
    cost = lossy.cost_of("sglang", [1, 0], q, p, knobs)
    assert (cost.rule, cost.baseline) == ("sglang", "one-hot")
    assert cost.accept == pytest.approx((0.6, 0.2)) and cost.baseline_accept == pytest.approx((0.3, 0.1))
    assert cost.tokens_per_pass == pytest.approx(1.72) and cost.baseline_tokens_per_pass == pytest.approx(1.33)
    assert cost.tv[0] == pytest.approx(6 / 175)
    assert cost.decided(0) == cost.tv[:1] and cost.decided(2) == cost.tv


def test_a_run_records_its_cost_per_step_and_per_run_and_round_trips():
    from tests.helpers import hf_pair

    pair = hf_pair()
    half = {"threshold_single": 0.5, "threshold_acc": 0.5}
    config = specviz.SpecConfig(tau=3, mode="lossless", verification="sglang", seed=4, max_new_tokens=12, **half)
    run = specviz.Decoder(pair, [1, 2, 3], config).run()
    assert all(s.cost is not None and s.verify is not None for s in run.steps if s.tau)
    for s in run.steps:
        assert s.cost.accept == pytest.approx(s.verify.threshold)
        assert s.cost.baseline_accept == pytest.approx(s.p)  # one-hot keeps ŷ with p(ŷ)
        assert all(a >= b for a, b in zip(s.cost.accept, s.cost.baseline_accept, strict=True))
    decided = [d for s in run.steps for d in s.cost.tv[: s.n_accepted + 1]]
    assert run.metrics.tv_mean == pytest.approx(sum(decided) / len(decided)) and run.metrics.tv_max == max(decided)
    assert run.metrics.lossy_tokens_per_pass >= run.metrics.baseline_tokens_per_pass
    assert specviz.RunTrace.from_json(run.to_json()).to_dict() == run.to_dict()
    assert specviz.RunTrace.from_frame(run.to_frame()).to_dict() == run.to_dict()
    lossless = specviz.Decoder(pair, [1, 2, 3], specviz.SpecConfig(tau=3, mode="lossless", max_new_tokens=6)).run()
    assert lossless.metrics.tv_mean is None and all(s.cost is None for s in lossless.steps)


@pytest.mark.parametrize("rule", ["typical", "ensemble"])
def test_each_lossy_rules_run_passes_the_saved_trace_check(rule):
    from tests.helpers import hf_pair

    config = specviz.SpecConfig(tau=2, mode="lossless", verification=rule, seed=1, max_new_tokens=8)
    run = specviz.Decoder(hf_pair(), [1, 2, 3], config).run()
    assert specviz.RunTrace.from_json(run.to_json()).to_dict() == run.to_dict()


def test_a_tampered_cost_is_refused():
    from tests.helpers import hf_pair

    config = specviz.SpecConfig(tau=2, mode="lossless", verification="sglang", seed=1, max_new_tokens=6)
    data = specviz.Decoder(hf_pair(), [1, 2, 3], config).run().to_dict()
    data["steps"][0]["cost"]["baseline_accept"] = [1.0] * data["steps"][0]["tau"]
    with pytest.raises(TraceError, match="one-hot chance"):
        specviz.RunTrace.from_dict(data)
    del data["steps"][0]["cost"]
    with pytest.raises(TraceError, match="cost record"):
        specviz.RunTrace.from_dict(data)


def test_the_lossy_settings_are_checked_and_saved_only_when_set():
    config = specviz.SpecConfig(mode="lossless", verification="sglang", threshold_acc=0.5)
    assert config.lossy and config.knobs.threshold_acc == 0.5
    assert config.to_dict()["threshold_acc"] == 0.5 and "threshold_single" not in config.to_dict()
    assert "ensemble_weight" not in specviz.SpecConfig().to_dict()
    with pytest.raises(ConfigError, match="lossless mode"):
        specviz.SpecConfig(verification="typical")
    with pytest.raises(ConfigError, match="chains"):
        specviz.SpecConfig(mode="lossless", verification="typical", topk=2, steps=2, num_draft_tokens=3)
    with pytest.raises(ConfigError, match="threshold_acc"):
        specviz.SpecConfig(mode="lossless", verification="sglang", threshold_acc=0.0)
    with pytest.raises(ConfigError, match="ensemble_weight"):
        specviz.SpecConfig(mode="lossless", verification="ensemble", ensemble_weight=1.5)


def test_cost_records_expected_length_by_hand():
    cost = CostTrace(rule="typical", baseline="one-hot", accept=(1.0, 1.0, 0.0), baseline_accept=(0.5, 0.5, 0.5), tv=())
    assert cost.tokens_per_pass == 3.0  # 1 + 1 + 1 + 0
    assert math.isclose(cost.baseline_tokens_per_pass, 1.875)  # 1 + 0.5 + 0.25 + 0.125


# --- SGLang's thresholds on a tree -------------------------------------------------------------------------------


def sglang_tree():
    """Two children at the root (tokens 1 then 2), p at the root (0.5, 0.3, 0.2), each child a leaf."""
    from specviz.core.tree import DraftTree

    tree = DraftTree()
    for rank, token in enumerate((1, 2), 1):
        tree.add(-1, token, 0.0, rank)
    tree.dist[-1] = vec((0.2, 0.3, 0.5))
    return tree, rows(P, (0.1, 0.8, 0.1), (0.6, 0.2, 0.2))


def test_sglangs_tree_walk_shares_one_coin_per_level_against_the_running_sum():
    """sgl-kernel's TreeSpeculativeSamplingTargetOnly: u = 0.7, the first child's draw, for both children; the running
    sum of p includes the child tried. t_a = 0.5: child 1 (p .3) s = .3, .3/.5 = .6 < .7, rejected; child 2 (p .2)
    s = .5, .5/.5 = 1 ≥ .7, kept (the one-hot walk tests child 2 with its own draw, .5 > p′(2) = .2/.7 = .29: rejected).
    t_a = 0.8: .375 and .625, both below .7: the next token from p without both children, (1, 0, 0): token 0.
    t_s = 0.25 keeps child 1 outright (.3 ≥ .25). The second child's own draw (0.5) is never read."""
    from specviz.core.tree import walk

    tree, p = sglang_tree()
    r = [0.7, 0.5]
    w = walk("lossless", tree, p, r, torch.Generator(), "sglang", Knobs(threshold_acc=0.5))
    assert (w.path, w.decision, w.rule) == ((1,), ("rejected", "accepted"), "bonus")
    assert w.ratio == pytest.approx((0.6, 1.0)) and w.coins == {0: 0.7, 1: 0.7}
    assert walk("lossless", tree, p, r, torch.Generator(), "one-hot").decision == ("rejected", "rejected")
    cut = walk("lossless", tree, p, r, torch.Generator(), "sglang", Knobs(threshold_acc=0.8))
    assert (cut.path, cut.decision, cut.token, cut.rule) == ((), ("rejected", "rejected"), 0, "residual")
    assert cut.dist.tolist() == pytest.approx([1.0, 0.0, 0.0])
    sure = walk("lossless", tree, p, r, torch.Generator(), "sglang", Knobs(threshold_single=0.25))
    assert sure.path == (0,) and sure.ratio[0] >= 1.0


def test_a_tree_run_under_sglangs_thresholds_records_the_shared_coins_and_round_trips():
    from tests.helpers import hf_pair

    half = {"threshold_single": 0.5, "threshold_acc": 0.5}
    shape = {"topk": 2, "steps": 2, "num_draft_tokens": 4}
    config = specviz.SpecConfig(mode="lossless", verification="sglang", seed=2, max_new_tokens=10, **shape, **half)
    run = specviz.Decoder(hf_pair(), [1, 2, 3], config).run()
    for step in run.steps:
        nodes = step.tree.nodes
        for node in nodes:
            if node.decision != "not tested":
                first = step.tree.children(node.parent)[0]
                assert node.r == nodes[first].r  # one coin per level
    assert specviz.RunTrace.from_json(run.to_json()).to_dict() == run.to_dict()
