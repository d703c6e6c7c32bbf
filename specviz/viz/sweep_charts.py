"""The τ sweep's charts: speedup with its intervals beside S(τ) and S_v(τ), the acceptance length against
the theory, accepted lengths per step and per-position rates, each a pure function of a SweepSummary."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from specviz.analysis.draft_sweep import DraftSweep
from specviz.analysis.rules_compare import RULE_WORDS, RuleComparison
from specviz.analysis.sweep_summary import SweepSummary
from specviz.core.config import VERIFICATIONS
from specviz.viz.charts import (
    DECISION_COLORS,
    FONT,
    P_COLOR,
    Q_COLOR,
    RESIDUAL_COLOR,
    RULE_COLORS,
    built,
    legend_below,
    legend_rows,
)


def _bars(spreads: Sequence) -> dict:
    """Error bars from each Spread's interval (asymmetric)."""
    return {
        "type": "data",
        "symmetric": False,
        "array": [s.high - s.value for s in spreads],
        "arrayminus": [s.value - s.low for s in spreads],
        "thickness": 2,
        "width": 8,
    }


def sweep_length_chart(summary: SweepSummary, font_size: int = FONT["size"], height: int = 380) -> go.Figure:
    """The distribution of accepted length n per step, one box per τ (from each τ's histogram of n)."""
    data = []
    for row in summary.rows:
        lengths = [n for n, count in enumerate(row.lengths) for _ in range(count)]
        data.append(
            {
                "type": "box",
                "y": lengths,
                "name": f"τ = {row.tau}",
                "boxmean": True,
                "marker": {"color": P_COLOR},
                "showlegend": False,
            }
        )
    layout = {
        "height": height,
        "yaxis": {"title": "accepted draft tokens per step", "rangemode": "tozero"},
        "margin": {"t": 30},
    }
    return built(data, layout, font_size)


THEORY_NOTE = (
    "Theory curves (Leviathan et al.): dashed, from α = mean Σ min(p, q) of the same runs, which is the "
    "acceptance probability of lossless sampling; dotted, from the acceptance probability these runs actually "
    "had in their own mode (accepted / decided draft tokens). In greedy and textbook modes the two differ. Both "
    "assume a target pass over τ + 1 tokens costs one over a single token (v = 1); the purple line S_v uses the "
    "cost v(τ + 1) measured in these runs, its band the range of v. Measured speedups: each step of each run timed "
    "beside the target alone decoding the same tokens at the same context lengths, the two alternating; the bars "
    "are 95% bootstrap intervals over the steps."
)


def _theory_lines(
    data: list, taus: list[int], alpha_y: list, measured_y: list, summary: SweepSummary, suffix: str = ""
) -> None:
    if summary.alpha is not None:
        data.append(
            {
                "type": "scatter",
                "x": taus,
                "y": alpha_y,
                "mode": "lines",
                "line": {"color": "black", "dash": "dash"},
                "name": f"theory, α = {summary.alpha:.2f}{suffix}",
            }
        )
    a = summary.acceptance_probability
    if a is not None:
        data.append(
            {
                "type": "scatter",
                "x": taus,
                "y": measured_y,
                "mode": "lines",
                "name": f"theory, a = {a:.2f} (this mode){suffix}",
                "line": {"color": "#6c757d", "dash": "dot", "width": 3},
            }
        )


