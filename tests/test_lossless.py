"""Statistical tests of SPEC.md's central facts, on exact table models:
lossless mode emits exactly the target's distribution (first token and whole sequences),
textbook mode with sampling does not, and the chi-square test is strong enough to tell."""

import itertools

import pytest
import torch
from scipy.stats import chisquare

from specviz import Decoder, SpecConfig
from specviz.theory import first_token_distribution
from tests.helpers import table_pair

TRIALS = 20_000
SPEC_P, SPEC_Q = [0.5, 0.3, 0.2], [0.2, 0.2, 0.6]


def first_tokens_per_step(p, q, mode, tau, seed=0, trials=TRIALS):
    """The first token emitted by each of `trials` steps; with context-free tables the steps
    are independent repetitions of one speculative step."""
    dec = Decoder(table_pair(p, q), [0], SpecConfig(tau=tau, mode=mode, seed=seed, max_new_tokens=100_000))
    return [dec.step().emitted[0] for _ in range(trials)]


def chi_square_pvalue(samples, expected_probs):
    """Chi-square goodness of fit; a sample outside the support is an outright failure (p = 0)."""
    counts = torch.bincount(torch.tensor(samples), minlength=len(expected_probs)).double()
    expected = torch.tensor(expected_probs, dtype=torch.float64) * len(samples)
    support = expected > 0
    if counts[~support].sum() > 0:
        return 0.0
    return chisquare(counts[support].numpy(), expected[support].numpy()).pvalue


@pytest.mark.parametrize(
    ("p", "q", "tau"),
    [
        (SPEC_P, SPEC_Q, 1),
        (SPEC_P, SPEC_Q, 4),
        ([0.35, 0.25, 0.2, 0.15, 0.05], [0.1, 0.3, 0.3, 0.2, 0.1], 2),
        # q(y) = 0 < p(y) for token 0, p(y) = 0 < q(y) for tokens 3 and 4
        ([0.4, 0.3, 0.3, 0.0, 0.0], [0.0, 0.2, 0.3, 0.25, 0.25], 3),
        # q is nearly p's opposite; residual resampling does most of the work
        ([0.7, 0.2, 0.1, 0.0, 0.0], [0.0, 0.0, 0.1, 0.4, 0.5], 2),
    ],
)
def test_lossless_first_token_follows_p(p, q, tau):
    samples = first_tokens_per_step(p, q, "lossless", tau)
    assert chi_square_pvalue(samples, p) > 1e-3


def test_lossless_joint_of_first_three_tokens_matches_target():
    """Sequence level, on bigram tables: P(y1, y2, y3) = p(y1|x) p(y2|y1) p(y3|y2)."""
    p = torch.tensor(
        [[0.1, 0.4, 0.3, 0.2], [0.5, 0.1, 0.2, 0.2], [0.25, 0.25, 0.25, 0.25], [0.3, 0.0, 0.3, 0.4]],
        dtype=torch.float64,
    )
    q = torch.tensor(
        [[0.4, 0.1, 0.1, 0.4], [0.1, 0.6, 0.2, 0.1], [0.7, 0.1, 0.1, 0.1], [0.1, 0.3, 0.3, 0.3]],
        dtype=torch.float64,
    )
    pair = table_pair(p, q)
    cells = list(itertools.product(range(4), repeat=3))
    index = {c: i for i, c in enumerate(cells)}
    exact = [float(p[0, a] * p[a, b] * p[b, c]) for a, b, c in cells]
    samples = []
    for seed in range(TRIALS):
        run = Decoder(pair, [0], SpecConfig(tau=2, mode="lossless", seed=seed, max_new_tokens=3)).run()
        samples.append(index[run.new_tokens])
    assert chi_square_pvalue(samples, exact) > 1e-3


def test_textbook_with_sampling_is_biased_and_the_test_detects_it():
    samples = first_tokens_per_step(SPEC_P, SPEC_Q, "textbook", tau=2)
    counts = torch.bincount(torch.tensor(samples), minlength=3).tolist()
    assert counts[1] == 0  # token 1 (p = .3) can never be emitted first
    assert chi_square_pvalue(samples, SPEC_P) < 1e-10  # the lossless test's check fails...
    # ...and the emitted distribution is the one derived by hand: greedy draft = token 2,
    # accepted with probability p/q = 1/3, else the correction is argmax p = token 0
    derived = first_token_distribution(SPEC_P, SPEC_Q, "textbook")
    assert derived == pytest.approx([2 / 3, 0.0, 1 / 3])
    assert chi_square_pvalue(samples, derived) > 1e-3


def test_chi_square_has_power_against_the_spec_example_bias():
    """SPEC.md's sampled-draft example [.6, .2, .2] against p = [.5, .3, .2]: at 20,000 trials
    a sample from the biased distribution is rejected."""
    gen = torch.Generator().manual_seed(0)
    biased = torch.multinomial(torch.tensor([0.6, 0.2, 0.2]), TRIALS, replacement=True, generator=gen)
    assert chi_square_pvalue(biased.tolist(), SPEC_P) < 1e-10


def test_greedy_mode_always_emits_the_mode_of_p():
    samples = first_tokens_per_step(SPEC_P, SPEC_Q, "greedy", tau=3, trials=500)
    assert set(samples) == {0}
