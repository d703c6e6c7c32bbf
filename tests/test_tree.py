"""Token trees (docs/algorithm.md, "Token trees"): the one-pass tree verification against scoring
each path on its own, compaction against a fresh prefill, greedy equivalence for every draft kind,
lossless exactness (χ² with the page's check: size and power), the topk = 1 chain, and recursive
rejection sampling on a hand-made three-child node, computed exactly."""

import dataclasses
import itertools
import json

import pytest
import torch

from specviz import Decoder, HFModel, ModelPair, SpecConfig
from specviz.analysis.counted import Work
from specviz.analysis.lossless import check, first_tokens, reference
from specviz.classroom.replay import load_trace
from specviz.core import tree as tree_mod
from specviz.core.trace import RunTrace, TreeTrace
from specviz.drafts.feature import FeatureDraftModel
from specviz.drafts.lookup import PromptLookupDrafter
from specviz.drafts.subset import early_exit
from specviz.errors import ConfigError, TraceError
from tests.helpers import IdsCodec, full_logits, make_feature_draft, table_pair, tiny_llama, tiny_text_pair
from tests.test_engine import hf_greedy
from tests.test_lossless import long_tail

pytestmark = pytest.mark.numeric  # no clock read: `make test` runs its slow tests on both cores (pyproject.toml)

PROMPT = [5, 17, 42, 8, 3, 77]
TREES = [(2, 3, 6), (3, 2, 5), (4, 4, 16)]  # (topk, steps, num_draft_tokens)


def tree_config(topk, steps, num, **kw):
    return SpecConfig(topk=topk, steps=steps, num_draft_tokens=num, **kw)


def without_tree(run: RunTrace) -> list[dict]:
    return [{k: v for k, v in s.to_dict().items() if k not in ("tree", "draft_ms", "verify_ms")} for s in run.steps]


@pytest.fixture(scope="module")
def target():
    return tiny_llama(0)


@pytest.fixture(scope="module")
def pairs(target):
    t = HFModel(target, "target")
    return {
        "random": ModelPair(t, HFModel(tiny_llama(1, layers=1), "random"), IdsCodec()),
        "self": ModelPair(t, t, IdsCodec()),
        "early-exit": ModelPair(t, HFModel(early_exit(target, 1), "first layer"), IdsCodec()),
        "feature": ModelPair(t, FeatureDraftModel(make_feature_draft(target), "feature"), IdsCodec()),
        "prompt lookup": ModelPair(t, PromptLookupDrafter(t.vocab_size), IdsCodec()),
    }


# --- rank paths, worked by hand -----------------------------------------------------------------


def test_rank_paths_worked_by_hand():
    # sums of ranks: (1)=1; (2),(1,1)=2 → shallower first; (1,2),(2,1),(1,1,1)=3 → shallower, then lexicographic
    assert tree_mod.rank_paths(2, 3, 5) == [(1,), (2,), (1, 1), (1, 2), (2, 1)]
    assert tree_mod.rank_paths(2, 3, 6)[-1] == (1, 1, 1)
    assert tree_mod.rank_paths(1, 4, 4) == [(1,), (1, 1), (1, 1, 1), (1, 1, 1, 1)]  # the chain
    assert tree_mod.rank_paths(3, 1, 10) == [(1,), (2,), (3,)]  # only 3 nodes exist


# --- one pass over a tree equals each path scored on its own ------------------------------------

# a hand-made tree below the root: node j's parent (−1: root)
PARENTS = [-1, -1, -1, 0, 0, 1, 3, 3, 6]
TOKENS = [11, 12, 13, 21, 22, 23, 31, 32, 41]


def path_of(node):
    out = []
    while node >= 0:
        out.append(node)
        node = PARENTS[node]
    return out[::-1]


