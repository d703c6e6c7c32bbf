"""What "Would it pay there?" reads from the rest of the app (pages/_pay/parts.py draws it): the acceptance it carries
over (the Decode run, the τ sweep, or α by hand), the pair this machine is timed on, and the Decode page's GGUF pair as
the cost model sees it from the headers alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specviz import specs
from specviz.analysis import outlook
from specviz.analysis.costmodel import Model
from specviz.core.trace import RunTrace
from specviz.errors import SpecvizError
from specviz.loading import Spec, gguf_path, is_gguf
from specviz.models.gguf import Place, read_info
from specviz.models.hub import EMBEDDED
from specviz.viz.plain import plain
from specviz.viz.render import sentence

EMBEDDED_WORDS = "the embedded pair (SmolLM2-135M + its draft)"


def timed_specs(chosen: tuple[Spec, Spec] | None) -> tuple[Spec, Spec, Spec | None]:
    """(target, draft) this machine is timed on for the Decode page's `chosen` specs (None: no run yet; texts or
    parsed specs, given back as they came): those where the target's sizes are known (the embedded target or a GGUF
    file), else the embedded pair; and the Decode page's target when it was passed over."""
    if chosen is None:
        return EMBEDDED, EMBEDDED, None
    target, draft = chosen
    parsed = specs.parse(target)
    if isinstance(parsed, specs.Embedded) or parsed.is_gguf:
        return target, draft, None
    return EMBEDDED, EMBEDDED, target


def header_models(
    target: Spec, draft: Spec, names: tuple[str, str], places: Sequence[Place] | None = None
) -> tuple[Model, Model] | None:
    """A GGUF target's pair as the cost model sees it from the headers of the files its run already opened (nothing
    loads, nothing downloads; found in `places`, a server's); None for another target, or where a header cannot be
    read. A found file's spec (specviz.specs.found) gives its own path, looked for nowhere."""
    if not is_gguf(target):
        return None
    try:
        found_in = None if places is None else list(places)
        files = (
            read_info(gguf_path(target, places=found_in)),
            (read_info(gguf_path(draft, places=found_in)) if is_gguf(draft) else None),
        )
        return outlook.header_pair(*files, names, lookup=isinstance(specs.parse(draft), specs.PromptLookup))
    except (SpecvizError, OSError):
        return None


def tree_tokens(trees: Any) -> dict[int, float] | None:
    """Tokens per step of the trees of 4, 8 and 16 nodes, from the τ sweep page's chain-against-tree result (None
    where it has not run)."""
    return {r.budget: r.tokens_per_step for r in trees.rows if r.shape == "tree"} if trees else None


def from_run(run: RunTrace, trees: Mapping[int, float] | None = None) -> outlook.Acceptance:
    """The Decode run's measured per-position rates, said with its steps, mode and draft (escaped)."""
    count = f"{len(run.steps)} step{'s' if len(run.steps) != 1 else ''}"
    words = f"the Decode run ({count}, {run.config.mode}, {plain(run.draft_name)})"
    return outlook.Acceptance.from_rates(run.metrics.per_position_acceptance_rate, words).with_trees(trees)


FEW_STEPS = 20  # fewer Decode steps than this: each per-position rate is ±0.5 / √steps at worst, said beside it


def few_steps(accept: outlook.Acceptance, run: RunTrace | None) -> str | None:
    """A warning where the acceptance carried over comes from fewer than FEW_STEPS steps of the Decode run (one step:
    every rate 0.00 or 1.00); None otherwise."""
    if run is None or not accept.source.startswith("the Decode run") or len(run.steps) >= FEW_STEPS:
        return None
    n = len(run.steps)
    return (
        f"**This acceptance comes from {n} Decode step{'s' if n != 1 else ''}.** Each per-position rate is one of "
        f"{n + 1} values ({', '.join(f'{k / n:.2f}' for k in range(n + 1)) if n <= 4 else 'k / ' + str(n)}), "
        f"within about ±{0.5 / n**0.5:.2f} of the pair's own at worst: press Step on the Decode page to "
        f"{FEW_STEPS} steps or more, or run the τ sweep, before reading a speedup from it."
    )


def from_sweep(sweep: Mapping[str, Any], trees: Mapping[int, float] | None = None) -> outlook.Acceptance:
    """The τ sweep's per-position rates at its largest τ (the most positions), said with its steps and draft."""
    row = sweep["summary"].rows[-1]
    words = f"the τ sweep at τ = {row.tau} ({row.steps} steps, {plain(sweep['draft'])})"
    return outlook.Acceptance.from_rates(row.per_position_acceptance_rate, words).with_trees(trees)


def acceptance(
    source: str,
    alpha: float,
    run: RunTrace | None,
    sweep: Mapping[str, Any] | None,
    trees: Mapping[int, float] | None = None,
) -> tuple[outlook.Acceptance, str | None]:
    """The acceptance to carry over from `source` (one of outlook.SOURCES), and a note when that source has nothing
    yet: then the other measured source where there is one (the Decode `run` with steps, the τ `sweep`), else α by
    hand; a source that cannot be read (no step drafted a token) gives α by hand and why."""
    if source == "α by hand":
        return outlook.Acceptance("α by hand", alpha=alpha).with_trees(trees), None
    makers = {
        "the Decode run": lambda: from_run(run, trees) if run is not None and run.steps else None,
        "the τ sweep": lambda: from_sweep(sweep, trees) if sweep else None,
    }
    order = [source, *(name for name in makers if name != source)]
    try:
        for i, name in enumerate(order):
            if (found := makers[name]()) is not None:
                taken = found.source.split(" (")[0]
                return found, None if i == 0 else f"(nothing measured yet for {source}: taken from {taken} instead.)"
    except SpecvizError as exc:
        return outlook.Acceptance("α by hand", alpha=alpha), plain(sentence(exc))
    return outlook.Acceptance("α by hand", alpha=alpha), (
        "Nothing measured yet (press Step on the Decode page, or Run on the τ sweep page): α by hand."
    )
