"""A saved trace is checked completely before it replays: any corruption is one `TraceError`
naming where it is, never a Python exception from deep inside the page."""

from __future__ import annotations

import copy
import json

import pytest

from specviz import RunTrace, TraceError
from specviz.classroom.replay import load_trace
from tests.helpers import runs_by_mode


@pytest.fixture(scope="module")
def saved():
    return runs_by_mode([4, 8, 15, 16], tau=4, seed=3, max_new_tokens=20)


@pytest.mark.parametrize("mode", ["textbook", "lossless", "greedy"])
def test_a_genuine_trace_loads_unchanged(saved, mode):
    assert load_trace(saved[mode].to_json()) == saved[mode]
    assert load_trace(saved[mode].to_json(indent=1).encode()) == saved[mode]


def corrupt(run, edit) -> str:
    data = json.loads(run.to_json())
    edit(data)
    return json.dumps(data)


def first_rejecting(data) -> tuple[dict, int]:
    step = next(s for s in data["steps"] if s["n_accepted"] < s["tau"])
    return step, step["n_accepted"]


def set_q(data):
    data["steps"][0]["q"][0] = "oops"


def set_n(data):
    data["steps"][0]["n_accepted"] = 99


def accept_a_rejected_token(data):
    """Flip the first rejected token to accepted (n + 1) without touching its r and p/q."""
    step, n = first_rejecting(data)
    step["n_accepted"] = n + 1
    step["accepted"][n] = True
    step["decision"][n] = "accepted"
    if n + 1 < step["tau"]:
        step["decision"][n + 1] = "rejected"


def r_out_of_range(data):
    data["steps"][1]["r"][0] = 1.5


def p_over_one(data):
    data["steps"][0]["p"][0] = 1.2


def wrong_ratio(data):
    data["steps"][0]["ratio"][0] *= 2


def no_steps(data):
    data["steps"] = []


def missing_field(data):
    del data["steps"][0]["decision"]


def emitted_changed(data):
    data["steps"][0]["emitted"] = [7, 7, 7, 7, 7, 7, 7]


def bad_config(data):
    data["config"]["tau"] = -3


def wrong_rule(data):
    step, _ = first_rejecting(data)
    step["next_rule"] = "bonus"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (set_q, "step 1, draft token 1: q = 'oops' is not a probability in [0, 1]"),
        (set_n, "step 1: n_accepted = 99 is not between 0 and τ = 4"),
        (accept_a_rejected_token, "cannot be accepted"),
        (r_out_of_range, "step 2, draft token 1: r = 1.5 is not a draw in [0, 1)"),
        (p_over_one, "p = 1.2 is not a probability"),
        (wrong_ratio, "is not p / q"),
        (no_steps, "the trace has no steps to replay"),
        (missing_field, "step 1 lacks decision"),
        (emitted_changed, "is not the accepted run and the target's token"),
        (bad_config, "its settings are not valid: tau must be between 1 and 64"),
        (wrong_rule, "the next token's rule is 'bonus'"),
    ],
)
def test_every_corruption_is_one_clear_error(saved, edit, message):
    with pytest.raises(TraceError) as caught:
        load_trace(corrupt(saved["textbook"], edit))
    assert message in str(caught.value)


def test_a_400_digit_number_or_a_residual_top_of_0_is_one_clear_error(saved):
    """Issue 57.3: an uploaded trace with a 400-digit number (an OverflowError before: the check's isfinite) or
    residual_top: 0 (a TypeError before: it is falsy, so it went unchecked, then iterated)."""
    text = saved["lossless"].to_json()
    number = json.dumps(saved["lossless"].steps[0].q[0])
    assert number in text
    with pytest.raises(TraceError, match=r"^this file cannot be read: it holds a whole number of 400 digits"):
        load_trace(text.replace(number, "9" * 400, 1))
    with pytest.raises(TraceError, match=r"^this file cannot be read: it holds a number of 402 characters"):
        load_trace(text.replace(number, "0." + "1" * 400, 1))

    def residual_top_0(data):
        data["steps"][0]["residual_top"] = 0

    with pytest.raises(TraceError, match=r"^step 1: residual_top is neither null nor a list$"):
        load_trace(corrupt(saved["lossless"], residual_top_0))
    data = json.loads(text)
    data["steps"][0]["q"][0] = 10**400  # handed in as a dict: the check, not the reader, refuses it
    with pytest.raises(TraceError, match=r"^step 1, draft token 1: q = 1000.* is not a probability in \[0, 1\]"):
        RunTrace.from_dict(data)