@pytest.mark.parametrize("prefix_length", [1, 6, 40])
def test_tree_pass_equals_scoring_each_path_on_its_own(target, prefix_length):
    prefix = [(7 * i + 3) % 90 for i in range(prefix_length)]
    session = HFModel(target).new_session()
    if prefix_length > 1:
        session.extend(prefix[:-1])
    base = session.length
    parents = [base - 1] + [base if up < 0 else base + 1 + up for up in PARENTS]
    rows = session.extend_tree([prefix[-1], *TOKENS], parents)
    torch.testing.assert_close(rows[0], full_logits(target, prefix)[-1], rtol=0, atol=1e-10)
    for j in range(len(TOKENS)):
        alone = full_logits(target, prefix + [TOKENS[i] for i in path_of(j)])[-1]
        torch.testing.assert_close(rows[1 + j], alone, rtol=0, atol=1e-10)
    # keep the path to node 6 (0 → 3 → 6): the cache equals a fresh prefill of that text
    path = path_of(6)
    session.retain([base, *(base + 1 + i for i in path)])
    text = prefix + [TOKENS[i] for i in path]
    fresh = HFModel(target).new_session()
    fresh.extend(text)
    assert session.length == fresh.length == len(text)
    for mine, theirs in zip(session._cache.layers, fresh._cache.layers, strict=True):
        torch.testing.assert_close(mine.keys, theirs.keys, rtol=0, atol=1e-10)
        torch.testing.assert_close(mine.values, theirs.values, rtol=0, atol=1e-10)
    # and it goes on: a second tree after the kept path scores as a fresh sequence would
    rows = session.extend_tree([50, 51, 52], [session.length - 1, session.length - 1, session.length])
    torch.testing.assert_close(rows[2], full_logits(target, [*text, 50, 52])[-1], rtol=0, atol=1e-10)


def test_a_feature_draft_scores_a_tree_level_as_it_scores_each_path(target):
    """Level by level, in one pass per level, each node's q equals drafting along its path alone."""
    draft = FeatureDraftModel(make_feature_draft(target), "feature")
    t_model = HFModel(target)

    def sessions():
        t = t_model.new_session()
        d = draft.new_session(t)
        t.extend(PROMPT[:-1], keep=1)
        d.extend(PROMPT[:-1], keep=1)
        return t, d

    _, d = sessions()
    d.extend([PROMPT[-1]], keep=1)
    root = d.length - 1
    level2 = d.extend_tree([11, 12], [root, root])
    level3 = d.extend_tree([21, 22, 23], [root + 1, root + 1, root + 2])
    for tokens, row in (([11], level2[0]), ([12], level2[1]), ([11, 21], level3[0]), ([12, 23], level3[2])):
        _, alone = sessions()
        alone.extend([PROMPT[-1]], keep=1)
        for y in tokens:
            last = alone.extend([y], keep=1)[-1]
        torch.testing.assert_close(row, last, rtol=0, atol=1e-9)


def test_prompt_lookup_scores_each_node_on_its_path():
    drafter = PromptLookupDrafter(100)
    session = drafter.new_session()
    session.extend([1, 2, 3, 4, 1, 2, 9, 1])
    n = session.length
    rows = session.extend_tree([2, 5, 3], [n - 1, n - 1, n])  # 1→2 (then 3 after 1 2 … no: 9 or 3), 1→5, 2→3
    assert int(rows[0].argmax()) == drafter.propose([1, 2, 3, 4, 1, 2, 9, 1, 2]) == 9
    assert bool((rows[1] == float("-inf")).all())  # "… 1 5": no earlier 5
    assert int(rows[2].argmax()) == drafter.propose([1, 2, 3, 4, 1, 2, 9, 1, 2, 3]) == 4


# --- the engine ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["textbook", "lossless", "greedy"])
@pytest.mark.parametrize("kind", ["random", "feature", "prompt lookup"])
def test_topk_one_reproduces_the_chains_trace(pairs, kind, mode):
    for seed, tau in ((0, 1), (3, 4)):
        chain = SpecConfig(tau=tau, mode=mode, seed=seed, max_new_tokens=20)
        a = Decoder(pairs[kind], PROMPT, chain).run()
        b = Decoder(pairs[kind], PROMPT, dataclasses.replace(chain, steps=tau, num_draft_tokens=tau)).run()
        assert without_tree(a) == without_tree(b)
        assert all(s.tree is not None and s.tree.topk == 1 for s in b.steps)


@pytest.mark.parametrize(("topk", "steps", "num"), TREES)
@pytest.mark.parametrize("kind", ["random", "self", "early-exit", "feature", "prompt lookup"])
def test_greedy_tree_output_is_the_targets_greedy_decoding(target, pairs, kind, topk, steps, num):
    run = Decoder(pairs[kind], PROMPT, tree_config(topk, steps, num, mode="greedy", max_new_tokens=24)).run()
    assert run.new_tokens == hf_greedy(target, PROMPT, 24)
    if kind == "self":  # the target drafting for itself: its first choice is the target's, all the way down
        assert all(s.n_accepted == s.tau and s.tree.accepted_depth == s.tau for s in run.steps)


