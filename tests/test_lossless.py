"""Statistical tests of docs/algorithm.md's central facts, on exact table models:
lossless mode emits exactly the target's distribution (first token and whole sequences),
textbook mode with sampling does not, and the chi-square test is strong enough to tell."""

import itertools

import pytest
import torch
from scipy.stats import chisquare

from specviz import Decoder, SpecConfig, load_pair
from specviz.analysis.lossless import MIN_EXPECTED, check, first_tokens, reference
from specviz.analysis.theory import first_token_distribution
from tests.helpers import table_pair

pytestmark = pytest.mark.numeric  # no clock read: `make test` runs its slow tests on both cores (pyproject.toml)

# A 0.1% test fails a correct engine once in 1,000 runs whatever the count; 8,000 steps still reject the
# textbook bias by far (p < 1e-10) and a wrong residual (docs/algorithm.md's sampled-draft example, p ≈ 1e-90).
TRIALS = 8_000
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


@pytest.mark.slow  # 8,000 repetitions: in `make test`, not in `make test-fast`
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


@pytest.mark.slow  # 8,000 repetitions: in `make test`, not in `make test-fast`
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


@pytest.mark.slow  # 8,000 repetitions: in `make test`, not in `make test-fast`
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
    """docs/algorithm.md's sampled-draft example [.6, .2, .2] against p = [.5, .3, .2]: at 8,000 trials
    a sample from the biased distribution is rejected."""
    gen = torch.Generator().manual_seed(0)
    biased = torch.multinomial(torch.tensor([0.6, 0.2, 0.2]), TRIALS, replacement=True, generator=gen)
    assert chi_square_pvalue(biased.tolist(), SPEC_P) < 1e-10


def test_greedy_mode_always_emits_the_mode_of_p():
    samples = first_tokens_per_step(SPEC_P, SPEC_Q, "greedy", tau=3, trials=500)
    assert set(samples) == {0}


# --- the check the "Is it lossless?" page shows (specviz.analysis.lossless.check) -------------------------


def long_tail(rare: int = 300) -> tuple[torch.Tensor, torch.Tensor]:
    """p: three common tokens (.25, .15, .10) and `rare` tokens sharing .5 with Zipf weights, so at
    a few hundred trials almost every token is expected fewer than 5 times; q: a different shape."""
    gen = torch.Generator().manual_seed(7)
    zipf = 1 / torch.arange(1, rare + 1, dtype=torch.float64) ** 1.1
    p = torch.cat([torch.tensor([0.25, 0.15, 0.10], dtype=torch.float64), 0.5 * zipf / zipf.sum()])
    q = torch.cat([torch.tensor([0.05, 0.3, 0.05], dtype=torch.float64), torch.rand(rare, generator=gen).double()])
    return p, q / q.sum()


@pytest.mark.slow
def test_the_page_check_has_size_and_power_on_a_long_tail():
    """102 seeds × 300 trials of the first step, through the engine: lossless (each verification rule on a third
    of the seeds: token-wise, one-hot q, block) is called consistent in at least 97 (a 1% test should err about
    once), at least 32 of 34 under each rule; textbook with sampling flagged in at least 97 of 102.
    (The check that gave every observed token a cell of its own called lossless 'differs' 100 times.)"""
    p, q = long_tail()
    pair = table_pair(p, q)
    assert int((p * 300 < MIN_EXPECTED).sum()) > 290  # hundreds of rare tokens
    rules = ("token", "one-hot", "block")
    verdicts = {("textbook", "token"): 0, **{("lossless", rule): 0 for rule in rules}}
    for seed in range(102):
        for mode, rule in (("textbook", "token"), ("lossless", rules[seed % 3])):
            config = SpecConfig(tau=2, mode=mode, seed=1000 * seed, verification=rule)
            result = check(mode, list(first_tokens(pair, [0], config, 300)), reference(pair, [0], config))
            verdicts[mode, rule] += result.consistent
    assert sum(verdicts["lossless", rule] for rule in rules) >= 97
    assert all(verdicts["lossless", rule] >= 32 for rule in rules), verdicts
    assert verdicts["textbook", "token"] <= 5