@pytest.mark.parametrize(
    "settings",
    [
        {"mode": "lossless", "verification": "block"},
        {"mode": "greedy"},
        {"mode": "textbook", "topk": 2, "steps": 2, "num_draft_tokens": 3},
        {"mode": "lossless", "verification": "one-hot", "topk": 2, "steps": 2, "num_draft_tokens": 3},
    ],
)
def test_every_field_replaced_by_an_odd_value_is_a_trace_error_or_a_trace(settings):
    """Each field of a saved run (containers too) replaced by null, text, an empty list or object, true, -1, 0 or a
    400-digit number: RunTrace.from_dict gives one TraceError or a trace, never another exception."""
    from specviz import Decoder, SpecConfig
    from tests.helpers import tiny_text_pair

    config = SpecConfig(tau=2, max_new_tokens=4, seed=3, top_n=2, **settings)
    base = json.loads(Decoder(tiny_text_pair(), "w1 w2 w3", config).run().to_json())

    def paths(node, path=()):
        if path:
            yield path
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            yield from paths(value, (*path, key))

    others = []
    for path in list(paths(base)):
        for value in (None, "x", [], {}, True, -1, 0, 10**400):
            data = copy.deepcopy(base)
            node = data
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = value
            try:
                RunTrace.from_dict(data)
            except TraceError:
                continue
            except Exception as exc:
                others.append(f"{path} = {str(value)[:12]}: {exc!r}")
    assert others == [], "\n".join(others[:20])


def test_greedy_decisions_follow_the_targets_argmax(saved):
    def keep_a_mismatch(data):
        step, n = first_rejecting(data)
        step["p_top"][n][0][0] = step["draft_tokens"][n] + 1  # the argmax is another token...
        accept_a_rejected_token(data)  # ...yet the draft token is marked as kept

    with pytest.raises(TraceError, match="greedy keeps a token only if it is the target's argmax"):
        load_trace(corrupt(saved["greedy"], keep_a_mismatch))

    def draw_in_greedy(data):
        data["steps"][0]["r"][0] = 0.5

    with pytest.raises(TraceError, match="greedy mode makes no draw"):
        load_trace(corrupt(saved["greedy"], draw_in_greedy))


@pytest.mark.parametrize("text", [b"\xff\xfe", b"{not json", b"[1, 2]", b'{"hello": 1}'])
def test_files_that_are_not_traces(text):
    with pytest.raises(TraceError):
        load_trace(text)


def test_a_replay_describes_its_models_and_settings(saved):
    from specviz.classroom.replay import Replay

    replay = Replay(saved["lossless"])
    replay.step()
    text = replay.describe()
    assert text.startswith(f"Replaying a saved trace: step 1 of {len(saved['lossless'].steps)}, no model loaded.")
    assert "**tiny-target** with draft **tiny-draft**, lossless mode, τ = 4" in text and "seed 3" in text


def test_an_edited_text_is_caught_against_the_tokenizer_and_against_the_trace_itself():
    """A trace whose next_text was edited to "HACKED" passed before and was drawn in the marked text."""
    from specviz import Decoder, SpecConfig
    from specviz.classroom.replay import check_texts, replay_for
    from tests.helpers import tiny_text_pair

    pair = tiny_text_pair(chat=True)
    run = Decoder(pair, "w5 w6 w7", SpecConfig(tau=3, max_new_tokens=12, seed=1)).run()
    assert check_texts(run, pair.codec).startswith("Its texts were checked against the tokenizer")
    hacked = json.loads(run.to_json())
    hacked["steps"][0]["next_text"] = "HACKED"
    text = json.dumps(hacked)
    with pytest.raises(TraceError, match=r"step 1, the next token: the text 'HACKED' is not token \d+'s"):
        check_texts(load_trace(text), pair.codec)
    # without a tokenizer: textbook's next token is p's argmax, so its id is also in next_top, with its real text
    with pytest.raises(TraceError, match=r"token \d+ reads 'HACKED' in step 1, the next token but '\w+' in step 1"):
        check_texts(load_trace(text))
    replay, error = replay_for(text.encode(), "hacked.json", None, lambda name: pair.codec)
    assert replay is None and "HACKED" in error
    replay, error = replay_for(run.to_json().encode(), "fine.json", None, lambda name: None)
    assert error is None and "no tokenizer for its target is here" in replay.describe()
    reply = json.loads(run.to_json())
    reply["text"] = "HACKED"
    with pytest.raises(TraceError, match="its text is not what the tokenizer makes of new_tokens"):
        check_texts(load_trace(json.dumps(reply)), pair.codec)
    prompt = json.loads(run.to_json())
    prompt["prompt"] = "w1 w2"
    with pytest.raises(TraceError, match="its prompt is not what the chat template"):
        check_texts(load_trace(json.dumps(prompt)), pair.codec)