@pytest.mark.parametrize("kind", ["random", "feature"])
def test_after_each_tree_step_the_caches_equal_a_fresh_prefill(target, pairs, kind):
    """After rejections and after full accepts: target cache (and recorded features) as if the text
    had been prefilled from scratch."""
    dec = Decoder(pairs[kind], PROMPT, tree_config(3, 3, 8, mode="textbook", seed=2, max_new_tokens=30))
    depths = set()
    while not dec.done:
        step = dec.step()
        depths.add(step.tree.accepted_depth)
        fresh = HFModel(target).new_session()
        if kind == "feature":
            fresh.record_features()
        fresh.extend(dec._ids[:-1])
        assert dec._target.length == fresh.length == len(dec._ids) - 1
        for mine, theirs in zip(dec._target._cache.layers, fresh._cache.layers, strict=True):
            torch.testing.assert_close(mine.keys, theirs.keys, rtol=0, atol=1e-9)
        if kind == "feature":
            torch.testing.assert_close(dec._target._features, fresh._features, rtol=0, atol=1e-9)
    assert len(depths) > 1  # paths of different depths were kept


def test_a_tree_step_records_every_node_and_round_trips(pairs):
    run = Decoder(pairs["random"], PROMPT, tree_config(2, 3, 6, mode="lossless", seed=1, max_new_tokens=16)).run()
    step = run.steps[0]
    tree = step.tree
    assert len(tree.nodes) == 6 and step.nodes == 6
    assert [n.depth for n in tree.nodes] == sorted(n.depth for n in tree.nodes)
    for i, node in enumerate(tree.nodes):
        up = tree.nodes[node.parent] if node.parent >= 0 else None
        assert node.depth == (up.depth + 1 if up else 1)
        assert node.score == pytest.approx((up.score if up else 1.0) * node.q)
        assert (node.r is None) == (node.decision == "not tested")
        if node.decision != "not tested":
            assert (node.r <= node.ratio) == (node.decision == "accepted")
        if i in tree.path:
            assert node.decision == "accepted"
    assert run.metrics.drafted_tokens == sum(len(s.tree.nodes) for s in run.steps)  # every node verified
    assert run.metrics.accepted_tokens == sum(len(s.tree.path) for s in run.steps)
    emitted = [tree.nodes[i].token for i in tree.path] + [step.next_token]
    assert list(step.emitted) == emitted[: len(step.emitted)]
    again = RunTrace.from_json(run.to_json())
    assert again == run
    assert load_trace(run.to_json()).steps == run.steps  # replay checks every tree decision
    raw = json.loads(run.to_json())
    node = next(n for s in raw["steps"] for n in s["tree"]["nodes"] if n["decision"] == "rejected")
    node["decision"] = "accepted"
    with pytest.raises(TraceError, match="tree node"):
        load_trace(json.dumps(raw))


def test_tree_settings_are_checked():
    with pytest.raises(ConfigError, match="num_draft_tokens"):
        SpecConfig(topk=2, steps=2, num_draft_tokens=7)  # at most 2 + 4 nodes
    with pytest.raises(ConfigError, match="steps"):
        SpecConfig(topk=3)
    with pytest.raises(ConfigError, match="fixed"):
        SpecConfig(steps=3, num_draft_tokens=3, tau_policy="heuristic")
    assert SpecConfig(topk=2, steps=2, num_draft_tokens=6).depth == 2


# --- recursive rejection sampling, exactly ------------------------------------------------------