@pytest.mark.parametrize("rare", [50, 1000, 20_000])
def test_false_alarms_stay_near_the_significance_level(rare):
    """Samples drawn from p itself, 400 seeds: the 1% test raises at most 3% false alarms, whatever
    the length of the tail (a 49,152-token vocabulary included)."""
    p, _ = long_tail(rare)
    gen = torch.Generator().manual_seed(rare)
    alarms = sum(
        not check("lossless", torch.multinomial(p, 200, replacement=True, generator=gen).tolist(), p).consistent
        for _ in range(400)
    )
    assert alarms <= 12


def test_power_against_mass_moved_between_common_tokens():
    """Half of the second token's mass moved to the first (p .25/.15 → .325/.075): flagged at
    2,000 trials in at least 95 of 100 seeds."""
    p, _ = long_tail()
    shifted = p.clone()
    shifted[0], shifted[1] = 0.325, 0.075
    gen = torch.Generator().manual_seed(0)
    flagged = sum(
        not check("lossless", torch.multinomial(shifted, 2000, replacement=True, generator=gen).tolist(), p).consistent
        for _ in range(100)
    )
    assert flagged >= 95


def test_pooled_cells_worked_by_hand():
    """p = [.5, .3, .1, .06, .04] at 50 trials expects 25, 15, 5, 3, 2: tokens 3 and 4 pool into one
    cell expected 5 times. Observed 20, 20, 5, 4, 1 → chi² = 25/25 + 25/15 + 0 + 0 = 8/3 on 3 dof."""
    p = torch.tensor([0.5, 0.3, 0.1, 0.06, 0.04], dtype=torch.float64)
    samples = [0] * 20 + [1] * 20 + [2] * 5 + [3] * 4 + [4]
    result = check("lossless", samples, p)
    assert result.dof == 3 and result.pooled == 2
    assert result.chi2 == pytest.approx(8 / 3)
    assert result.p_value == pytest.approx(chisquare([20, 20, 5, 5], [25, 15, 5, 5]).pvalue)
    assert result.consistent
    # a pooled cell expected under 5 joins the smallest cell: at 20 trials 10, 6 | 2, 1.2, .8 (4)
    small = check("lossless", [0] * 13 + [1] * 4 + [2] * 2 + [3], p)
    assert small.dof == 1  # cells {0} and {1, 2, 3, 4}, each expected 10; observed 13 and 7
    assert small.chi2 == pytest.approx(9 / 10 + 9 / 10)
    # a token the target cannot emit fails at once
    assert check("lossless", [0, 1, 5], torch.tensor([0.5, 0.5, 0, 0, 0, 0], dtype=torch.float64)).p_value == 0.0


def test_too_few_trials_say_so():
    p, _ = long_tail()
    result = check("lossless", [0, 1, 2, 5], p)  # 4 trials: nothing is expected 5 times
    assert result.consistent and result.dof == 0
    assert "too few trials" in result.verdict()


@pytest.mark.slow
def test_on_the_real_pair_at_the_pages_defaults(embedded_cache):
    """The page's real-model defaults (τ = 2, T = 1, 200 trials, seed 0, "The cat sat on the",
    chat template as the model defaults): textbook is flagged; lossless is not, under any verification rule.
    On torch-kernels, the fastest runtime that needs no build (800 steps: a third of torch's time)."""
    pair = load_pair("embedded", "embedded", runtime="torch-kernels")
    cases = [("textbook", "token", False), *(("lossless", rule, True) for rule in ("token", "one-hot", "block"))]
    for mode, rule, consistent in cases:
        config = SpecConfig(tau=2, mode=mode, temperature=1.0, verification=rule)
        samples = list(first_tokens(pair, "The cat sat on the", config, 200))
        result = check(mode, samples, reference(pair, "The cat sat on the", config))
        assert result.consistent is consistent, (rule, result.verdict())


