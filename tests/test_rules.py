"""The verification rules (docs/algorithm.md, "Verification as serving engines run it"), checked by exact
enumeration: every draft, every pass/fail pattern of the draws r and every next token, weighted by its
probability. The truth they are checked against is the target's own distribution over a sequence (a
product of p's), never a formula of specviz's: a lossless rule must emit the next τ + 1 tokens exactly as
the target alone would (within 1e-12), and a deliberately broken rule must fail the same test.

Tables are context dependent (p and q at a position depend on every token before it), with a small
vocabulary (3–4) so that everything can be enumerated. Decisions are driven through the public
`specviz.choose` and `specviz.core.tree.walk`: each pattern puts r exactly on the recorded threshold (a
pass) or just above it (a failure), so a rule that compared r with anything but what it records fails the
decision check, and the next token is drawn at a fixed point of the recorded distribution."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import random
from collections.abc import Callable
from fractions import Fraction

import pytest
import torch

import specviz
from specviz import choose
from specviz.analysis.theory import expected_accepted
from specviz.core.rules import Choice
from specviz.core.tree import DraftTree, rank_paths, walk

ABOVE = 1e-9  # a draw this far above a threshold fails it


class Tables:
    """p(· | context) and q(· | context) for every context, drawn once from a seed: peaked, long-tailed
    rows (softmax of a scaled normal draw), p and q unlike each other."""

    def __init__(self, vocab: int, seed: int, one_hot_q: bool = False):
        self.vocab, self.seed, self.one_hot_q = vocab, seed, one_hot_q
        self._p: dict[tuple, torch.Tensor] = {}
        self._q: dict[tuple, torch.Tensor] = {}

    def _row(self, store: dict, ctx: tuple, salt: int) -> torch.Tensor:
        if ctx not in store:
            gen = torch.Generator().manual_seed(hash((self.seed, salt, ctx)) % (2**62))
            scale = 1.0 + 2.5 * torch.rand((), generator=gen, dtype=torch.float64)
            store[ctx] = torch.softmax(scale * torch.randn(self.vocab, generator=gen, dtype=torch.float64), -1)
        return store[ctx]

    def p(self, ctx: tuple) -> torch.Tensor:
        return self._row(self._p, ctx, 1)

    def q(self, ctx: tuple) -> torch.Tensor:
        row = self._row(self._q, ctx, 2)
        return torch.nn.functional.one_hot(row.argmax(), self.vocab).double() if self.one_hot_q else row


def target_probability(tables: Tables, seq: tuple[int, ...]) -> float:
    """What the target alone gives the sequence: Π_i p(seq_i | seq_<i)."""
    return math.prod(float(tables.p(seq[:i])[y]) for i, y in enumerate(seq))


def interval_of(dist: torch.Tensor, u: float) -> int:
    """The token whose interval of dist's cumulative distribution holds u (worked out here, not by specviz)."""
    total, edge = float(dist.sum()), 0.0
    for x, mass in enumerate(dist.tolist()):
        edge += mass / total
        if u < edge:
            return x
    return len(dist) - 1


Chooser = Callable[..., Choice]


def patterns(thresholds):
    """Every pass/fail pattern of the draws with its probability and the draws that make it: r on the
    threshold passes (r ≤ h), r just above it fails. Patterns of probability 0 are left out."""
    for pattern in itertools.product((True, False), repeat=len(thresholds)):
        pairs = list(zip(pattern, (min(1.0, h) for h in thresholds), strict=True))
        chance = math.prod(h if ok else 1.0 - h for ok, h in pairs)
        if chance > 0:
            yield pattern, chance, [h if ok else h + ABOVE for ok, h in pairs]


def drafts(tables: Tables, ctx: tuple, tau: int, argmax: bool):
    """Every draft of τ tokens with its probability: sampled from q (token by token), or q's argmax."""
    for draft in itertools.product(range(tables.vocab), repeat=tau):
        weight = 1.0
        for t, y in enumerate(draft):
            row = tables.q(ctx + draft[:t])
            weight *= float(row.argmax() == y) if argmax else float(row[y])
        if weight > 0:
            yield draft, weight