def test_recursive_rejection_sampling_on_three_children_emits_p_exactly():
    """A node with three children drawn from q without replacement (every draw order, its probability
    worked out here), walked by the library: its ratios p′/q′ and its last p′ give the emitted
    distribution exactly (accept child i with probability min(1, p′/q′)); summed, it is p."""
    p = torch.tensor([0.1, 0.45, 0.05, 0.3, 0.1], dtype=torch.float64)
    q = torch.tensor([0.4, 0.1, 0.3, 0.2, 0.0], dtype=torch.float64)
    rows = torch.stack([p, p, p, p])  # the root's p, then one (unused) row per child
    emitted = torch.zeros(5, dtype=torch.float64)
    for order in itertools.permutations(range(4), 3):  # tokens 0..3 have q > 0
        prob, left = 1.0, q.clone()
        for x in order:  # drawing without replacement
            prob *= float(left[x] / left.sum())
            left[x] = 0.0
        tree = tree_mod.DraftTree()
        tree.dist[-1] = q
        for rank, x in enumerate(order, 1):
            tree.add(-1, x, float(q[x]), rank)
        # r just below 1 rejects every child the rule can reject: the walk reports each ratio it tested
        walked = tree_mod.walk("lossless", tree, rows, [1 - 1e-15] * 3, torch.Generator())
        reach = prob
        for kid, x in enumerate(order):
            accept = min(1.0, walked.ratio[kid])
            emitted[x] += reach * accept
            reach *= 1 - accept
            if accept == 1.0:
                break
        if reach > 0:
            assert walked.rule == "residual" and not walked.path
            emitted += reach * walked.dist
    torch.testing.assert_close(emitted, p, rtol=0, atol=1e-12)
    # worked by hand for order (0, 2, 3): p/q at 0 is .1/.4 = .25; then p′ = norm(max(0, p − q)) =
    # [0, .35, 0, .1, .1]/.55 and q′ = [0, .1, .3, .2, 0]/.6: p′/q′ at 2 is 0 (rejected for sure)
    tree = tree_mod.DraftTree()
    tree.dist[-1] = q
    for rank, x in enumerate((0, 2, 3), 1):
        tree.add(-1, x, float(q[x]), rank)
    walked = tree_mod.walk("lossless", tree, rows, [0.5, 0.0, 0.0], torch.Generator())
    assert walked.ratio[0] == pytest.approx(0.25) and walked.ratio[1] == pytest.approx(0.0)
    assert walked.decision == ("rejected", "accepted", "not tested")  # r = 0 ≤ 0 accepts: a zero-width edge
    # after rejecting 0 and 2: p″ = norm(max(0, p′ − q′)) with q′ = [0, 1/6, 1/2, 1/3, 0] (q without 0):
    # p′ − q′ = [0, .6364 − .1667, −, .1818 − .3333, .1818] → p″ = [0, .4697, 0, 0, .1818]/.6515, so
    # p″(3) = 0: token 3 is rejected, and the next token comes from p‴ = norm(max(0, p″ − q″)) with
    # q″ = [0, 1/3, 0, 2/3, 0]: [0, .7209 − .3333, 0, 0, .2791]/.6667 = [0, .5814, 0, 0, .4186]
    walked = tree_mod.walk("lossless", tree, rows, [0.5, 0.5, 0.3], torch.Generator())
    assert walked.ratio[2] == pytest.approx(0.0) and walked.rule == "residual" and not walked.path
    assert walked.dist.tolist() == pytest.approx([0, 0.5814, 0, 0, 0.4186], abs=1e-4)


# --- lossless follows p: χ² with the page's check -----------------------------------------------


@pytest.mark.slow
def test_lossless_trees_pass_the_pages_check_and_textbook_trees_fail_it():
    """Size and power on a long-tailed table, 20 seeds × 300 first tokens each, tree (3, 2, 6): lossless called
    consistent in ≥ 18 (a 1% test errs in three or more of 20 with probability 0.001), textbook flagged in ≥ 18.
    (The chain's size and power, with 102 seeds, are tests/test_lossless.py's; this is the tree's walk.)"""
    p, q = long_tail()
    pair = table_pair(p, q)
    verdicts = {"lossless": 0, "textbook": 0}
    for mode in verdicts:
        for seed in range(20):
            config = tree_config(3, 2, 6, mode=mode, seed=1000 * seed)
            result = check(mode, list(first_tokens(pair, [0], config, 300)), reference(pair, [0], config))
            verdicts[mode] += result.consistent
    assert verdicts["lossless"] >= 18
    assert verdicts["textbook"] <= 2