def sweep_acceptance_chart(summary: SweepSummary, font_size: int = FONT["size"], height: int = 420) -> go.Figure:
    """Mean acceptance length against τ, measured (with the band across seeds) and predicted by
    (1 − a^{τ+1}) / (1 − a), from α and from the acceptance probability of the runs' mode."""
    rows = summary.rows
    taus = [s.tau for s in rows]
    high, low = [s.mean_acceptance_length_high for s in rows], [s.mean_acceptance_length_low for s in rows]
    data = [
        {
            "type": "scatter",
            "x": taus + taus[::-1],
            "y": high + low[::-1],
            "fill": "toself",
            "hoverinfo": "skip",
            "fillcolor": "rgba(69,123,157,0.2)",
            "line": {"width": 0},
            "name": "range across seeds",
        },
        {
            "type": "scatter",
            "x": taus,
            "y": [s.mean_acceptance_length for s in rows],
            "mode": "lines+markers",
            "name": "measured",
            "line": {"color": P_COLOR, "width": 3},
        },
    ]
    alpha_y = [s.expected_tokens_per_step for s in rows]
    _theory_lines(data, taus, alpha_y, [s.expected_tokens_per_step_measured for s in rows], summary)
    layout = {
        "height": height,
        "xaxis": {"title": "τ", "dtick": 1},
        "yaxis": {"title": "mean acceptance length"},
        **legend_below(height, font_size, top=30),
    }
    return built(data, layout, font_size)


def sweep_position_chart(summary: SweepSummary, font_size: int = FONT["size"], height: int = 380) -> go.Figure:
    """Per-position acceptance rate (unconditional), one line per τ, against a^i: what the i.i.d.
    model predicts from the acceptance probability these runs had (docs/algorithm.md)."""
    rows = summary.rows
    data = [
        {
            "type": "scatter",
            "x": list(range(1, s.tau + 1)),
            "y": list(s.per_position_acceptance_rate),
            "mode": "lines+markers",
            "name": f"τ = {s.tau}",
        }
        for s in rows
    ]
    a, longest = summary.acceptance_probability, max((s.tau for s in rows), default=0)
    if a is not None and longest:
        data.append(
            {
                "type": "scatter",
                "x": list(range(1, longest + 1)),
                "y": [a**i for i in range(1, longest + 1)],
                "mode": "lines",
                "name": f"a^i, a = {a:.2f} (i.i.d. model)",
                "line": {"color": "black", "dash": "dash"},
            }
        )
    layout = {
        "height": height,
        "xaxis": {"title": "draft position i", "dtick": 1},
        "yaxis": {"title": "acceptance rate", "range": [0, 1.05]},
        "margin": {"t": 30},
    }
    return built(data, layout, font_size)