def chain_step(tables: Tables, ctx: tuple, tau: int, rule: str, chooser: Chooser, argmax: bool) -> dict:
    """One lossless step from `ctx`: {emitted tokens: probability}, over every draft, every pass/fail pattern
    of r (r on the recorded threshold, or just above it) and every next token of the recorded distribution."""
    out: dict[tuple, float] = {}
    for draft, weight in drafts(tables, ctx, tau, argmax):
        q = torch.stack([tables.q(ctx + draft[:t]) for t in range(tau)])
        p = torch.stack([tables.p(ctx + draft[:t]) for t in range(tau + 1)])
        thresholds = chooser("lossless", list(draft), q, p, torch.Generator(), [0.0] * tau, rule, 0.5).threshold
        for pattern, chance, r in patterns(thresholds):
            choice = chooser("lossless", list(draft), q, p, torch.Generator(), r, rule, 0.5)
            assert choice.passed == pattern, f"{rule}: r on/above the recorded threshold decided otherwise"
            assert choice.token == interval_of(choice.dist, 0.5), "the next token is not the recorded dist's at 0.5"
            for x, mass in enumerate((choice.dist / choice.dist.sum()).tolist()):
                if mass > 0:
                    key = (*draft[: choice.n], x)
                    out[key] = out.get(key, 0.0) + weight * chance * mass
    return out


def emitted(step: Callable[[tuple], dict], length: int, ctx: tuple = ()) -> dict:
    """The distribution of the first `length` tokens that speculative decoding emits from `ctx`, step after
    step (each step from the context the previous ones left)."""
    out: dict[tuple, float] = {}
    for tokens, mass in step(ctx).items():
        if len(tokens) >= length:
            out[tokens[:length]] = out.get(tokens[:length], 0.0) + mass
            continue
        for rest, more in emitted(step, length - len(tokens), ctx + tokens).items():
            key = tokens + rest
            out[key] = out.get(key, 0.0) + mass * more
    return out


def worst_gap(tables: Tables, dist: dict, length: int) -> float:
    assert abs(sum(dist.values()) - 1.0) < 1e-12
    return max(
        abs(dist.get(seq, 0.0) - target_probability(tables, seq))
        for seq in itertools.product(range(tables.vocab), repeat=length)
    )


CASES = [(4, 1), (4, 2), (3, 3)]  # (vocabulary, τ)


@pytest.mark.parametrize("rule", ["token", "one-hot", "block"])
@pytest.mark.parametrize(("vocab", "tau"), CASES)
def test_each_rule_emits_the_targets_distribution_exactly(rule, vocab, tau):
    for seed in range(2):
        tables = Tables(vocab, seed)
        step = functools.cache(
            functools.partial(lambda t, ctx: chain_step(t, ctx, tau, rule, choose, argmax=False), tables)
        )
        assert worst_gap(tables, emitted(step, tau + 1), tau + 1) < 1e-12


def test_one_hot_is_lossless_whatever_picked_the_draft_token_and_token_wise_is_not():
    """One-hot never reads q, so an argmax draft (vLLM's draft_sample_method="greedy") keeps the output
    exactly the target's; the token-wise rule needs the draft sampled from the q it divides by."""
    tables, tau = Tables(3, 7), 2
    one_hot = lambda ctx: chain_step(tables, ctx, tau, "one-hot", choose, argmax=True)  # noqa: E731
    assert worst_gap(tables, emitted(one_hot, tau + 1), tau + 1) < 1e-12
    token = lambda ctx: chain_step(tables, ctx, tau, "token", choose, argmax=True)  # noqa: E731
    assert worst_gap(tables, emitted(token, tau + 1), tau + 1) > 1e-3


def _resample_from_p(*args) -> Choice:
    """Broken: after a rejection, sample p itself. Token-wise should sample norm(max(0, p − q)); one-hot
    should sample p without the rejected token."""
    choice = choose(*args)
    if choice.rule != "residual":
        return choice
    p = args[3]
    return dataclasses.replace(
        choice, token=interval_of(p[choice.n], 0.5), rule="residual", dist=p[choice.n], residual=p[choice.n]
    )