@pytest.mark.slow
def test_lossless_tree_joint_of_two_tokens_matches_the_target():
    """Bigram tables: P(y1, y2) = p(y1|x) p(y2|y1), through depth-2 acceptances and residuals."""
    p = torch.tensor(
        [[0.1, 0.4, 0.3, 0.2], [0.5, 0.1, 0.2, 0.2], [0.25, 0.25, 0.25, 0.25], [0.3, 0.0, 0.3, 0.4]],
        dtype=torch.float64,
    )
    q = torch.tensor(
        [[0.4, 0.1, 0.1, 0.4], [0.2, 0.2, 0.3, 0.3], [0.1, 0.6, 0.2, 0.1], [0.25, 0.25, 0.25, 0.25]],
        dtype=torch.float64,
    )
    pair = table_pair(p, q)
    dec = Decoder(pair, [0], tree_config(2, 2, 5, mode="lossless", max_new_tokens=2))
    counts = torch.zeros(4, 4)
    for seed in range(6000):
        dec.restart(seed)
        out = dec.run().new_tokens
        counts[out[0], out[1]] += 1
    expected = (p[0][:, None] * p).flatten() * 6000
    keep = expected > 0
    assert counts.flatten()[~keep].sum() == 0
    chi2 = float((((counts.flatten() - expected) ** 2)[keep] / expected[keep]).sum())
    dof = int(keep.sum()) - 1
    assert float(torch.special.gammaincc(torch.tensor(dof / 2), torch.tensor(chi2 / 2))) > 1e-3


# --- the figure -----------------------------------------------------------------------------------


def test_tree_chart_draws_every_node_the_path_and_the_next_token(pairs):
    from specviz.viz.tree_chart import MAX_SHOWN, _short, tree_chart, tree_run_chart

    dec = Decoder(pairs["self"], PROMPT, tree_config(2, 3, 6, mode="greedy", max_new_tokens=8))
    step = dec.step()
    fig = tree_chart(step)
    by_name = {t.name: t for t in fig.data if t.name}
    drawn = sum(len(by_name[d].x) for d in ("accepted", "rejected", "not tested"))
    assert drawn == len(step.tree.nodes) == 6
    assert len(by_name["accepted"].x) == len(step.tree.path) == step.n_accepted
    star = by_name[f"next token ({step.next_rule})"]
    assert list(star.x) == [len(step.tree.path) + 1]  # one level below the node where the walk stopped
    thick = [t for t in fig.data if t.mode == "lines" and t.line.width == 6]
    assert len(thick) == 1 and [x for x in thick[0].x if x is not None] == [
        d for n in range(len(step.tree.path)) for d in (n, n + 1)
    ]
    # the labels carry each node's q and p
    node = step.tree.nodes[step.tree.path[0]]
    assert f"q{_short(node.q)} p{_short(node.p)}" in by_name["accepted"].text[0]  # e.g. "·the q.42 p.3"
    assert [_short(x) for x in (0.94, 0.3, 0.05, 0.001, 0.999, 0.0)] == [".94", ".3", ".05", "0", "1.0", "0"]
    # a bigger tree: at most MAX_SHOWN nodes are drawn, the untested subtrees folded into "+k"
    big = Decoder(pairs["random"], PROMPT, tree_config(4, 4, 24, mode="textbook", seed=5, max_new_tokens=8)).step()
    fig = tree_chart(big)
    shown = sum(len(t.x) for t in fig.data if t.name in ("accepted", "rejected", "not tested"))
    labels = [s for t in fig.data if t.name in ("accepted", "rejected", "not tested") for s in t.text]
    folded = sum(int(s.rsplit("+", 1)[1]) for s in labels if " +" in s)
    assert shown <= MAX_SHOWN < 24 and shown + folded == 24
    run = tree_run_chart(dec.run().steps)
    assert list(run.data[1].y) == [s.nodes for s in dec.steps]


# --- chain against tree at the same budget --------------------------------------------------------


