"""The Decode page with a lossy rule (docs/algorithm.md, "Lossy rules"), through Streamlit's AppTest: a tuner sets
SGLang's accept thresholds to 0.5 and reads, for the same drafts, how many more tokens each pass keeps and how far the
output moved from the target (exact). Model loading is patched to a tiny random pair (the `loads` fixture)."""

import math

import pytest

from tests.app_helpers import app, decoder


def test_sglangs_thresholds_at_a_half_show_the_gain_per_pass_beside_the_exact_distance(loads):
    at = app()
    at.radio(key="decode_mode").set_value("lossless").run()
    rule = at.selectbox(key="decode_rule")
    assert rule.format_func("sglang") == "SGLang thresholds (lossy)"  # labelled lossy in the picker
    rule.set_value("sglang").run()
    at.number_input(key="decode_threshold_single").set_value(0.5)
    at.number_input(key="decode_threshold_acc").set_value(0.5)
    at.slider(key="decode_tau").set_value(3)
    at.button(key="decode_step").click().run()
    at.button(key="decode_step").click().run()
    assert not at.exception
    dec = decoder(at)
    assert (dec.config.verification, dec.config.threshold_single, dec.config.threshold_acc) == ("sglang", 0.5, 0.5)
    steps = dec.steps
    # SGLang at 0.5 keeps ŷ with 1 where p(ŷ) ≥ 0.5, else min(1, p(ŷ)/0.5); its lossless one-hot rule with p(ŷ)
    lossy = [
        1 + sum(math.prod(1.0 if x >= 0.5 else min(1.0, 2 * x) for x in s.p[:k]) for k in range(1, s.tau + 1))
        for s in steps
    ]
    lossless = [1 + sum(math.prod(s.p[:k]) for k in range(1, s.tau + 1)) for s in steps]
    gained, kept = sum(lossy) / len(lossy), sum(lossless) / len(lossless)
    assert gained > kept
    decided = [d for s in steps for d in s.cost.tv[: s.n_accepted + 1]]
    assert all(0 < d < 1 for d in decided)  # the output moved, by a distance below 1
    notes = [w.value for w in at.warning if "SGLang's accept thresholds (lossy" in w.value]
    assert len(notes) == 1
    note = notes[0]
    assert "t_s = 0.5, t_a = 0.5" in note and "against **one-hot** (lossless)" in note
    assert f"**{gained:.3f}** tokens per pass instead of {kept:.3f}" in note
    assert f"**{gained - kept:+.3f}** per pass" in note
    assert f"**{sum(decided) / len(decided):.4f}** per token on average, **{max(decided):.4f}** at most" in note


def test_a_lossless_rule_shows_no_cost_and_the_thresholds_only_with_their_rule(loads):
    at = app()
    at.radio(key="decode_mode").set_value("lossless").run()
    assert not [n for n in at.number_input if n.key == "decode_threshold_acc"]
    at.selectbox(key="decode_rule").set_value("one-hot").run()
    at.button(key="decode_step").click().run()
    assert not at.exception and decoder(at).steps[0].cost is None
    assert not any("(lossy" in w.value for w in at.warning)
    at.selectbox(key="decode_rule").set_value("typical").run()
    assert {n.key for n in at.number_input} >= {"decode_posterior_threshold", "decode_posterior_alpha"}
    assert at.number_input(key="decode_posterior_threshold").value == pytest.approx(0.09)


def test_a_tree_under_sglangs_thresholds_is_labelled_lossy_and_says_where_its_cost_is_shown(loads):
    at = app()
    at.radio(key="decode_mode").set_value("lossless").run()
    at.selectbox(key="decode_rule").set_value("sglang").run()
    at.number_input(key="decode_threshold_acc").set_value(0.5)
    at.toggle(key="decode_tree").set_value(True)
    at.button(key="decode_step").click().run()
    assert not at.exception
    dec = decoder(at)
    assert dec.config.tree and dec.config.verification == "sglang" and dec.steps[0].cost is None
    assert any(w.value.startswith("**SGLang's accept thresholds (lossy)** walk this tree") for w in at.warning)