def _block_first_failure(*args) -> Choice:
    """Block, broken: stop at the first failed draw (the token-wise habit) but keep block's thresholds."""
    choice = choose(*args)
    first = next((t for t, ok in enumerate(choice.passed) if not ok), len(choice.passed))
    if first == choice.n:
        return choice
    q, p = args[2], args[3]
    weight = choice.block.w[first - 1] if first else 1.0
    dist = (weight * p[first] - q[first]).clamp(min=0.0)
    dist = dist / dist.sum() if dist.sum() > 0 else p[first]
    return dataclasses.replace(choice, n=first, token=interval_of(dist, 0.5), rule="residual", dist=dist, residual=dist)


@pytest.mark.parametrize(
    ("rule", "broken"),
    [("token", _resample_from_p), ("one-hot", _resample_from_p), ("block", _block_first_failure)],
)
def test_a_broken_rule_fails_the_same_enumeration(rule, broken):
    tables, tau = Tables(3, 1), 2
    step = lambda ctx: chain_step(tables, ctx, tau, rule, broken, argmax=False)  # noqa: E731
    assert worst_gap(tables, emitted(step, tau + 1), tau + 1) > 1e-3


# --- token trees: drafted without replacement, walked by the rule -------------------------------------


def tree_drafts(tables: Tables, ctx: tuple, paths: list[tuple[int, ...]]):
    """Every tree of the fixed lossless shape `paths` with its probability: the children of a node drawn
    from q without replacement, in rank order (docs/algorithm.md, "Token trees")."""
    by_depth = sorted(paths, key=lambda path: (len(path), path))

    def grow(i: int, tokens: dict, weight: float):
        if i == len(by_depth):
            yield dict(tokens), weight
            return
        path = by_depth[i]
        up = tuple(tokens[path[:j]] for j in range(1, len(path)))
        row = tables.q(ctx + up).clone()
        for rank in range(1, path[-1]):  # the siblings drawn before it are gone
            row[tokens[(*path[:-1], rank)]] = 0.0
        if row.sum() <= 0:
            return
        row = row / row.sum()
        for x in range(tables.vocab):
            if row[x] > 0:
                yield from grow(i + 1, {**tokens, path: x}, weight * float(row[x]))

    yield from grow(0, {}, 1.0)


def tree_step(tables: Tables, ctx: tuple, paths: list[tuple[int, ...]], rule: str) -> dict:
    """One step on every drafted tree: every accept/reject pattern of the nodes the walk tests (untested nodes
    counted once), every next token of the distribution the walk samples."""
    out: dict[tuple, float] = {}
    for tokens, weight in tree_drafts(tables, ctx, paths):
        tree, index = DraftTree(), {}
        for path in sorted(paths, key=lambda path: (len(path), path)):
            parent = index.get(path[:-1], -1)
            index[path] = tree.add(parent, tokens[path], 0.0, path[-1])
        context = {-1: ctx}
        for path, node in index.items():
            context[node] = ctx + tuple(tokens[path[:j]] for j in range(1, len(path) + 1))
        for node, c in context.items():
            tree.dist[node] = tables.q(c)
        p = torch.stack([tables.p(context[node]) for node in range(-1, len(tree))])
        for pattern in itertools.product((True, False), repeat=len(tree)):
            r = [0.0 if ok else 1.0 - ABOVE for ok in pattern]
            w = walk("lossless", tree, p, r, torch.Generator().manual_seed(0), rule)
            tested = [i for i, d in enumerate(w.decision) if d != "not tested"]
            if any(not pattern[i] for i in range(len(tree)) if i not in tested):
                continue  # counted once: with every untested node at "accept"
            if any((w.decision[i] == "accepted") != pattern[i] for i in tested):
                continue  # a failure that cannot happen (threshold 1)
            chance = math.prod(min(1.0, w.ratio[i]) if pattern[i] else 1.0 - min(1.0, w.ratio[i]) for i in tested)
            exact = [w.ratio[i] if pattern[i] else w.ratio[i] + ABOVE for i in range(len(tree))]
            again = walk("lossless", tree, p, [x if x is not None else 0.0 for x in exact], torch.Generator(), rule)
            assert again.decision == w.decision, "r on/above the recorded threshold decided otherwise"
            path_tokens = tuple(tree.token[i] for i in w.path)
            for x, mass in enumerate((w.dist / w.dist.sum()).tolist()):
                if mass > 0 and chance > 0:
                    key = (*path_tokens, x)
                    out[key] = out.get(key, 0.0) + weight * chance * mass
    return out