def sweep_speedup_chart(
    summary: SweepSummary, font_size: int = FONT["size"], height: int = 420, width: int = 620
) -> go.Figure:
    """Measured speedup over the target alone against τ, each with its 95% interval, beside S(τ) (v = 1)
    and S_v(τ) with the verify cost measured (its band: the range of v); the best τ marked, or the τ
    within noise of it named. The legend goes below the τ axis, as many rows as it needs at `width` px;
    the chart grows by those rows, so the plot keeps its height."""
    rows = [s for s in summary.rows if s.speedup is not None]
    taus = [s.tau for s in rows]
    data: list[dict] = [
        {
            "type": "scatter",
            "x": taus,
            "y": [s.speedup.value for s in rows],
            "mode": "lines+markers",
            "name": "measured (95% interval)",
            "line": {"width": 3},
            "error_y": _bars([s.speedup for s in rows]),
        }
    ]
    if summary.c is not None:
        predicted = [s.predicted_speedup for s in rows], [s.predicted_speedup_measured for s in rows]
        _theory_lines(data, taus, *predicted, summary, suffix=f", c = {summary.c.value:.2f}, v = 1")
    with_v = [s for s in rows if s.predicted_speedup_v is not None]
    if with_v:  # docs/algorithm.md "Verify cost": the same theory with v(τ + 1) measured in these runs
        x = [s.tau for s in with_v]
        band_high, band_low = [s.predicted_speedup_v.high for s in with_v], [s.predicted_speedup_v.low for s in with_v]
        data.append(
            {
                "type": "scatter",
                "x": x + x[::-1],
                "y": band_high + band_low[::-1],
                "fill": "toself",
                "fillcolor": "rgba(142,68,173,0.18)",
                "line": {"width": 0},
                "hoverinfo": "skip",
                "name": "S_v: range of the measured v",
            }
        )
        data.append(
            {
                "type": "scatter",
                "x": x,
                "y": [s.predicted_speedup_v.value for s in with_v],
                "mode": "lines+markers",
                "name": "S_v: theory with v(τ+1) measured",
                "line": {"color": RESIDUAL_COLOR, "width": 3},
                "marker": {"symbol": "square"},
                "customdata": [s.verify_cost.value for s in with_v],
                "hovertemplate": "τ = %{x}: S_v = %{y:.2f}× (v = %{customdata:.2f})<extra></extra>",
            }
        )
    best, ties = summary.best_tau_measured(), summary.within_noise_of_best()
    if best is not None:
        top = summary.row(best).speedup
        name = (
            f"best τ = {best} (measured, {top.text()})"
            if len(ties) == 1
            else f"τ = {', '.join(map(str, ties))}: within noise of each other"
        )
        data.append(
            {
                "type": "scatter",
                "x": ties,
                "y": [summary.row(t).speedup.value for t in ties],
                "mode": "markers",
                "name": name,
                "cliponaxis": False,
                "marker": {"symbol": "star", "size": 20, "color": DECISION_COLORS["accepted"]},
            }
        )
    _counted_lines(data, summary)
    for policy in summary.policies:  # τ policies beside fixed τ, at the mean τ they chose
        if policy.speedup is not None:
            data.append(
                {
                    "type": "scatter",
                    "x": [policy.mean_tau],
                    "y": [policy.speedup.value],
                    "mode": "markers",
                    "name": f"{policy.policy} policy",
                    "error_y": _bars([policy.speedup]),
                    "cliponaxis": False,
                    "marker": {"symbol": "diamond", "size": 16},
                }
            )
    return _speedup_figure(data, sorted({*taus, *(s.tau for s in summary.rows)}), font_size, height, width)


def _counted_lines(data: list[dict], summary: SweepSummary) -> None:
    """Beside the clocked lines, whatever the load: each τ's counted work at the pair's kept costs, and the ceiling
    (τ + 1)/v(τ + 1) a perfect free draft would give (docs/algorithm.md, "Count, then cost")."""
    costed = [s for s in summary.rows if s.costed_speedup is not None]
    if costed:
        data.append(
            {
                "type": "scatter",
                "x": [s.tau for s in costed],
                "y": [s.costed_speedup for s in costed],
                "mode": "lines+markers",
                "name": "counted work × the kept costs",
                "line": {"color": Q_COLOR, "width": 3, "dash": "dot"},
                "marker": {"symbol": "circle-open", "size": 10},
            }
        )
    capped = [s for s in summary.rows if s.ceiling is not None]
    if capped:
        data.append(
            {
                "type": "scatter",
                "x": [s.tau for s in capped],
                "y": [s.ceiling for s in capped],
                "mode": "lines",
                "name": "ceiling: a perfect free draft, (τ+1)/v(τ+1)",
                "line": {"color": "#7f7f7f", "width": 2, "dash": "dash"},
                "customdata": [[s.ceiling_alpha, s.ceiling_c] for s in capped],
                "hovertemplate": "τ = %{x}: ceiling %{y:.2f}×; with α %{customdata[0]:.2f}×, with c too "
                "%{customdata[1]:.2f}×<extra></extra>",
            }
        )


