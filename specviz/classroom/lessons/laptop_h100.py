"""Lesson: The same draft on a laptop, an H100 and this server (the cost model, and this machine measured)."""

from __future__ import annotations

import pandas as pd

from specviz.analysis import outlook as ol
from specviz.analysis.costmodel import HARDWARE, pass_time
from specviz.analysis.pairtimes import TEXT
from specviz.classroom.lessons.common import Evidence, Lesson, Load, Timings
from specviz.models.pair import ModelPair
from specviz.viz import charts

DEVICES = ("laptop CPU (Ryzen 7 7840U, fp32)", "NVIDIA H100 SXM")


def laptop_h100(pair: ModelPair, load: Load, timings: Timings) -> Evidence:
    target = ol.EMBEDDED_TARGET
    column = "v(5): a pass over 5 tokens in one-token passes"
    rows = [
        {
            "device": name,
            column: round(pass_time(target, HARDWARE[name], 5, 1, 64) / pass_time(target, HARDWARE[name], 1, 1, 64), 2),
            "what limits a pass over 5 tokens": ol.bound_by(target, HARDWARE[name], 5, 1, 64),
            "how": "modelled from the datasheet",
        }
        for name in DEVICES
    ]
    timed = timings(pair).passes_ms  # the pair's kept timings: the v(5) every page reads
    here = timed[5].value / timed[1].value
    rows.append(
        {
            "device": f"this server ({pair.runtime})",
            column: round(here, 2),
            "what limits a pass over 5 tokens": "the arithmetic (2 CPU cores)" if here > 1.3 else "reading the weights",
            "how": f"measured: {timed[5].text(1, ' ms')} against {timed[1].text(1, ' ms')}",
        }
    )
    table = pd.DataFrame(rows)
    bar = {"type": "bar", "x": list(table["device"]), "y": list(table[column]), "marker": {"color": charts.P_COLOR}}
    layout = {"yaxis": {"title": "v(5)", "rangemode": "tozero"}, "height": 360}
    figure = charts.built([bar], layout, charts.FONT["size"])
    return Evidence(
        f"v(5) is {rows[0][column]:.2f} on the laptop and {rows[1][column]:.2f} on the H100 (modelled), {here:.2f} "
        f"on this server ({pair.runtime}, measured): where a pass is bound by reading the weights or by a fixed "
        "cost, four more tokens ride along nearly free; where the arithmetic is the limit, they do not.",
        (figure,),
        table,
        premise="a pass over 5 tokens costs this server more than one over a single token",
        held=here > 1.1,
        why_not=f"on {pair.runtime} a pass over 5 tokens cost {here:.2f} one-token passes here: this runtime keeps "
        "several rows as cheap as one, as a GPU does",
        gates=False,
        prompt=TEXT,  # what the pair's timings ran on
        calibration=timings(pair).label(),
    )


LESSON = Lesson(
    key="laptop-h100",
    title="The same draft on a laptop and on an H100",
    question="The embedded target scores 5 tokens in one pass. On an H100, how many one-token passes does that cost?",
    choices=(
        "About 1: reading the weights (or the fixed cost of launching) dominates, and 5 tokens read them once",
        "About 5: five tokens, five times the work",
        "Between 2 and 3",
    ),
    right=0,
    takeaway="A pass costs what its bottleneck costs: bytes read, arithmetic, or a fixed cost per pass.\n"
    "Where it is not arithmetic (a GPU at batch 1, a laptop's memory), drafted tokens ride along nearly free.",
    run=laptop_h100,
    timed=True,
)
