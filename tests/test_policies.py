"""τ policies and the broken draft (docs/algorithm.md, "Variants"): schedules and proposals worked out by
hand on table models, and every mode's guarantee kept under each of them (greedy output equals
the target's greedy decoding; lossless output follows p: chi-square)."""

from __future__ import annotations

import pytest
import torch
from scipy.stats import chisquare

from specviz import ConfigError, Decoder, SpecConfig
from tests.helpers import hf_pair, table_pair

pytestmark = pytest.mark.numeric  # no clock read: `make test` runs its slow tests on both cores (pyproject.toml)

# a bigram "cycle": after token 0 comes 1 (0.9), after 1 comes 2, after 2 comes 0
CYCLE = [[0.05, 0.9, 0.05], [0.05, 0.05, 0.9], [0.9, 0.05, 0.05]]


def taus(config: SpecConfig, p, q, steps: int) -> list[int]:
    dec = Decoder(table_pair(p, q), [0], config)
    return [dec.step().tau for _ in range(steps)]


def test_heuristic_grows_by_two_after_a_fully_accepted_step():
    # the draft is the target: greedy accepts every draft token, so τ = 2, 4, 6, 8, 10
    config = SpecConfig(tau=2, mode="greedy", tau_policy="heuristic", max_new_tokens=1000)
    assert taus(config, CYCLE, CYCLE, 5) == [2, 4, 6, 8, 10]


def test_heuristic_shrinks_by_one_after_a_rejection_never_below_one():
    # context-free: the draft's argmax is token 1, the target's token 0: every first draft token is rejected
    config = SpecConfig(tau=3, mode="greedy", tau_policy="heuristic", max_new_tokens=1000)
    assert taus(config, [0.9, 0.1], [0.1, 0.9], 5) == [3, 2, 1, 1, 1]


def test_heuristic_schedule_follows_the_outcomes_and_undo_restores_it():
    # target cycle 0→1→2→0; the draft knows 0→1 and 1→2 but after 2 predicts 1 (wrong)
    draft = [[0.05, 0.9, 0.05], [0.05, 0.05, 0.9], [0.05, 0.9, 0.05]]
    dec = Decoder(
        table_pair(CYCLE, draft), [0], SpecConfig(tau=1, mode="greedy", tau_policy="heuristic", max_new_tokens=1000)
    )
    # step 1 from 0: drafts 1 (accepted, 1 of 1) → next 2; τ 3: from 2 drafts 1 → rejected (target 0)
    first, second = dec.step(), dec.step()
    assert (first.tau, first.n_accepted, second.tau, second.n_accepted) == (1, 1, 3, 0)
    assert dec.planned_tau() == 2
    dec.undo()
    assert dec.planned_tau() == 3


def test_confidence_stops_drafting_when_the_draft_is_unsure():
    unsure = [0.3, 0.3, 0.4]  # top probability 0.4 at every position
    low = SpecConfig(tau=4, mode="greedy", tau_policy="confidence", confidence=0.5, max_new_tokens=100)
    high = SpecConfig(tau=4, mode="greedy", tau_policy="confidence", confidence=0.35, max_new_tokens=100)
    assert taus(low, [0.2, 0.2, 0.6], unsure, 3) == [1, 1, 1]  # the first token is always proposed
    assert taus(high, [0.2, 0.2, 0.6], unsure, 3) == [4, 4, 4]


def test_broken_draft_repeats_its_first_guess_and_later_positions_collapse():
    correct = Decoder(table_pair(CYCLE, CYCLE), [0], SpecConfig(tau=3, mode="greedy", max_new_tokens=60)).run()
    broken = Decoder(
        table_pair(CYCLE, CYCLE), [0], SpecConfig(tau=3, mode="greedy", max_new_tokens=60, broken_draft=True)
    ).run()
    step = broken.steps[0]
    # conditioned on the prefix [0] alone, every position proposes 0's successor, 1, with the same q
    assert step.draft_tokens == (1, 1, 1) and step.q == (pytest.approx(0.9),) * 3
    assert step.decision == ("accepted", "rejected", "not reached")  # after 1 the target wants 2
    assert correct.metrics.per_position_acceptance_rate == (1.0, 1.0, 1.0)
    assert broken.metrics.per_position_acceptance_rate[0] == 1.0
    assert broken.metrics.per_position_acceptance_rate[1:] == (0.0, 0.0)


@pytest.mark.parametrize(
    "variant", [{"tau_policy": "heuristic"}, {"tau_policy": "confidence", "confidence": 0.6}, {"broken_draft": True}]
)
def test_greedy_output_is_still_the_targets_own(variant):
    pair = hf_pair()
    ids = [5, 17, 42, 8]
    run = Decoder(pair, ids, SpecConfig(tau=3, mode="greedy", max_new_tokens=24, **variant)).run()
    session, out, token = pair.target.new_session(), [], None
    logits = session.extend(ids, keep=1)[-1]
    for _ in range(24):
        token = int(logits.argmax())
        out.append(token)
        logits = session.extend([token], keep=1)[-1]
    assert list(run.new_tokens) == out


@pytest.mark.slow  # 12,000 repetitions per variant: in `make test`, not in `make test-fast`
@pytest.mark.parametrize(
    "variant", [{"tau_policy": "heuristic"}, {"tau_policy": "confidence", "confidence": 0.5}, {"broken_draft": True}]
)
def test_lossless_output_still_follows_p(variant):
    """Bigram tables: the first two emitted tokens (which span draft positions and policies'
    choices) against the target's own two-token distribution."""
    p = torch.tensor([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.2, 0.5]], dtype=torch.float64)
    q = torch.tensor([[0.2, 0.2, 0.6], [0.6, 0.2, 0.2], [0.2, 0.6, 0.2]], dtype=torch.float64)
    counts = torch.zeros(9, dtype=torch.float64)
    trials = 12_000
    for seed in range(trials):
        dec = Decoder(table_pair(p, q), [0], SpecConfig(tau=2, mode="lossless", seed=seed, max_new_tokens=2, **variant))
        a, b = dec.run().new_tokens[:2]
        counts[3 * a + b] += 1
    expected = torch.stack([p[0, a] * p[a] for a in range(3)]).flatten() * trials  # p(a | 0) p(b | a)
    assert chisquare(counts.numpy(), expected.numpy()).pvalue > 0.001


def test_bad_policy_settings_are_refused():
    with pytest.raises(ConfigError, match="tau_policy"):
        SpecConfig(tau_policy="adaptive")
    with pytest.raises(ConfigError, match="confidence"):
        SpecConfig(confidence=1.5)
