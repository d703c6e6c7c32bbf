"""Suffix decoding (specviz.drafts.suffix), as ArcticInference's SuffixDecodingCache drafts for vLLM and SGLang: its
trees' counts and sibling order, its drafts and their cut-offs worked out by hand on small token sequences, the
history of earlier answers (evicted oldest first), the kind loaded like any other, and runs on tiny random models
that keep the target's greedy text."""

from __future__ import annotations

import pytest
import torch

import specviz
from specviz import Decoder, HFModel, ModelPair, SpecConfig, specs
from specviz.drafts import kinds
from specviz.drafts.kinds.suffix import Suffix
from specviz.drafts.suffix import SuffixDrafter, SuffixHistory, SuffixSettings, SuffixTree
from specviz.errors import ModelError
from specviz.models.text import IdsCodec
from tests.helpers import full_logits, save_tiny, tiny_llama

# 1 2 3 4 | 1 2 3 5 | 1 2 3 4 | 1 2 (positions 0 … 13)
SEQ = [1, 2, 3, 4, 1, 2, 3, 5, 1, 2, 3, 4, 1, 2]


def tree_of(tokens, depth: int = 24) -> SuffixTree:
    tree = SuffixTree(depth)
    tree.extend(0, tokens)
    return tree


def test_the_tree_counts_every_substring_up_to_its_depth():
    # 1 2 3 1 2 4 1 2: distinct substrings by length 4, 5, 6, 5, 4, 3, 2, 1 = 30, and the root
    tree = tree_of([1, 2, 3, 1, 2, 4, 1, 2])
    assert tree.nodes == 31 and tree.root.count == 8
    node = tree.match([1, 2])
    assert node.count == 3  # at 0, 3 and 6 (the last one at the end: nothing follows it)
    assert [(c.token, c.count) for c in node.order] == [(3, 1), (4, 1)]  # a tie: the first seen leads
    assert tree.match([2, 4, 1]).count == 1 and tree.match([4, 4]) is None
    shallow = tree_of([1, 2, 3, 1, 2, 4, 1, 2], depth=2)  # substrings of 1 and 2 tokens: 4 + 5, and the root
    assert shallow.nodes == 10 and shallow.match([1, 2, 3]) is None
    tree.remove(0)
    assert tree.nodes == 1 and tree.root.count == 0 and tree.root.order == []


def test_siblings_keep_the_engines_order_when_counts_tie():
    """ArcticInference's _increment_count moves a node that reaches its elder sibling's count in front of that
    sibling's group: after 1 7, 1 8, 1 8, 1 7 both children of "1" count 2, and 7, the later to reach 2, leads."""
    tree = tree_of([1, 7, 1, 8, 1, 8, 1, 7])
    assert [(c.token, c.count) for c in tree.match([1]).order] == [(7, 2), (8, 2)]
    tree = tree_of([1, 7, 1, 8, 1, 8])
    assert [(c.token, c.count) for c in tree.match([1]).order] == [(8, 2), (7, 1)]  # most counts first


def test_the_draft_is_the_best_scored_match_and_its_path_by_hand():
    """The context SEQ against its own tree. m = 2 ("1 2", 4 times): 3 (3 of 4 → 0.75), 4 (2 of 3 → 0.5), at most
    2 tokens: score 1.25. m = 3 ("4 1 2", twice): 3 (½), 5 (½ · 1), 1: score 1.5. m = 4, 5, 6 ("… 4 1 2" at 0 and 8):
    ½ each, m tokens: 2.0, 2.5, 3.0. m = 7 occurs only at the end: no draft. The best: m = 6, 3 5 1 2 3 4."""
    tree = tree_of(SEQ)
    draft = tree.speculate(SEQ, 24)
    assert draft.tokens == (3, 5, 1, 2, 3, 4) and draft.match_len == 6
    assert draft.probs == (0.5,) * 6 and draft.score == 3.0
    # at most τ = 3 tokens: m = 3 … 6 all score 1.5 with 3 5 1, and the longer match wins a tie
    capped = tree.speculate(SEQ, 3)
    assert capped.tokens == (3, 5, 1) and capped.score == 1.5 and capped.match_len == 6
    # the context's last 3 tokens only (as max_tree_depth = 3 cuts it): m ≤ 2
    two = tree.speculate(SEQ[-3:], 24)
    assert two.tokens == (3, 4) and two.probs == (0.75, 0.5) and two.score == 1.25 and two.match_len == 2


def test_min_token_prob_and_max_spec_factor_cut_the_draft_by_hand():
    tree = tree_of(SEQ)
    # min_token_prob 0.6: m = 1 and 2 keep 3 (0.75) and stop before 4 (0.5); longer matches start at ½: nothing
    sure = tree.speculate(SEQ, 24, SuffixSettings(min_token_prob=0.6))
    assert sure.tokens == (3,) and sure.probs == (0.75,) and sure.match_len == 2
    # max_spec_factor 0.5: m tokens become ⌊m / 2⌋: m = 6 gives 3 5 1 (score 1.5), m = 2 gives 3 (0.75)
    half = tree.speculate(SEQ, 24, SuffixSettings(max_spec_factor=0.5))
    assert half.tokens == (3, 5, 1) and half.match_len == 6
    # max_spec_offset 1 with factor 0: one token whatever the match, m = 1 … 6 tie at 0.75 or ½: m = 2 (3, 0.75)
    one = tree.speculate(SEQ, 24, SuffixSettings(max_spec_factor=0.0, max_spec_offset=1.0))
    assert one.tokens == (3,) and one.score == 0.75 and one.match_len == 2
    assert tree.speculate(SEQ, 24, SuffixSettings(min_token_prob=1.0)).tokens == ()