def test_chain_against_tree_numbers_worked_by_hand():
    from specviz.analysis.measure import PairedStep
    from specviz.analysis.trees import ChainTreeResult, ShapeResult
    from specviz.viz.tree_chart import chain_tree_chart

    # chain: 10 steps of 2 tokens, each 50 ms (verify 40 ms); tree: 8 steps of 3 tokens, each 75 ms (verify 60 ms);
    # the target alone takes 50 ms for each of the same tokens (100 and 150 ms a step): both 2.0×, every resample
    # alike; v(5) = 40 / 50 = 0.8 for the chain, 60 / 50 = 1.2 for the tree
    chain_steps = tuple(PairedStep(2, 4, 50.0, 10.0, 40.0, 100.0) for _ in range(10))
    tree_steps = tuple(PairedStep(3, 4, 75.0, 15.0, 60.0, 150.0) for _ in range(8))
    result = ChainTreeResult((ShapeResult(4, "chain", 1, 4, chain_steps), ShapeResult(4, "tree", 2, 3, tree_steps)))
    chain, tree = result.rows
    assert (chain.tokens_per_step, tree.tokens_per_step, chain.target_passes, tree.emitted) == (2.0, 3.0, 10, 24)
    assert chain.speedup().value == pytest.approx(2.0) and tree.speedup().value == pytest.approx(2.0)
    assert chain.verify_cost().value == pytest.approx(0.8) and tree.verify_cost().value == pytest.approx(1.2)
    assert result.verdict() == (
        "At 4 nodes per pass the tree emits 3.00 tokens per step against the chain's 2.00, "
        "speedups within noise of each other (2.00× against 2.00×)."
    )
    frame = result.to_frame()
    assert list(frame["shape"]) == ["chain", "tree: topk 2, steps 3"] and list(frame["v(budget + 1)"]) == [
        "0.80",
        "1.20",
    ]
    assert list(frame["tokens per step"]) == ["2.00", "3.00"]  # as text: no "39.7000" on a projector
    fig = chain_tree_chart(result, "tokens per step")
    assert [list(t.y) for t in fig.data] == [[2.0], [3.0]] and [t.name for t in fig.data] == ["chain", "tree"]
    assert [list(t.y) for t in chain_tree_chart(result, "speedup").data] == [[2.0], [2.0]]
    faster = ChainTreeResult(
        (
            ShapeResult(4, "chain", 1, 4, chain_steps),
            ShapeResult(4, "tree", 2, 3, tuple(PairedStep(3, 4, 50.0, 10.0, 40.0, 150.0) for _ in range(8))),
        )
    )
    assert "the tree faster (3.00× against 2.00×)" in faster.verdict()  # separated intervals: a side named


def test_chain_against_tree_runs_every_budget():
    from specviz.analysis.trees import compare

    seen, pair = [], tiny_text_pair()
    result = compare(pair, ["w1 w2 w3"], budgets=(4, 8), max_new_tokens=12, progress=lambda *a: seen.append(a))
    assert [(r.budget, r.shape) for r in result.rows] == [(4, "chain"), (4, "tree"), (8, "chain"), (8, "tree")]
    assert seen[-1][:2] == (4, 4)
    assert all(r.emitted == 12 for r in result.rows)  # every run wrote its 12 tokens
    with pytest.raises(ConfigError, match="budgets"):
        compare(pair, ["w1"], budgets=(5,))


# --- the real pair -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_on_the_real_pair_trees_are_exact(embedded_cache):
    """The embedded pair: one tree pass equals each path scored alone (p within 1e-5); greedy trees give
    the target's own greedy text with every draft kind; lossless trees pass the page's check on the
    first token (200 trials, as the page's defaults)."""
    from specviz import load_pair

    pair = load_pair("embedded", "embedded")
    ids = list(Decoder(pair, "The cat sat on the", SpecConfig(), chat=False).prompt_ids)
    model = pair.target.model
    session = pair.target.new_session()
    session.extend(ids[:-1])
    base = session.length
    parents = [base - 1] + [base if up < 0 else base + 1 + up for up in PARENTS]
    rows = session.extend_tree([ids[-1], *TOKENS], parents)
    for j in range(len(TOKENS)):
        alone = full_logits(model, ids + [TOKENS[i] for i in path_of(j)])[-1]
        torch.testing.assert_close(rows[1 + j].softmax(-1), alone.softmax(-1), rtol=0, atol=1e-5)  # p itself
        torch.testing.assert_close(rows[1 + j], alone, rtol=0, atol=1e-3)  # float32 logits of size ~30
    expected = model.generate(torch.tensor([ids]), do_sample=False, max_new_tokens=24)[0, len(ids) :].tolist()
    for draft in ("embedded", "early-exit:8", "self", "prompt-lookup"):
        drafted = pair if draft == "embedded" else load_pair("embedded", draft)
        run = Decoder(drafted, ids, tree_config(3, 4, 10, mode="greedy", max_new_tokens=24)).run()
        assert list(run.new_tokens) == expected, draft
    config = tree_config(3, 2, 6, mode="lossless")
    result = check(
        "lossless",
        list(first_tokens(pair, "The cat sat on the", config, 200)),
        reference(pair, "The cat sat on the", config),
    )
    assert result.consistent, result.verdict()


