"""What the Decode page draws of the step shown: the step picked, its tree, q against p with every decision, the
target's next token, the top-10 of q and p and the step's numbers; the same step under each verification rule and as
a slide. Every chart built once per session for the same trace (`chart`). Widgets and calls; what to show and say is
decided in specviz.viz and specviz.analysis. How the run got its steps: pages/_decode/step.py; the run as a whole (its
running metrics and charts): pages/_decode/run_drawing.py."""

from __future__ import annotations

import streamlit as st

import specviz
from pages._common.widgets import lazy_expander
from specviz.viz import charts, slide, step_chart
from specviz.viz import view as view_of
from specviz.viz.memo import FigureMemo
from specviz.viz.plain import plain, plain_cells
from specviz.viz.render import next_token_source, rule_sentence, step_frame, token_label
from specviz.viz.tree_chart import tree_chart


def chart(build, *args, **kwargs):
    """`build(*args, **kwargs)`, built once per session for the same traces (specviz.viz.memo)."""
    return st.session_state.setdefault("specviz_figures", FigureMemo())(build, *args, **kwargs)


def step_picker(steps: tuple[specviz.StepTrace, ...], hidden: bool) -> specviz.StepTrace:
    """The step the page draws: by default specviz.viz.view.default_step; a slider picks any earlier
    step. Before a quiz's Reveal: the newest."""
    if hidden or len(steps) == 1:
        return steps[-1]
    pick = st.select_slider(
        "Step shown" if st.session_state.get("decode_present") else "Step shown (text, chart and metrics run up to it)",
        options=list(range(1, len(steps) + 1)),
        value=view_of.default_step(steps),
        key=f"decode_show_{len(steps)}",  # a new run's length: its default again
    )
    if note := view_of.default_step_note(steps, pick):
        st.caption(note)
    return steps[pick - 1]


def draw_step(
    view: specviz.StepTrace,
    greedy: bool,
    hidden: bool,
    draws: bool,
    marks: tuple,
    present: bool,
    beside: list | None,
    names: tuple[str, str] = ("", ""),
    typed: str | None = None,
) -> None:
    """The step shown: its tree (a tree step), q against p with every decision, the target's next token,
    the top-10 of q and p at a position, and the step's numbers. `beside`: a projector's two columns. `names`: the
    draft's and the target's (a GGUF file's quantization labels q and p). `typed` (a typed draft): what it was, said
    under the chart, whose ticks name the draft model's own first choice under each token that is not it."""
    size = {"height": 390, "font_size": 20} if present else {"height": 420}  # a projector: chart and next token
    if view.tree is not None and not hidden:  # the whole tree first; the chart below reads its main line
        tree_size = {"height": 560, "font_size": 18} if present else {"height": 520}
        st.plotly_chart(chart(tree_chart, view, **tree_size), key="decode_tree_chart")
        st.caption(
            "Below: the tree's main line, the accepted path, then the first child tried where the walk "
            "stopped and its first descendants (hover a node for q, p, r and the tops of q and p)."
        )
    with beside[0] if beside else st.container():
        st.plotly_chart(
            chart(step_chart.step_chart, view, hidden, draws, marks=marks, names=names, own=typed is not None, **size),
            key="decode_step_chart",
        )
        if typed and not (beside and not hidden):
            st.info(typed, icon=":material/keyboard:")
    if beside and not hidden:
        with beside[1]:  # a projector: a typed draft's note on screen, beside the chart (below it, under the fold)
            if typed:
                st.info(typed, icon=":material/keyboard:")
            next_token_panel(view, brief=True, height=330, font_size=18, rows=6)
    position = st.segmented_control(
        "Top-10 at draft position", list(range(1, view.tau + 1)), default=1, key="decode_position"
    )
    st.plotly_chart(chart(charts.top_chart, view, (position or 1) - 1, hidden, names=names), key="decode_top_chart")
    left, right = st.columns([2, 3]) if not hidden and not present else (None, st.container())
    if left:  # where the next token came from (docs/algorithm.md, step 5); it tells n
        with left:
            next_token_panel(view)
    with right:
        step_table(view, greedy, hidden, draws)


def next_token_panel(step: specviz.StepTrace, brief: bool = False, **size: int) -> None:
    """The target's token: its rule and probability in a sentence, the distribution it came from
    (`brief`, on a projector: only in the chart's title), and why, when it is the rejected draft token itself."""
    source, note = next_token_source(step)
    label = token_label(step.next_text)
    where = "" if brief else f" {source}."
    st.markdown(
        f"Next token **{plain(repr(label))}** by rule **{step.next_rule}**, probability {step.next_prob:.4f}.{where}"
    )
    st.plotly_chart(chart(charts.next_token_chart, step, **size), key="decode_next_chart")
    if note:  # below the chart: on a projector the chart stays on screen
        st.info(note, icon=":material/lightbulb:")


def step_table(view: specviz.StepTrace, greedy: bool, hidden: bool, draws: bool) -> None:
    """The step's numbers as a plain table: every column whole at 1280 px (a data grid cut `decision`
    to "deci")."""
    st.table(plain_cells(step_frame(view, greedy, hidden, draws)))  # st.table reads its cells as markdown


def rules_panel(view: specviz.StepTrace, outcomes, pair: specviz.ModelPair | None, mode: str) -> None:
    """The same step under each verification rule: the same draft and the same draws r, decided by token-wise,
    one-hot and block verification (docs/algorithm.md, "Verification as serving engines run it") and, in a lossy
    run, by its lossy rule ("Lossy rules")."""
    if view.tree is not None or view.tau == 0:
        return
    title = "The same step under each rule: token-wise, one-hot q (vLLM's default), block"
    title += f", and the run's lossy rule ({view.cost.rule})" if view.cost is not None else ""
    with lazy_expander(title, "decode_rules_open") as box:
        if not box.open:
            return
        if mode != "lossless":
            st.caption("The verification rules decide lossless steps: choose **lossless** mode to compare them.")
        elif outcomes is None:
            st.caption("A saved trace keeps the rule it ran, not the step's full distributions: step a live run.")
        else:
            st.plotly_chart(chart(charts.rules_chart, view, outcomes), key="decode_rules_chart")
            st.markdown("\n".join(f"- {rule_sentence(view, o, pair.codec.token_text)}" for o in outcomes))
            st.caption(
                "The same draft tokens and the same draws r for every rule. h is not the chance that a token "
                "is kept, and block's passes need not run in a row: it keeps everything up to its last pass."
            )


def slide_panel(run: specviz.RunTrace, view: specviz.StepTrace, names: tuple[str, str], own: bool = False) -> None:
    """The step shown as one 16:9 picture for a slide (specviz.viz.slide): the marked text above q against p and every
    decision, saved by the chart's own camera button at 1920×1080 (made in the browser: nothing runs here). `own`: a
    typed draft, whose draft model's own first choices are named."""
    with lazy_expander(
        "This step as a 16:9 picture for a slide", "decode_slide_open", icon=":material/slideshow:"
    ) as box:
        if not box.open:
            return
        before = "".join(slide.emitted_text(s) for s in run.steps[: view.index])
        context = (f"{run.prompt}\n" if run.chat else run.prompt_text) + before
        st.plotly_chart(
            chart(slide.slide_figure, context, view, names, own=own),
            key="decode_slide_chart",
            config=slide.slide_config(slide.slide_name(view)),
            width="content",
        )
        st.caption(
            "Hover the picture and press the camera at its top right: it saves a 1920×1080 PNG (16:9), drawn by your "
            "browser."
        )
