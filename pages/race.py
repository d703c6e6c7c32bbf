"""Race: the target alone against speculative decoding on the same prompt, tokens appearing as made."""

import time

import streamlit as st

import specviz
from pages._common import own_settings
from pages._common import snapshot as snapshots
from pages._common.picker import decode_race, new_decode_pair
from pages._common.present import COMPACT_CSS, presentation_toggle
from pages._common.shell import ensure_shell
from pages._common.widgets import limits, share_link
from pages._race import greedy as greedy_ui
from pages._race.verdict import verdict
from pages._serving import history as history_ui
from pages._serving import timings as timings_ui
from pages._serving.busy import busy_notice
from pages._serving.compute import compute_turn, heavy_job
from pages._serving.pairs import load_pair
from specviz.analysis.busy import where_measured
from specviz.analysis.race import BY_LABEL, YOURS, Race, RaceResult, ask_before, at_race_time, finish, stop_reason
from specviz.analysis.snapshot import freeze, runtime_of
from specviz.viz.plain import plain
from specviz.viz.render import RACE_STYLE, lane_html, lane_text, sentence

ensure_shell()
present = bool(st.session_state.get("race_present"))
if not present:
    st.html(COMPACT_CSS)
    st.title("Race: the target alone against speculation")
cols = st.columns([3.2, 1, 1, 1.6], vertical_alignment="bottom")
if new_decode_pair("race") is not None:  # a pair of the user's own stepped on Decode: raced here, once chosen
    st.session_state["race_preset"] = YOURS
label = cols[0].selectbox("Race", [*BY_LABEL, YOURS], key="race_preset")
max_new = cols[1].number_input("Tokens", *limits()["race_max_new"], key="race_max_new")
start = cols[2].button("Start", type="primary", key="race_start", icon=":material/flag:")
with cols[3]:
    presentation_toggle("race_present")
preset = BY_LABEL.get(label) or decode_race()
drafted_by, target_name = plain(preset.draft_name or preset.draft), plain(preset.target_name or preset.target)
st.caption(
    f"{preset.note} Greedy decoding, so both sides must write the same text. Target: {target_name}. "
    f"Draft: {drafted_by}, τ = {preset.tau}. The two sides take turns (a step of speculation, then the target "
    "alone's same tokens), so a busy moment slows both; each side's clock counts only its own work, as if on two "
    "machines."
)
notice = st.empty()  # the busy server's notice: timings taken under load are not reliable

lanes = st.columns(2)
with lanes[0]:
    st.markdown("#### Target alone")
    alone_box, alone_line = st.empty(), st.empty()
with lanes[1]:
    st.markdown(f"#### Speculative decoding (τ = {preset.tau})")
    spec_box, spec_line = st.empty(), st.empty()
stopped = st.empty()  # why both lanes stopped where they did


def lane_words(lane, void: bool = False) -> str:
    """A lane's clock, tokens, speed and passes; `void`: its times withheld (the race could not measure a speed)."""
    done = " · done" if lane.done else ""
    if void:
        return f"{len(lane.tokens)} tokens · {lane.passes} target passes{done} · times withheld (see below)"
    return (
        f"**{lane.seconds:.1f} s** · {len(lane.tokens)} tokens · **{lane.tokens_per_second:.1f} tokens/s** · "
        f"{lane.passes} target passes{done}"
    )


def draw(pair: specviz.ModelPair, alone, spec, void: bool = False) -> None:
    """Both lanes: their text so far, their clocks and speeds (none where `void`)."""
    for lane, box, line in ((alone, alone_box, alone_line), (spec, spec_box, spec_line)):
        box.html(lane_html(lane_text(pair.codec, lane.tokens)))  # whitespace kept, scrolled to its newest line
        line.markdown(lane_words(lane, void))


st.html(RACE_STYLE)
results = st.session_state.setdefault("race_results", {})
greedy = st.session_state.setdefault("race_greedy", {})  # per race: its batch variance, where and why texts part
key = (label, max_new, preset.target, preset.draft, preset.prompt, preset.tau)
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
    pair = load_pair(preset.target, preset.draft)
    if pair is None:
        st.stop()
    pair = history_ui.remembered(pair)  # a suffix draft matches this session's earlier answers
    config = specviz.SpecConfig(tau=preset.tau, mode="greedy", max_new_tokens=max_new)
    busy_notice(box=notice)  # before it starts: the load now
    try:
        with heavy_job():  # one race at a time on the server; each piece of work a heavy turn of its own (each side's
            race = Race(pair, preset.prompt, config, preset.chat)  # clock counts only its own pieces): the class's
            shown = 0.0  # Steps go between, and a closed tab stops it
            ask_before(pair, preset, config)  # "the same question again": the question asked once first, untimed
            for alone, spec in race.frames():  # both lanes as they stood at the same moment of their clocks
                shown, alone, spec = at_race_time(alone, spec)
                draw(pair, alone, spec)
            timings_ui.measured(pair, in_job=True, say=False)  # the pair's costs, where no page measured them
    except specviz.SpecvizError as exc:
        st.error(f"**The race could not run.** {plain(sentence(exc))}", icon=":material/error:")
        st.stop()
    result = race.result()
    for moment, alone, spec in finish(result.alone, result.speculative, shown):  # the slower lane, at its pace
        time.sleep(min(moment - shown, 1.0))
        shown = moment
        draw(pair, alone, spec)
    load = busy_notice(box=notice)  # the load of the minute it ran
    results[key] = (result, pair, load)
    with compute_turn():  # after the clocks stopped
        greedy[key] = greedy_ui.measure(race, pair, result.same_text)
if key not in results:
    st.info("Press **Start**: both sides decode the prompt below live, each at its own measured speed.")
    with st.expander("The prompt"):
        st.code(preset.prompt, language=None, wrap_lines=True)
    share_link("race", show=not present)
    st.stop()
result, pair, load = results[key]
both = (result.alone, result.speculative)
busy_notice(load, box=notice)
draw(pair, result.alone, result.speculative, bool(result.void()))
alone_why, spec_why = (stop_reason(lane, pair.codec.eos_token_id, max_new) for lane in both)
stopped.caption(f"Both {alone_why}." if alone_why == spec_why else f"Target alone {alone_why}; speculation {spec_why}.")
where, busy = where_measured(runtime_of(pair), load), load is not None and load.busy
verdict(result, where, busy, greedy.get(key), timings_ui.book().get(pair))
timings_ui.costs(pair, preset.tau, "race_measure_again", measure=False)
if label == YOURS:  # your own GGUF files: llama-server's and LM Studio's lines at this race's τ
    own_settings.panel(preset.tau, "this race's")
with st.expander("The prompt"):
    st.code(preset.prompt, language=None, wrap_lines=True)
texts = [lane_text(pair.codec, lane.tokens) for lane in both]
snapshots.panel("race", freeze("race", runtime_of(pair), {"preset": label, "result": result.to_dict(), "texts": texts}))
share_link("race", show=not present)