@pytest.mark.parametrize("rule", ["token", "one-hot"])
def test_a_tree_walked_by_either_rule_emits_the_targets_distribution_exactly(rule):
    """Two children at the root, one below the first (topk 2, 2 levels, 3 nodes): SGLang's target-only walk
    (one-hot: child x kept when r ≤ p′(x), then p′ loses x) and recursive rejection sampling."""
    paths = rank_paths(topk=2, steps=2, count=3)
    assert sorted(paths) == [(1,), (1, 1), (2,)]
    for seed in range(2):
        tables = Tables(3, seed)
        step = functools.cache(functools.partial(lambda t, ctx: tree_step(t, ctx, paths, rule), tables))
        assert worst_gap(tables, emitted(step, 3), 3) < 1e-12


# --- expected accepted length: block never below token-wise ------------------------------------------


def accepted_by_enumeration(q: list[list[float]], p: list[list[float]], rule: str) -> float:
    """E[n] for a sandbox table (rows that do not depend on the tokens before), enumerated through choose."""
    tau, vocab = len(q), len(q[0])
    q_t, p_t = torch.tensor(q, dtype=torch.float64), torch.tensor(p, dtype=torch.float64)
    total = 0.0
    for draft in itertools.product(range(vocab), repeat=tau):
        weight = math.prod(q[t][y] for t, y in enumerate(draft))
        if weight == 0:
            continue
        h = choose("lossless", list(draft), q_t, p_t, torch.Generator(), [0.0] * tau, rule, 0.5).threshold
        for _, chance, r in patterns(h):
            total += weight * chance * choose("lossless", list(draft), q_t, p_t, torch.Generator(), r, rule, 0.5).n
    return total


def test_the_spec_example_gives_ten_ninths_token_wise_and_eleven_ninths_block():
    """p = (1/3, 2/3), q = (2/3, 1/3) at both positions, τ = 2, the draft sampled from q."""
    q, p = [[2 / 3, 1 / 3]] * 2, [[1 / 3, 2 / 3]] * 3
    assert accepted_by_enumeration(q, p, "token") == pytest.approx(float(Fraction(10, 9)), abs=1e-12)
    assert accepted_by_enumeration(q, p, "block") == pytest.approx(float(Fraction(11, 9)), abs=1e-12)


def _random_table(rng: random.Random, tau: int, vocab: int, one_hot: bool = False):
    def row():
        raw = [rng.random() ** 3 for _ in range(vocab)]
        return [x / sum(raw) for x in raw]

    q = [row() for _ in range(tau)]
    if one_hot:
        q = [[float(x == max(range(vocab), key=r.__getitem__)) for x in range(vocab)] for r in q]
    return q, [row() for _ in range(tau + 1)]


def test_block_never_accepts_less_than_token_wise_and_equals_it_at_tau_1_and_for_a_one_hot_q():
    rng = random.Random(5)
    gains = []
    for _ in range(12):
        tau, vocab = rng.choice([(2, 3), (3, 3), (2, 4)])
        q, p = _random_table(rng, tau, vocab)
        token, block = accepted_by_enumeration(q, p, "token"), accepted_by_enumeration(q, p, "block")
        assert block >= token - 1e-12
        gains.append(block - token)
        assert expected_accepted(q, p, "block") == pytest.approx(block, abs=1e-12)  # the sandbox's exact E[n]
        assert expected_accepted(q, p, "token") == pytest.approx(token, abs=1e-12)
        q1, p1 = q[:1], p[:2]
        assert accepted_by_enumeration(q1, p1, "block") == pytest.approx(accepted_by_enumeration(q1, p1, "token"))
        qh, ph = _random_table(rng, tau, vocab, one_hot=True)
        assert accepted_by_enumeration(qh, ph, "block") == pytest.approx(accepted_by_enumeration(qh, ph, "token"))
    assert max(gains) > 0.01  # and it does gain, somewhere


