"""What the Decode page decides before it draws (specviz.viz.view, specviz.classroom.replay.replay_for):
the step shown by default, the metrics up to a step, the metric tiles, the run's settings from its
widgets, and an uploaded trace opened once."""

import dataclasses

import pytest

from specviz import Decoder, SpecConfig
from specviz.classroom.replay import replay_for
from specviz.core.metrics import Metrics
from specviz.errors import ConfigError
from specviz.viz import view
from tests.helpers import hf_pair


@pytest.fixture(scope="module")
def run():
    return Decoder(hf_pair(), [5, 17, 42], SpecConfig(tau=3, mode="greedy", max_new_tokens=12)).run()


def test_the_default_step_is_the_newest_with_a_draft(run):
    steps = run.steps[:3]
    assert view.default_step(steps) == 3 and view.default_step_note(steps, 3) is None
    no_draft = (*steps[:2], dataclasses.replace(steps[2], tau=0))  # the end was near: no draft at step 3
    assert view.default_step(no_draft) == 2
    assert view.default_step_note(no_draft, 2) == (
        "The last step (3) had no draft: the end was near. Showing step 2, the last with one."
    )
    assert view.default_step_note(no_draft, 1) is None  # a step picked by hand needs no note


def test_the_metrics_follow_the_steps_counted(run):
    m, text = view.metrics_upto(run, run.steps[:2])
    assert text == f"steps 1–2 of {len(run.steps)}" and m.steps == 2 and m.target_forward_passes == 2
    assert m.emitted_tokens == sum(len(s.emitted) for s in run.steps[:2])
    assert view.metrics_upto(run, run.steps) == (run.metrics, "the whole run")


NOTED = ("draft acceptance rate", "α")  # tiles whose note says what they are (issue 65.9)


def test_metric_tiles_from_numbers_worked_by_hand():
    # 12 drafted, 9 accepted over 4 steps: length 1 + 9/4 = 3.25; 30 ms drafting of 120: 25% / 75%
    m = Metrics(
        steps=4,
        drafted_tokens=12,
        accepted_tokens=9,
        emitted_tokens=13,
        draft_acceptance_rate=0.75,
        mean_acceptance_length=3.25,
        per_position_acceptance_rate=(),
        alpha=0.6125,
        c=0.05,
        target_forward_passes=4,
        draft_ms=30.0,
        verify_ms=90.0,
        tokens_per_second=108.3,
        mean_accepted_draft_tokens=2.25,
    )
    tiles = {t.label: t for t in view.metric_tiles(m)}
    assert [(t.label, t.value) for t in tiles.values()] == [
        ("mean acceptance length", "3.25"),
        ("draft acceptance rate", "75%"),
        ("α", "0.613"),
        ("target forward passes", "4"),
        ("tokens/s", "108.3"),
        ("time: draft / verify", "25% / 75%"),
    ]
    assert "(mean accepted draft tokens, accepted / steps): 2.25" in tiles["mean acceptance length"].help
    assert tiles["target forward passes"].help.startswith("for 13 tokens. vLLM counts those that drafted as ")
    assert "c = 0.05" in tiles["time: draft / verify"].help
    # every metric but the time split under the engines' names (docs/algorithm.md's glossary)
    length = tiles["mean acceptance length"].help
    assert "vLLM logs it as 'Mean acceptance length' (1 + accepted / num_drafts)" in length and "'accept len'" in length
    assert "'Avg Draft acceptance rate'" in tiles["draft acceptance rate"].help
    assert "SGLang's 'accept rate' is not this" in tiles["draft acceptance rate"].help
    assert "no engine reports it" in tiles["α"].help and "Accepted throughput" in tiles["tokens/s"].help
    # issue 65.9: the rate (89%) beside α (0.828): what each is, under its value (not only in the hover help)
    assert tiles["draft acceptance rate"].note == "counted: kept / drafted, this run"
    assert tiles["α"].note == "expected: Σ min(p, q) a token"
    remote = view.metric_tiles(m, target_top_k=5)[2]
    assert remote.label == "α ≈ (top-k)" and "approximate (top-5)" in remote.help
    # a tree: 12 nodes verified in 4 passes, 9 accepted down the paths; the 75% is over nodes, and says so
    tree = {t.label: t for t in view.metric_tiles(m, tree=True)}
    assert "draft acceptance rate" not in tree and tree["node acceptance rate"].value == "75%"
    assert tree["node acceptance rate"].help.startswith("accepted depth / nodes verified")
    assert "1 + accepted depth / steps" in tree["mean acceptance length"].help
    assert tree["target forward passes"].help.startswith("for 13 tokens; 12 nodes verified in them. vLLM counts")


def test_a_depth_no_tree_step_drafted_is_absent_not_zero():
    """A lossless tree of 8 nodes, topk 3 and steps 4 keeps rank paths of depth 3 at most (docs/algorithm.md):
    depth 4 is never drafted, so its rates are None (drawn as "not drafted"), never 0.00."""
    run = Decoder(
        hf_pair(), [5, 17, 42], SpecConfig(mode="lossless", topk=3, steps=4, num_draft_tokens=8, max_new_tokens=12)
    ).run()
    assert {s.depth for s in run.steps} <= {1, 2, 3} and max(s.depth for s in run.steps) == 3
    assert run.metrics.per_position_acceptance_rate[3] is None
    assert run.metrics.conditional_per_position_acceptance_rate[3] is None
    assert all(rate is not None for rate in run.metrics.per_position_acceptance_rate[:3])


