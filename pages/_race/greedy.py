"""The Race's greedy check, like with like: the same text token for token, or where the two texts part and why (the
target's top two there in its one-token pass and in the verify pass, and its batch variance measured on the race's
own text: specviz.analysis.batchvar). Measured after the race, never inside its clocks."""

from __future__ import annotations

import streamlit as st

import specviz
from specviz.analysis.batchvar import BatchVariance, GreedyDifference, greedy_difference, race_variance
from specviz.analysis.race import Race, RaceResult
from specviz.viz.plain import plain

Greedy = tuple[BatchVariance | None, GreedyDifference | None]


def measure(race: Race, pair: specviz.ModelPair, same_text: bool) -> Greedy:
    """The target's batch variance on the race's text, and where and why the texts part (None where they do not);
    (None, None) where the measurement could not be made."""
    ids, alone, tau = race.spec.prompt_ids, race.alone.tokens, race.config.tau
    try:
        with st.spinner("Measuring the target's batch variance on this text (a verify pass against one-token passes)…"):
            variance = race_variance(pair, ids, alone, tau)
            why = None if same_text else greedy_difference(pair, ids, alone, race.spec.steps, tau, variance)
    except specviz.SpecvizError:
        return None, None
    return variance, why


def texts(result: RaceResult, greedy: Greedy | None) -> None:
    """Whether both wrote the same text; where not, where they part and why. Then the batch variance measured."""
    variance, why = greedy or (None, None)
    if result.same_text:
        st.markdown(
            "**The same text, token for token**: greedy speculative decoding emits the target's own greedy "
            "decoding, whatever the draft (docs/algorithm.md)."
        )
    elif why is not None and why.own_choices:
        st.warning(f"**Not the same text: batch variance.** {plain(why.words())}", icon=":material/difference:")
    elif why is not None:
        st.error(
            f"**The two texts differ, and not by batch variance.** {plain(why.words())}", icon=":material/bug_report:"
        )
    else:
        st.warning(
            "**The two texts differ.** Greedy speculation writes the target's greedy text where a pass over several "
            "tokens gives the same p as a one-token pass; on a quantized target they can differ by a little and a "
            "near tie reverse (batch variance). This race kept no measurement of it: run it again.",
            icon=":material/difference:",
        )
    if variance is not None:
        st.caption(
            f"The target's batch variance, measured on this race's text: {plain(variance.words())}. Greedy "
            "speculation writes the target's greedy text only where the two kinds of pass agree."
        )
