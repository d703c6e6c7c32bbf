"""Lessons: a question, the class's prediction, a live run on the embedded pair, the answer with its evidence."""

import streamlit as st

import specviz
from pages._common.present import COMPACT_CSS, presentation_toggle
from pages._common.shell import ensure_shell
from pages._common.widgets import share_link
from pages._serving import timings as _timings
from pages._serving.busy import busy_notice
from pages._serving.compute import heavy_job
from pages._serving.pairs import cached_pair, load_pair
from specviz.analysis import busy
from specviz.analysis.counted import QUIET_MINUTE
from specviz.analysis.measure import MeasurementError
from specviz.classroom.lessons import BY_KEY, LESSONS
from specviz.pieces import piece
from specviz.viz import charts
from specviz.viz.plain import plain, plain_cells
from specviz.viz.render import refusal

QUIETER = "Run it again when the server is quieter."


def loaded(target: str, draft: str, runtime: str) -> specviz.ModelPair:
    with piece():  # loading is model work: a piece of its own
        return cached_pair(target, draft, runtime)


ensure_shell()
st.html(COMPACT_CSS)
top = st.columns([3, 1.4], vertical_alignment="bottom")
key = top[0].selectbox("Lesson", list(BY_KEY), key="lessons_lesson", format_func=lambda k: BY_KEY[k].title)
with top[1]:
    present = presentation_toggle("lessons_present")
lesson = BY_KEY[key]
number = [item.key for item in LESSONS].index(key) + 1
st.title(f"Lesson {number} of {len(LESSONS)}: {lesson.title}")
# on a projector the run's chart beside the question and the answer, on screen at 1280×720 (below them it
# started under the fold); elsewhere under them
body, beside = st.columns([1, 1.25]) if present else (st.container(), st.container())
with body:
    st.markdown(f"#### {lesson.question}")
    guess = st.radio(
        "Your prediction",
        range(len(lesson.choices)),
        index=None,
        key=f"lessons_guess_{key}",
        format_func=lambda i: lesson.choices[i],
    )
    results = st.session_state.setdefault("lessons_results", {})

    timed = st.session_state.setdefault("lessons_timed", {})
    if st.button("Run it", type="primary", key="lessons_run", icon=":material/play_arrow:"):
        pair = load_pair("embedded", "embedded")
        if pair is None:
            st.stop()
        try:
            # each piece of the run (a step, a round of timed passes, a load) in a heavy turn of its own: the class's
            # Steps go between them, and a closed tab's run stops at its next piece (specviz.pieces)
            with heavy_job(), st.spinner("Running it live…"):
                load = lambda target, draft, runtime=None: loaded(target, draft, runtime or pair.runtime)  # noqa: E731
                kept = _timings.kept if lesson.timed else None  # the pair's timings, as every page reads them
                results[key] = lesson.run(pair, load, kept) if kept else lesson.run(pair, load)
            timed[key] = (busy.current_load(), pair.runtime)  # the load of the minute it ran, and where
        except MeasurementError as exc:  # timings no runtime could give (a busy server): said, with the answer
            st.warning(
                f"**This run could not be clocked.** {plain(refusal(exc, QUIETER))} Where no calibration of the pair "
                f"is kept yet, {QUIET_MINUTE}. The answer, in general: {lesson.choices[lesson.right]}",
                icon=":material/timer_off:",
            )
            st.stop()
        except specviz.SpecvizError as exc:
            st.error(f"**This lesson could not run.** {plain(exc)}", icon=":material/error:")
            st.stop()
    evidence = results.get(key)
    if evidence is None:
        st.info("Predict, then press **Run it**: the app reproduces the situation live and shows the answer.")
        share_link("lessons", show=not present)
        st.stop()
    if evidence.timed and key in timed:  # its times are this server's, just now: said, with the load then
        when, runtime = timed[key]
        busy_notice(when)
        prompt = " ".join(evidence.prompt.split())  # one line, cut after 90 characters
        prompt = prompt if len(prompt) <= 90 else prompt[:88].rsplit(" ", 1)[0] + " …"  # at a word's end
        how = (  # counted work at kept costs (its clocks waited, or the lesson reads the calibration), else clocked
            f"Costs from {plain(evidence.calibration)}"
            if evidence.calibration
            else f"Measured: {busy.where_measured(runtime, when)}"
        )
        st.caption(
            f"{how}, on the prompt “{plain(prompt)}” with this lesson's settings; the README's numbers and the τ "
            "sweep's come from other prompts, settings, machines or loads."
        )
    right = lesson.choices[lesson.right]
    if (
        evidence.held is False and evidence.gates
    ):  # the run did not show what the question rests on: no Right / Not quite
        st.warning(
            f"**This run did not show the premise** — {evidence.premise}: {evidence.why_not} The answer, in "
            f"general: {right}",
            icon=":material/help:",
        )
    elif guess is None:
        st.info(f"**Answer:** {right}", icon=":material/lightbulb:")
    elif guess == lesson.right:
        st.success(f"**Right:** {right}", icon=":material/check_circle:")
    else:
        st.error(f"**Not quite.** The answer: {right}", icon=":material/cancel:")
    if evidence.held is False and not evidence.gates:  # the answer is exact; the takeaway's measured claim did not show
        st.info(f"**This run did not show** that {evidence.premise}: {evidence.why_not}", icon=":material/help:")
    if evidence.held:
        st.caption(f"The premise, checked on this run: {evidence.premise}. It held.")
    st.markdown(f"**What the run showed.** {evidence.finding}")
    if evidence.ceiling:  # beside its speedup: the ceiling at its τ, and what α and c cost of it
        st.caption(f"**The ceiling.** {plain(evidence.ceiling)}")
with beside:
    for i, figure in enumerate(evidence.figures):  # on a projector every label at 18 px (docs/app.md)
        st.plotly_chart(charts.sized(figure, 18) if present else figure, key=f"lessons_figure_{i}")
if evidence.table is not None:
    st.table(plain_cells(evidence.table).style.hide(axis="index").format(precision=3))  # every column whole at 1280 px
st.markdown("**Takeaway.** " + "  \n".join(lesson.takeaway.splitlines()))
share_link("lessons", show=not present)
