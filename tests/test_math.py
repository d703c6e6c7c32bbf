"""Pure math: the acceptance rule, warping, sampling, residual, overlap and the theory formulas,
each against values computed by hand from docs/algorithm.md."""

import math

import pytest
import torch

from specviz import acceptance_length
from specviz.analysis.theory import (
    acceptance_length_pmf,
    best_tau,
    expected_speedup,
    expected_tokens_per_step,
    first_token_distribution,
)
from specviz.core.sampling import logits_to_probs, overlap, residual, sample


def test_acceptance_length_design_example():
    # r1 = .4 <= .7, r2 = .8 <= .9, r3 = .6 > .5: the third token is the first rejected
    assert acceptance_length(r=[0.4, 0.8, 0.6], ratio=[0.7, 0.9, 0.5]) == 2


def test_acceptance_length_first_token_rejected_gives_zero():
    assert acceptance_length(r=[0.95, 0.1, 0.1], ratio=[0.9, 1.0, 1.0]) == 0


def test_acceptance_length_no_rejection_gives_tau():
    assert acceptance_length(r=[0.3, 0.99, 0.5, 0.0], ratio=[0.3, 1.5, 0.5, 0.0]) == 4


def test_tokens_after_first_rejection_do_not_count():
    # the 2nd token is rejected; the 3rd and 4th would pass their own test but are discarded
    assert acceptance_length(r=[0.1, 0.9, 0.1, 0.1], ratio=[1.0, 0.5, 1.0, 1.0]) == 1


def test_q_greater_than_p_is_not_automatically_rejected():
    # p/q = 0.75 < 1, yet r = 0.7 <= 0.75: accepted (docs/algorithm.md, step 3)
    assert acceptance_length(r=[0.7], ratio=[0.6 / 0.8]) == 1
    assert acceptance_length(r=[0.76], ratio=[0.6 / 0.8]) == 0


def test_acceptance_length_rejects_mismatched_lengths():
    with pytest.raises(ValueError):
        acceptance_length(r=[0.1, 0.2], ratio=[0.5])


def test_temperature_zero_is_one_hot_argmax_first_on_ties():
    probs = logits_to_probs(torch.tensor([1.0, 3.0, 3.0, -2.0]), temperature=0.0)
    assert probs.tolist() == [0.0, 1.0, 0.0, 0.0]


def test_temperature_scales_logits():
    logits = torch.tensor([0.0, math.log(3.0)])
    assert logits_to_probs(logits, temperature=1.0).tolist() == pytest.approx([0.25, 0.75])
    # at T = 0.5 the odds are squared: 1 : 9
    assert logits_to_probs(logits, temperature=0.5).tolist() == pytest.approx([0.1, 0.9])


def test_top_k_keeps_k_most_likely():
    probs = logits_to_probs(torch.log(torch.tensor([0.1, 0.4, 0.3, 0.2])), top_k=2)
    assert probs.tolist() == pytest.approx([0.0, 4 / 7, 3 / 7, 0.0])


def test_top_p_keeps_smallest_set_reaching_mass():
    base = torch.log(torch.tensor([0.1, 0.4, 0.3, 0.2]))
    # sorted .4, .3, .2, .1: .4 + .3 = .7 reaches .7, so two tokens are kept
    assert logits_to_probs(base, top_p=0.7).tolist() == pytest.approx([0.0, 4 / 7, 3 / 7, 0.0])
    # .75 needs the third token too
    assert logits_to_probs(base, top_p=0.75).tolist() == pytest.approx([0.0, 4 / 9, 3 / 9, 2 / 9])
    # a tiny top_p always keeps the most likely token
    assert logits_to_probs(base, top_p=0.01).tolist() == pytest.approx([0.0, 1.0, 0.0, 0.0])


def test_sample_follows_distribution_and_never_draws_zero_mass():
    gen = torch.Generator().manual_seed(0)
    probs = torch.tensor([0.0, 0.5, 0.0, 0.25, 0.25], dtype=torch.float64)
    counts = torch.zeros(5)
    for _ in range(4000):
        counts[sample(probs, gen)] += 1
    assert counts[0] == counts[2] == 0
    assert counts[1] / 4000 == pytest.approx(0.5, abs=0.04)
    assert counts[3] / 4000 == pytest.approx(0.25, abs=0.04)


def test_residual_and_overlap_by_hand():
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    q = torch.tensor([0.2, 0.2, 0.6], dtype=torch.float64)
    # max(0, p - q) = [.3, .1, 0], normalised by .4
    assert residual(p, q).tolist() == pytest.approx([0.75, 0.25, 0.0])
    assert float(overlap(p, q)) == pytest.approx(0.6)
    assert residual(p, p).tolist() == pytest.approx(p.tolist())


def test_expected_tokens_per_step():
    assert expected_tokens_per_step(0.8, 5) == pytest.approx(3.69, abs=0.005)
    assert expected_tokens_per_step(1.0, 7) == 8.0
    assert expected_tokens_per_step(0.0, 7) == 1.0


def test_speedup_and_best_tau():
    # T5-XXL anchor of Leviathan et al.: α = 0.75 with small c favours τ around 7
    alpha, c = 0.8, 0.05
    speeds = [expected_speedup(alpha, t, c) for t in range(1, 17)]
    assert best_tau(alpha, c) == 1 + speeds.index(max(speeds))
    assert expected_speedup(alpha, 1, 0.0) == pytest.approx(1.8)
    # speculation helps for some τ iff α > c
    assert max(expected_speedup(0.3, t, 0.35) for t in range(1, 17)) < 1.0
    assert max(expected_speedup(0.4, t, 0.35) for t in range(1, 17)) > 1.0
    # with c near 0 larger τ always helps; with c large, τ = 1 is best
    assert best_tau(0.9, 0.001) == 16
    assert best_tau(0.5, 0.45) == 1


def test_acceptance_length_pmf():
    pmf = acceptance_length_pmf(0.6, 3)
    assert pmf == pytest.approx([0.4, 0.24, 0.144, 0.216])
    assert sum(pmf) == pytest.approx(1.0)
    mean = sum(k * pk for k, pk in enumerate(pmf))
    assert 1 + mean == pytest.approx(expected_tokens_per_step(0.6, 3))


def test_first_token_distribution_spec_example():
    p, q = [0.5, 0.3, 0.2], [0.2, 0.2, 0.6]
    assert first_token_distribution(p, q, "textbook-sampled") == pytest.approx([0.6, 0.2, 0.2])
    assert first_token_distribution(p, q, "lossless") == pytest.approx(p)
    assert first_token_distribution(p, q, "greedy") == [1.0, 0.0, 0.0]
    # greedy drafting proposes token 2 (q = .6), accepted with probability .2/.6
    assert first_token_distribution(p, q, "textbook") == pytest.approx([2 / 3, 0.0, 1 / 3])