def test_the_history_keeps_the_latest_answers_and_the_run_its_own_tree():
    history = SuffixHistory(SuffixSettings(max_cached_requests=2))
    first, second = history.start(), history.start()
    history.add(first, [9, 8, 7])
    history.add(second, [6, 5])
    third = history.start()  # a third answer: the oldest goes
    assert history.kept == (second, third) and set(history.tree.sequences()) == {second}
    history.cut(second, 1)
    assert history.tree.sequences()[second] == (6,) and history.tree.match([5]) is None
    assert SuffixHistory(SuffixSettings(max_cached_requests=0)).start() is None  # no shared tree at all
    budget = SuffixHistory(max_nodes=8)
    old = budget.start()
    budget.add(old, [1, 2, 3])  # 6 substrings and the root
    new = budget.start()
    budget.add(new, [4, 5])  # 3 more: over 8 nodes, the older answer goes
    assert set(budget.tree.sequences()) == {new} and budget.tree.nodes == 4


def session_rows(drafter: SuffixDrafter, prompt, tau: int) -> list[int]:
    """A step as the engine makes it: the prompt read, τ told, then a draft token at a time until no proposal."""
    session = drafter.new_session()
    session.extend(prompt[:-1], keep=1)
    session.plan(tau)
    feed, tokens = [prompt[-1]], []
    for _ in range(tau):
        row = session.extend(feed, keep=1)[-1]
        if bool((row == float("-inf")).all()):
            break
        token = int(row.argmax())
        assert row[token] == 0.0 and bool(row.exp().sum() == 1.0)  # one-hot q
        tokens.append(token)
        feed = [token]
    return tokens


def test_a_session_drafts_from_the_prompt_and_the_answers_before_it():
    drafter = SuffixDrafter(16)
    assert session_rows(drafter, SEQ, 6) == [3, 5, 1, 2, 3, 4]  # its own prompt's tree, as by hand above
    history = SuffixHistory()
    shared = drafter.remembering(history)
    assert drafter.history is None and shared.history is history  # the shared drafter is not changed
    answer = history.start()
    history.add(answer, [10, 11, 12, 13, 14, 15])  # an earlier run answered 10 11 … 15
    # a new prompt that ends with 10 11 12: its own tree has nothing after them; the earlier answer has 13 14 15
    assert session_rows(shared, [7, 10, 11, 12], 8) == [13, 14, 15]
    assert session_rows(drafter, [7, 10, 11, 12], 8) == []  # without the history: nothing to propose


def greedy_text(model, prompt, n: int) -> list[int]:
    ids = list(prompt)
    for _ in range(n):
        ids.append(int(full_logits(model, ids)[-1].argmax()))
    return ids[len(prompt) :]


@pytest.mark.parametrize("tree", [False, True])
def test_greedy_runs_keep_the_targets_text_and_the_same_question_again_pays(tree):
    model = tiny_llama(0)
    prompt = [5, 17, 3, 5, 17, 40, 2]
    want = greedy_text(model, prompt, 24)
    history = SuffixHistory()
    pair = ModelPair(HFModel(model, "tiny-target"), SuffixDrafter(96).remembering(history), IdsCodec(None))
    shape = {"steps": 6, "topk": 1, "num_draft_tokens": 6} if tree else {}
    config = SpecConfig(tau=6, mode="greedy", max_new_tokens=24, **shape)
    first = Decoder(pair, prompt, config).run()
    again = Decoder(pair, prompt, config).run()
    assert list(first.new_tokens) == list(again.new_tokens) == want
    assert len(again.steps) < len(first.steps) and len(again.steps) <= 24 / 4  # the earlier answer, copied
    assert history.answers == 2


def test_a_step_taken_back_is_taken_out_of_the_trees():
    model = tiny_llama(0)
    pair = ModelPair(HFModel(model, "tiny-target"), SuffixDrafter(96), IdsCodec(None))
    config = SpecConfig(tau=4, mode="greedy", max_new_tokens=20)
    straight = Decoder(pair, [5, 17, 3, 5, 17], config).run()
    dec = Decoder(pair, [5, 17, 3, 5, 17], config)
    for _ in range(3):
        dec.step()
    dec.undo()
    dec.undo()
    assert dec.run().outcome() == straight.outcome()


def test_the_kind_is_listed_parsed_and_loaded_like_any_other(tmp_path):
    kind = kinds.kind_of(specs.parse("suffix"))
    assert kind.name == "suffix" and kind in kinds.offered() and "suffix[:" in kinds.hints()
    spec = specs.parse(" suffix:min_token_prob=0.20, max_spec_factor=2 ")
    assert spec == Suffix(text="", settings=SuffixSettings(min_token_prob=0.2, max_spec_factor=2.0))
    assert str(spec) == "suffix:max_spec_factor=2,min_token_prob=0.2" and str(specs.parse("suffix")) == "suffix"
    for bad in ("suffix:depth=3", "suffix:min_token_prob=2", "suffix:max_tree_depth=1.5", "suffix:max_spec_factor"):
        with pytest.raises(ModelError):
            specs.parse(bad)
    folder = save_tiny(tmp_path / "tiny", seed=0)
    pair = specviz.load_pair(folder, "suffix:max_tree_depth=8", runtime="torch")
    assert isinstance(pair.draft, SuffixDrafter) and pair.draft.settings.max_tree_depth == 8
    run = Decoder(pair, [4, 9, 4, 9, 4], SpecConfig(tau=3, mode="lossless", max_new_tokens=12)).run()
    assert all(q == 1.0 for s in run.steps for q in s.q)  # one-hot q: a proposal is certain
    assert len(run.new_tokens) == 12 and torch.is_tensor(full_logits(tiny_llama(0), [1]))
    pair.close()
