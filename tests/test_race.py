"""The race: both lanes on one pair, the lane behind in time always moves next, greedy lanes write the
same text, and the result's sentence from numbers worked by hand."""

from __future__ import annotations

import pytest

from specviz import SpecConfig
from specviz.analysis.race import PRESETS, Lane, Race, RaceResult
from tests.helpers import tiny_text_pair


def test_greedy_lanes_write_the_same_text_and_the_lane_behind_moves_next():
    race = Race(tiny_text_pair(), "w1 w2 w3 w4", SpecConfig(tau=3, mode="greedy", max_new_tokens=20))
    before = (0.0, 0.0)
    for alone, spec in race.frames():
        moved_alone = len(alone.tokens) > 0 and alone.seconds != before[0]
        moved_spec = spec.seconds != before[1]
        assert moved_alone != moved_spec  # one piece of work per frame
        if moved_alone and not race.spec.done and spec.passes:  # the alone lane moved: it was not ahead
            assert before[0] <= before[1]
        if moved_spec and not race.alone.done:
            assert before[1] < before[0]
        before = (alone.seconds, spec.seconds)
    result = race.result()
    assert result.same_text and len(result.alone.tokens) == len(result.speculative.tokens) == 20
    assert result.alone.passes == 20 and result.speculative.passes == len(race.spec.steps)
    assert result.tokens_per_pass == pytest.approx(20 / len(race.spec.steps))


def test_the_result_in_words_from_numbers_worked_by_hand():
    # target alone: 10 tokens, 0.1 s each (10 tok/s, 100 ms a token); speculation: 10 tokens in 4 passes of
    # 0.125 s (2, 3, 2, 3 tokens: 20 tok/s): 2.0× faster, 2.5 tokens per pass; a verify pass of 150 ms = 1.5
    # single-token passes; a draft token of 5 ms = 0.05 of one. The interval resamples the pieces: the alone
    # lane's are all alike (10 tok/s); four passes of 2 or 3 tokens average 2 to 3 (each 1/16 of the time, more
    # than the 2.5% each end leaves out): 16 to 24 tok/s, 1.6× to 2.4×.
    alone = Lane(tuple(range(10)), 1.0, 10, True, ((0.1, 1),) * 10)
    spec = Lane(tuple(range(10)), 0.5, 4, True, ((0.125, 2), (0.125, 3), (0.125, 2), (0.125, 3)))
    result = RaceResult(alone=alone, speculative=spec, verify_ms=150.0, draft_ms_per_token=5.0, tau=4, same_text=True)
    assert result.speedup == pytest.approx(2.0) and result.verify_cost == pytest.approx(1.5)
    spread = result.speedup_spread()
    assert (spread.value, spread.low, spread.high) == pytest.approx((2.0, 1.6, 2.4))
    assert result.summary() == (
        "Speculative decoding was 2.0× faster than the target alone (1.6–2.4×): 20.0 against 10.0 tokens/s, 2.5 "
        "tokens per target pass; each pass cost 1.5 single-token passes, and each of up to τ = 4 draft tokens 0.05 "
        "of one."
    )
    slow = RaceResult(alone, Lane((1,) * 10, 4.0, 10, True, ((0.4, 1),) * 10), 150.0, 50.0, 4, True)
    assert slow.summary().startswith("Speculative decoding was 4.0× slower than the target alone (0.25× its speed)")
    # the same 10 tok/s as the target alone, its steps taking 50 ms or 150 ms: the interval reaches both sides of 1
    even = RaceResult(alone, Lane((1,) * 10, 1.0, 10, True, ((0.05, 1), (0.15, 1)) * 5), 150.0, 5.0, 4, True)
    assert even.speedup_spread().low < 1.0 < even.speedup_spread().high
    assert even.summary().startswith("Speculative decoding was within noise of the target alone (")
    assert RaceResult.from_dict(result.to_dict()) == result  # a snapshot reopens the same race


def test_presets_name_drafts_that_load_and_prompts_with_text():
    assert {p.draft for p in PRESETS} <= {"prompt-lookup", "embedded", "early-exit:8"}
    assert all(p.prompt.strip() and 1 <= p.tau <= 16 for p in PRESETS)
