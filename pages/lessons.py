"""Lessons: a question, the class's prediction, a live run on the embedded pair, the answer with its evidence."""

import streamlit as st

import specviz
from pages import _shared as ui
from pages._present import COMPACT_CSS, presentation_toggle
from specviz.classroom.lessons import BY_KEY, LESSONS
from specviz.viz.plain import plain, plain_cells

ui.ensure_shell()
st.html(COMPACT_CSS)
top = st.columns([3, 1.4], vertical_alignment="bottom")
key = top[0].selectbox("Lesson", list(BY_KEY), key="lessons_lesson", format_func=lambda k: BY_KEY[k].title)
with top[1]:
    present = presentation_toggle("lessons_present")
lesson = BY_KEY[key]
number = [item.key for item in LESSONS].index(key) + 1
st.title(f"Lesson {number} of {len(LESSONS)}: {lesson.title}")
st.markdown(f"#### {lesson.question}")
guess = st.radio(
    "Your prediction",
    range(len(lesson.choices)),
    index=None,
    key=f"lessons_guess_{key}",
    format_func=lambda i: lesson.choices[i],
)
results = st.session_state.setdefault("lessons_results", {})
if st.button("Run it", type="primary", key="lessons_run", icon=":material/play_arrow:"):
    pair = ui.load_pair("embedded", "embedded")
    if pair is None:
        st.stop()
    try:
        with ui.heavy_job(), ui.heavy_turn(), st.spinner("Running it live…"):
            load = lambda target, draft, runtime=None: ui.cached_pair(target, draft, runtime or pair.runtime)  # noqa: E731
            results[key] = lesson.run(pair, load)
    except specviz.SpecvizError as exc:
        st.error(f"**This lesson could not run.** {plain(exc)}", icon=":material/error:")
        st.stop()
evidence = results.get(key)
if evidence is None:
    st.info("Predict, then press **Run it**: the app reproduces the situation live and shows the answer.")
    ui.share_link("lessons", show=not present)
    st.stop()
right = lesson.choices[lesson.right]
if evidence.held is False and evidence.gates:  # the run did not show what the question rests on: no Right / Not quite
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
for i, figure in enumerate(evidence.figures):
    st.plotly_chart(figure, key=f"lessons_figure_{i}")
if evidence.table is not None:
    st.table(plain_cells(evidence.table).style.hide(axis="index").format(precision=3))  # every column whole at 1280 px
st.markdown("**Takeaway.** " + "  \n".join(lesson.takeaway.splitlines()))
ui.share_link("lessons", show=not present)