def test_a_one_hot_tree_records_what_each_main_line_token_was_compared_with():
    """p = (0.1, 0.6, 0.3), q = (0.6, 0.3, 0.1) everywhere; topk 2, 2 levels, 3 nodes, one-hot q (SGLang's walk).
    Seed 0's first step tries token 2 first (p′(2) = 0.3, rejected), then token 1 against p′ = p without token 2:
    0.6 / (1 − 0.3) = 6/7, accepted. The main line's record compares r with 6/7, not p(1) = 0.6; the second step
    rejects token 0 (0.1) and keeps token 1 against 0.6 / 0.9 = 2/3.
    A trace whose threshold is below p(ŷ) is refused."""
    import json

    from specviz.core.trace import RunTrace
    from specviz.errors import TraceError
    from tests.helpers import table_pair

    pair = table_pair([0.1, 0.6, 0.3], [0.6, 0.3, 0.1])
    config = SpecConfig(mode="lossless", verification="one-hot", topk=2, steps=2, num_draft_tokens=3, seed=0)
    run = Decoder(pair, [0], dataclasses.replace(config, max_new_tokens=12)).run()
    first, second = run.steps[:2]
    assert [(n.token, n.decision) for n in first.tree.nodes[:2]] == [(2, "rejected"), (1, "accepted")]
    assert first.draft_tokens == (1,) and first.verify.rule == "one-hot"
    assert first.verify.threshold == pytest.approx((6 / 7,)) and first.p == pytest.approx((0.6,))
    assert second.verify.threshold == pytest.approx((2 / 3,)) and second.verify.passed == (True,)
    data = json.loads(run.to_json())
    assert RunTrace.from_dict(data).to_dict() == run.to_dict()
    data["steps"][0]["verify"]["threshold"][0] = 0.59  # below p(ŷ) = 0.6: no walk compares with that
    data["steps"][0]["r"][0] = data["steps"][0]["tree"]["nodes"][1]["r"] = 0.5  # (a pass against it, as recorded)
    with pytest.raises(TraceError, match="was not compared with p"):
        RunTrace.from_dict(data)


class _SessionsKept:
    """A draft model whose sessions the test can read (a test's own wrapper: the shared model is not touched)."""

    def __init__(self, model) -> None:
        self.model, self.sessions = model, []

    def new_session(self, *args):
        self.sessions.append(self.model.new_session(*args))
        return self.sessions[-1]

    def __getattr__(self, name):
        return getattr(self.model, name)


@pytest.mark.parametrize(("kind", "mode"), [("random", "textbook"), ("feature", "greedy"), ("early-exit", "lossless")])
def test_a_tree_step_counts_one_draft_pass_per_level_not_per_node(pairs, kind, mode):
    """docs/algorithm.md: each level costs one draft forward over all its expanded nodes. A tree of 3 levels of
    topk 2 keeping 6 nodes: 3 draft passes a step (the root's, then 2 levels), whatever the pruning keeps, and the
    counted work charges c for those 3, not for the 6 nodes (the draft's own session counts the same passes)."""
    pair = pairs[kind]
    kept = _SessionsKept(pair.draft)
    watched = ModelPair(pair.target, kept, pair.codec)
    run = Decoder(watched, PROMPT, tree_config(2, 3, 6, mode=mode, seed=1, max_new_tokens=12)).run()
    first = run.steps[0]
    assert (first.draft_passes, first.nodes) == (3, 6)
    passes = [s.draft_passes for s in run.steps]
    assert max(passes) == 3  # fewer only where the run's last tokens cap the tree's depth
    assert kept.sessions[0].forwards == 1 + sum(passes)  # the prompt's pass, then each step's
    work = Work.of_steps(run.steps)
    assert work.drafted == sum(passes) < sum(s.nodes for s in run.steps)
    assert work.pass_tokens == tuple(s.nodes + 1 for s in run.steps)
    saved = dataclasses.asdict(run.steps[0].tree)
    del saved["draft_passes"]
    again = TreeTrace.from_dict(saved)
    assert again.draft_passes == 0  # a trace saved before the passes were kept reads as its kept depth
    assert dataclasses.replace(run.steps[0], tree=again).draft_passes == max(n.depth for n in again.nodes)