# --- single steps worked by hand ---------------------------------------------------------------------


def test_block_keeps_a_position_whose_own_draw_failed():
    """Draft (0, 1) on p = (1/3, 2/3), q = (2/3, 1/3): w1 = min(1, (1/3)/(2/3)) = 1/2,
    R1 = max(0, 1/6 − 2/3) + max(0, 1/3 − 1/3) = 0, so h1 = 0 / (0 + 1/2) = 0; w2 = min(1, ½ · (2/3)/(1/3)) = 1,
    h2 = w2 = 1. With r = (0.9, 0.5): position 1 fails (0.9 > 0) and position 2 passes (0.5 ≤ 1), so n = 2 and
    both are kept; token-wise stops at once (0.9 > p/q = 1/2)."""
    q = torch.tensor([[2 / 3, 1 / 3]] * 2, dtype=torch.float64)
    p = torch.tensor([[1 / 3, 2 / 3]] * 3, dtype=torch.float64)
    block = choose("lossless", [0, 1], q, p, torch.Generator(), [0.9, 0.5], "block", 0.1)
    assert block.block.w == pytest.approx((0.5, 1.0))
    assert block.block.residual_mass[0] == pytest.approx(0.0)
    assert block.threshold == pytest.approx((0.0, 1.0))
    assert block.passed == (False, True)
    assert (block.n, block.rule, block.token) == (2, "bonus", 0)  # bonus from p3 = (1/3, 2/3) at 0.1: token 0
    token = choose("lossless", [0, 1], q, p, torch.Generator(), [0.9, 0.5], "token", 0.1)
    assert token.n == 0
    assert token.dist.tolist() == pytest.approx([0.0, 1.0])  # max(0, p − q) = (0, 1/3), normalised


def test_one_hot_accepts_with_p_of_the_token_and_resamples_p_without_it():
    """p = (0.5, 0.3, 0.2) at position 1, draft token 0: kept while r ≤ 0.5. With r = 0.9 it is rejected and
    the next token comes from p without token 0: (0, 0.3, 0.2) / 0.5 = (0, 0.6, 0.4), whatever q was."""
    q = torch.tensor([[0.1, 0.1, 0.8]], dtype=torch.float64)  # q plays no part
    p = torch.tensor([[0.5, 0.3, 0.2], [1 / 3, 1 / 3, 1 / 3]], dtype=torch.float64)
    rejected = choose("lossless", [0], q, p, torch.Generator(), [0.9], "one-hot", 0.55)
    assert rejected.threshold == pytest.approx((0.5,))
    assert (rejected.n, rejected.rule) == (0, "residual")
    assert rejected.dist.tolist() == pytest.approx([0.0, 0.6, 0.4])
    assert rejected.token == 1  # 0.55 falls in [0, 0.6): token 1
    kept = choose("lossless", [0], q, p, torch.Generator(), [0.5], "one-hot", 0.9)
    assert (kept.n, kept.rule, kept.token) == (1, "bonus", 2)


# --- the same step under each rule (the Decode page's panel) ------------------------------------------