def _speedup_figure(data: list[dict], taus: list[int], font_size: int, height: int, width: int) -> go.Figure:
    """Speedup against τ: the traces given, the target alone's 1× across them, the legend below the τ axis in as
    many rows as it needs at `width` px (the chart grows by those rows, so the plot keeps its height)."""
    if taus:
        data.append(
            {
                "type": "scatter",
                "x": [min(taus) - 0.3, max(taus) + 0.3],
                "y": [1.0, 1.0],
                "mode": "lines",
                "name": "target alone (1×)",
                "line": {"color": "grey", "dash": "dot"},
                "hoverinfo": "skip",
            }
        )
    rows = legend_rows(data, font_size, width)
    height += max(rows - 2, 0) * (font_size + 10)
    layout = {
        "height": height,
        "xaxis": {"title": "τ", "dtick": 1},
        "yaxis": {"title": "speedup ×", "rangemode": "tozero"},
        **legend_below(height, font_size, top=50, rows=rows),
    }
    return built(data, layout, font_size)


def rules_acceptance_chart(
    comparison: RuleComparison, metric: str = "mean acceptance length", font_size: int = FONT["size"], height: int = 380
) -> go.Figure:
    """Each verification rule's mean acceptance length (or draft acceptance rate) against τ, one line per rule,
    with its 95% interval (specviz.analysis.rules_compare)."""
    length = metric == "mean acceptance length"
    data = []
    for shift, rule in zip((-0.08, 0.0, 0.08), VERIFICATIONS, strict=True):  # side by side: equal rules both seen
        rows = [comparison.row(tau, rule) for tau in comparison.taus]
        spreads = [r.mean_acceptance_length if length else r.draft_acceptance_rate for r in rows]
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": RULE_WORDS[rule],
                "x": [tau + shift for tau in comparison.taus],
                "customdata": comparison.taus,
                "hovertemplate": f"{RULE_WORDS[rule]}, τ = %{{customdata}}: %{{y:.3f}}<extra></extra>",
                "y": [s.value for s in spreads],
                "error_y": _bars(spreads),
                "line": {"color": RULE_COLORS[rule]},
            }
        )
    layout = {
        "height": height,
        "xaxis": {"title": "τ", "tickvals": comparison.taus},
        "yaxis": {"title": metric, "rangemode": "tozero", **({} if length else {"range": [0, 1.05]})},
        **legend_below(height, font_size, top=30, rows=1),
    }
    return built(data, layout, font_size)


def draft_sweep_chart(result: DraftSweep, font_size: int = FONT["size"], height: int = 420) -> go.Figure:
    """Measured speedup against τ, one line per draft (each with its 95% interval), the target alone at 1×."""
    data: list[dict] = []
    taus: list[int] = []
    for draft, summary in result.summaries.items():
        rows = [s for s in summary.rows if s.speedup is not None]
        taus += [s.tau for s in rows]
        data.append(
            {
                "type": "scatter",
                "x": [s.tau for s in rows],
                "y": [s.speedup.value for s in rows],
                "mode": "lines+markers",
                "name": draft,
                "line": {"width": 3},
                "error_y": _bars([s.speedup for s in rows]),
            }
        )
    return _speedup_figure(data, taus, font_size, height, 620)


def tradeoff_chart(
    rows: Sequence[tuple[str, float, float]], font_size: int = FONT["size"], height: int = 380
) -> go.Figure:
    """A lossy knob swept (docs/algorithm.md, "Lossy rules"): one point per setting, its expected tokens per pass
    (x) against how far the output moved from the target, TV(o, p) (y), each labelled with its setting. rows:
    (label, tokens per pass, TV)."""
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers+text",
            "x": [x for _, x, _ in rows],
            "y": [y for _, _, y in rows],
            "text": [label for label, _, _ in rows],
            "textposition": "top center",
            "marker": {"size": font_size * 0.7},
            "name": "the thresholds swept",
            "hovertemplate": "%{text}<br>%{x:.3f} tokens per pass<br>TV from the target %{y:.4f}<extra></extra>",
        }
    ]
    layout = {
        "height": height,
        "xaxis": {"title": "expected tokens per pass (exact)"},
        "yaxis": {"title": "TV(o, p): distance from the target", "rangemode": "tozero"},
        "showlegend": False,
    }
    return built(data, layout, font_size)
