"""Race: the target alone against speculative decoding on the same prompt, tokens appearing as made."""

import streamlit as st

import specviz
from pages import _shared as ui
from pages import _snapshot as snapshots
from pages._present import COMPACT_CSS, presentation_toggle
from specviz.analysis.race import BY_LABEL, Race, RaceResult
from specviz.analysis.snapshot import freeze, runtime_of
from specviz.viz.plain import plain
from specviz.viz.render import RACE_STYLE, lane_html, lane_text, sentence

ui.ensure_shell()
present = bool(st.session_state.get("race_present"))
if not present:
    st.html(COMPACT_CSS)
    st.title("Race: the target alone against speculation")
cols = st.columns([3.2, 1, 1, 1.6], vertical_alignment="bottom")
label = cols[0].selectbox("Race", list(BY_LABEL), key="race_preset")
max_new = cols[1].number_input("Tokens", *ui.LIMITS["race_max_new"], key="race_max_new")
start = cols[2].button("Start", type="primary", key="race_start", icon=":material/flag:")
with cols[3]:
    presentation_toggle("race_present")
preset = BY_LABEL[label]
st.caption(
    f"{preset.note} Greedy decoding, so both sides must write the same text. Draft: `{preset.draft}`, "
    f"τ = {preset.tau}; each side's clock counts only its own work, as if on two machines."
)

lanes = st.columns(2)
with lanes[0]:
    st.markdown("#### Target alone")
    alone_box, alone_line = st.empty(), st.empty()
with lanes[1]:
    st.markdown(f"#### Speculative decoding (τ = {preset.tau})")
    spec_box, spec_line = st.empty(), st.empty()


def lane_words(lane) -> str:
    return (
        f"**{lane.seconds:.1f} s** · {len(lane.tokens)} tokens · **{lane.tokens_per_second:.1f} tokens/s** · "
        f"{lane.passes} target passes" + (" · done" if lane.done else "")
    )


def draw(pair: specviz.ModelPair, alone, spec) -> None:
    """Both lanes: their text so far, their clocks and speeds."""
    for lane, box, line in ((alone, alone_box, alone_line), (spec, spec_box, spec_line)):
        box.html(lane_html(lane_text(pair.codec, lane.tokens)))  # whitespace kept, scrolled to its newest line
        line.markdown(lane_words(lane))


def verdict(result: RaceResult) -> None:
    """The result in words, coloured by what its interval says; and whether both wrote the same text."""
    spread = result.speedup_spread()
    (st.success if spread.above(1.0) else st.warning if spread.below(1.0) else st.info)(
        result.summary(), icon=":material/sports_score:"
    )
    if result.same_text:
        st.markdown(
            "**The same text, token for token**: greedy speculative decoding emits the target's own greedy "
            "decoding, whatever the draft (docs/algorithm.md)."
        )
    else:  # never in greedy mode: a bug to report, not a result
        st.error("The two texts differ: greedy speculative decoding must equal the target's greedy decoding.")


st.html(RACE_STYLE)
results = st.session_state.setdefault("race_results", {})
key = (label, max_new)
if frozen := snapshots.opened("race"):  # a snapshot for slides: the race as it ran then
    result, texts = RaceResult.from_dict(frozen.data["result"]), frozen.data["texts"]
    for lane, box, line, text in zip(
        (result.alone, result.speculative), (alone_box, spec_box), (alone_line, spec_line), texts, strict=True
    ):
        box.html(lane_html(text))
        line.markdown(lane_words(lane))
    verdict(result)
    snapshots.panel("race", frozen)
    st.stop()
if start:
    pair = ui.load_pair("embedded", preset.draft)
    if pair is None:
        st.stop()
    config = specviz.SpecConfig(tau=preset.tau, mode="greedy", max_new_tokens=max_new)
    try:
        with ui.heavy_job(), ui.heavy_turn():  # one race at a time on the server: each side's clock is its own
            race = Race(pair, preset.prompt, config)
            for alone, spec in race.frames():
                draw(pair, alone, spec)
    except specviz.SpecvizError as exc:
        st.error(f"**The race could not run.** {plain(sentence(exc))}", icon=":material/error:")
        st.stop()
    results[key] = (race.result(), pair)
if key not in results:
    st.info("Press **Start**: both sides decode the prompt below live, each at its own measured speed.")
    with st.expander("The prompt"):
        st.code(preset.prompt, language=None, wrap_lines=True)
    ui.share_link("race", show=not present)
    st.stop()
result, pair = results[key]
draw(pair, result.alone, result.speculative)
verdict(result)
with st.expander("The prompt"):
    st.code(preset.prompt, language=None, wrap_lines=True)
texts = [lane_text(pair.codec, lane.tokens) for lane in (result.alone, result.speculative)]
snapshots.panel("race", freeze("race", runtime_of(pair), {"preset": label, "result": result.to_dict(), "texts": texts}))
ui.share_link("race", show=not present)