@pytest.mark.parametrize("rule", ["token", "one-hot", "block"])
def test_each_rule_outcome_of_a_live_step_matches_what_that_rule_does_and_leaves_the_run_alone(rule):
    """A run that keeps the comparison makes the same trace as one that does not (no draw taken from the
    run's generator); the outcome of the run's own rule is the step itself; Back forgets the step's."""
    from tests.helpers import hf_pair

    pair = hf_pair()
    config = specviz.SpecConfig(tau=3, mode="lossless", verification=rule, seed=4, max_new_tokens=12)
    plain = specviz.Decoder(pair, [1, 2, 3], config).run()
    dec = specviz.Decoder(pair, [1, 2, 3], config, compare_rules=True)
    untimed = lambda run: [s.to_dict() | {"draft_ms": 0, "verify_ms": 0} for s in run.steps]  # noqa: E731
    assert untimed(dec.run()) == untimed(plain)
    for step in dec.steps:
        if step.tau == 0:  # no draft (the last token of the budget): nothing to compare
            assert dec.under_each_rule(step.index) is None
            continue
        outcomes = {o.rule: o for o in dec.under_each_rule(step.index)}
        assert list(outcomes) == ["token", "one-hot", "block"]
        own = outcomes[rule]
        assert own.n == step.n_accepted
        if step.verify is not None:
            assert own.threshold == pytest.approx(step.verify.threshold) and own.passed == step.verify.passed
        else:
            assert own.threshold == pytest.approx([min(1.0, x) for x in step.ratio])
        assert outcomes["one-hot"].threshold == pytest.approx(step.p)  # one-hot compares r with p(ŷ)
        if own.n < step.tau:
            assert own.next_rule == "residual" and step.next_rule == "residual"
    dec.undo()
    assert dec.under_each_rule(len(dec.steps)) is None
    assert specviz.Decoder(pair, [1, 2, 3], config).under_each_rule(0) is None


def test_the_same_step_under_each_rule_on_the_hand_worked_table():
    """Draft (0, 1), p = (1/3, 2/3), q = (2/3, 1/3), r = (0.9, 0.5) (worked above): token-wise thresholds
    (1/2, 1) keep nothing, one-hot (p(ŷ) = 1/3, 2/3) keeps nothing, block (h = 0, 1) keeps both."""
    q = torch.tensor([[2 / 3, 1 / 3]] * 2, dtype=torch.float64)
    p = torch.tensor([[1 / 3, 2 / 3]] * 3, dtype=torch.float64)
    token, one_hot, block = specviz.each_rule([0, 1], q, p, [0.9, 0.5])
    assert (token.rule, token.n, token.threshold) == ("token", 0, pytest.approx((0.5, 1.0)))
    assert token.next_top == ((1, pytest.approx(1.0)),)  # max(0, p − q) = (0, 1/3): token 1 only
    assert (one_hot.n, one_hot.threshold) == (0, pytest.approx((1 / 3, 2 / 3)))
    assert one_hot.next_top == ((1, pytest.approx(1.0)),)  # p without token 0
    assert (block.n, block.passed, block.next_rule) == (2, (False, True), "bonus")
    assert block.next_top == ((1, pytest.approx(2 / 3)), (0, pytest.approx(1 / 3)))  # p3, most likely first


# --- the sweep's comparison of the rules ---------------------------------------------------------------


def test_the_rules_comparison_finds_the_exact_expectations_of_the_spec_example():
    """The SPEC table at every position (p = (1/3, 2/3), q = (2/3, 1/3), τ = 2): E[n] = 10/9 token-wise,
    11/9 block and 4/9 + (4/9)² = 52/81 one-hot, so mean acceptance lengths 19/9, 20/9 and 133/81. Each
    measured interval holds its exact value; the paired differences find block above token-wise and one-hot
    below; at τ = 1 block and token-wise are the same rule, step for step."""
    from specviz.analysis.rules_compare import compare_rules
    from tests.helpers import table_pair

    pair = table_pair([1 / 3, 2 / 3], [2 / 3, 1 / 3])
    result = compare_rules(pair, ["0"], [1, 2], seeds=(0, 1), max_new_tokens=400)
    exact = {"token": 19 / 9, "block": 20 / 9, "one-hot": 133 / 81}
    for rule, value in exact.items():
        spread = result.row(2, rule).mean_acceptance_length
        assert spread.low <= value <= spread.high, (rule, spread)
    assert result.difference(2, "block").low > 0 and result.difference(2, "one-hot").high < 0
    assert result.row(1, "block").accepted == result.row(1, "token").accepted
    assert result.row(2, "token").steps > 300
    words = result.verdict()
    assert words.startswith("Mean acceptance length at τ = 2, the same steps under each rule: token-wise ")
    assert "one-hot q kept" in words and "fewer per step" in words
    assert "block kept" in words and "more per step" in words