# --- the lossy rules (docs/algorithm.md, "Lossy rules"): rejected with power, by the same check -------------------

LOSSY = {  # the page's lossy variants (specviz.analysis.lossless.VARIANTS)
    "typical": {},
    "sglang": {"threshold_single": 0.5, "threshold_acc": 0.5},
    "ensemble": {"ensemble_weight": 0.7},
}


def power(emitted: torch.Tensor, p: torch.Tensor, trials: int, seeds: int = 100) -> int:
    """How many of `seeds` samples of `trials` tokens drawn from `emitted` the page's check calls different from p."""
    gen = torch.Generator().manual_seed(trials)
    return sum(
        not check("x", torch.multinomial(emitted, trials, replacement=True, generator=gen).tolist(), p).consistent
        for _ in range(seeds)
    )


@pytest.mark.parametrize("rule", list(LOSSY))
def test_the_engines_first_token_under_a_lossy_rule_is_its_exact_emitted_distribution_and_not_p(rule):
    """The SPEC table p = (.5, .3, .2), q = (.2, .2, .6), 3,000 first steps through the engine: the check against p
    says "not lossless"; against the closed-form o (specviz.core.lossy.emitted; SGLang at 0.5 worked by hand:
    a = (1, .6, .4), o = (.482143, .255, .262857)) it finds no difference."""
    from specviz.core import lossy

    pair = table_pair(SPEC_P, SPEC_Q)
    config = SpecConfig(tau=2, mode="lossless", seed=3, verification=rule, **LOSSY[rule])
    p = reference(pair, [0], config)
    o = lossy.emitted(rule, p, torch.tensor(SPEC_Q, dtype=torch.float64), config.knobs)
    if rule == "sglang":
        assert o.tolist() == pytest.approx([0.482143, 0.255, 0.262857], abs=1e-6)
    samples = list(first_tokens(pair, [0], config, 3000))
    against_p = check(rule, samples, p)
    assert not against_p.consistent and "not lossless" in against_p.verdict()
    assert check(rule, samples, o).p_value > 1e-3


@pytest.mark.slow
def test_on_the_real_pair_each_lossy_rule_is_rejected_with_power_and_the_lossless_ones_keep_their_size(embedded_cache):
    """The real pair, 'Continue the story: The cat sat on the' (the Decode page's story preset), T = 1: the first
    token's exact distribution under each rule (specviz.core.lossy.emitted from the pair's own p and q, which the
    test above and tests/test_lossy.py tie to the engine's decisions), sampled 100 times at the page's largest trial
    count (1,000): each lossy rule is called different at least 95 times; token-wise and one-hot, whose o is p, at
    most 4 times (a 1% test). And the engine itself, 200 first steps under SGLang's thresholds at 0.5: not lossless."""
    from specviz.core import lossy

    pair = load_pair("embedded", "embedded", runtime="torch-kernels")
    prompt = "Continue the story: The cat sat on the"
    dec = Decoder(pair, prompt, SpecConfig(tau=2, mode="lossless"))
    p, q = dec.next_rows()
    for rule, knobs in LOSSY.items():
        o = lossy.emitted(rule, p, q, SpecConfig(mode="lossless", verification=rule, **knobs).knobs)
        assert power(o, p, 1000) >= 95, rule
    for rule in ("token", "one-hot"):
        o = lossy.emitted(rule, p, q, SpecConfig().knobs)
        assert lossy.tv(o, p) < 1e-12 and power(o, p, 1000) <= 4, rule
    config = SpecConfig(tau=2, mode="lossless", verification="sglang", **LOSSY["sglang"])
    result = check("sglang", list(first_tokens(pair, prompt, config, 200)), reference(pair, prompt, config))
    assert not result.consistent and "not lossless" in result.verdict()