def test_the_decode_settings_make_a_chain_or_a_tree():
    chain = view.decode_config(None, "confidence", 0.4, True, tau=5, seed=3, max_new_tokens=20, mode="textbook")
    assert (chain.tau_policy, chain.confidence, chain.broken_draft, chain.tree) == ("confidence", 0.4, True, False)
    tree = view.decode_config((3, 4, 10), "heuristic", 0.4, True, tau=5, seed=3, max_new_tokens=20)
    assert (tree.topk, tree.steps, tree.num_draft_tokens, tree.tau_policy) == (3, 4, 10, "fixed")
    assert tree.tree and not tree.broken_draft  # chain variants are not used with a tree
    with pytest.raises(ConfigError):
        view.decode_config((3, 0, 10), "fixed", 0.4, False, tau=5)


def test_an_uploaded_trace_opens_once_and_a_bad_file_says_why(run):
    data = run.to_json().encode()
    replay, error = replay_for(data, "a.json", None)
    assert error is None and replay.name == "a.json" and replay.cursor == 0
    replay.step()
    assert replay_for(data, "a.json", replay) == (replay, None) and replay.cursor == 1  # kept where it was
    fresh, _ = replay_for(data, "b.json", replay)
    assert fresh is not replay and fresh.cursor == 0
    bad, error = replay_for(b"not json", "c.json", replay)
    assert bad is None and "not JSON" in error


def test_the_step_table_worked_by_hand():
    """Draft ('a', 'b') on q = (2/3, 1/3), p = (1/3, 2/3) at both positions, lossless: p/q is 0.5 for 'a' and 2 for 'b'.
    r = 0.9 > 0.5 rejects 'a' ('b' is never reached); r = 0.4 accepts 'a' and r = 0.5 ≤ min(1, 2) accepts 'b'. Before
    a Reveal the decisions go (r too, unless the quiz is on the rule), and greedy mode adds p's argmax: 'b'."""
    from specviz.classroom.sandbox import SandboxCase, sandbox_step
    from specviz.viz.render import step_frame

    q, p = ((2 / 3, 1 / 3),) * 2, ((1 / 3, 2 / 3),) * 3
    rejected = sandbox_step(SandboxCase(("a", "b"), q, p, (0.9, 0.5), u=(0.3, 0.8)), "lossless")
    table = step_frame(rejected, greedy=False)
    assert table.index.name == "position" and list(table.index) == [1, 2]
    assert list(table.columns) == ["token", "q", "p", "p/q", "r", "decision"]
    assert table.values.tolist() == [
        ["a", "0.6667", "0.3333", "0.5000", "0.9000", "rejected"],
        ["b", "0.3333", "0.6667", "2.0000", "0.5000", "not reached"],
    ]
    accepted = sandbox_step(SandboxCase(("a", "b"), q, p, (0.4, 0.5), u=(0.3, 0.8)), "lossless")
    assert list(step_frame(accepted, greedy=False)["decision"]) == ["accepted", "accepted"]
    hidden = step_frame(rejected, greedy=True, hidden=True)
    assert list(hidden.columns) == ["token", "q", "p", "p/q", "target argmax"]
    assert list(hidden["target argmax"]) == ["b", "b"]
    assert list(step_frame(rejected, greedy=False, hidden=True, draws=True)["r"]) == ["0.9000", "0.5000"]


def test_timing_tiles_say_their_spread_or_that_they_are_one_steps(run):
    """Issue 47: tokens/s read 28.9 after one step and 2.2 after the next, with no word on either. By hand: two
    steps of 100 ms making 2 and 4 tokens: 20 and 40 tokens/s, 30 together. Resampling the two steps gives both the
    first (1/4: 20), one of each (1/2: 30) or both the second (1/4: 40), so the 95% interval is 20–40."""
    two = (
        dataclasses.replace(run.steps[0], emitted=(1, 2), draft_ms=10.0, verify_ms=90.0),
        dataclasses.replace(run.steps[1], emitted=(1, 2, 3, 4), draft_ms=10.0, verify_ms=90.0),
    )
    assert view.rate_note(two) == "20.0–40.0 over 2 steps (95%)"
    assert view.rate_note(two[:1]) == "one step's time: not yet a rate"
    m, _ = view.metrics_upto(run, run.steps[:1])
    tiles = {t.label: t for t in view.metric_tiles(m, steps=run.steps[:1])}
    assert tiles["tokens/s"].note == "one step's time: not yet a rate"
    assert tiles["time: draft / verify"].note == "one step's time"
    assert all(not t.note for label, t in tiles.items() if label not in ("tokens/s", "time: draft / verify", *NOTED))
    many = {t.label: t for t in view.metric_tiles(run.metrics, steps=run.steps)}
    assert many["tokens/s"].note.endswith(f"over {len(run.steps)} steps (95%)")
    assert not many["time: draft / verify"].note
