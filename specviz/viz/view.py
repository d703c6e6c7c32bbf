"""What the Decode page decides, here, and draws, there: the run's settings from its widgets, the step
shown by default, the metrics up to it, and the running metrics as tiles (label, value, definition)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from specviz.analysis.engine_logs import GLOSSARY
from specviz.analysis.measure import bootstrap
from specviz.core.config import SpecConfig
from specviz.core.metrics import Metrics, compute_metrics
from specviz.core.trace import RunTrace, StepTrace

# The Decode page's buttons: (action, label, widget key, icon); each click is queued (specviz.server.stepper)
CONTROLS = (
    ("step", "Step", "decode_step", ":material/skip_next:"),
    ("run", "Run to end", "decode_run_all", ":material/fast_forward:"),
    ("back", "Back", "decode_back", ":material/undo:"),
    ("reset", "Reset", "decode_reset", ":material/restart_alt:"),
)


@dataclass(frozen=True)
class Tile:
    label: str
    value: str
    help: str
    note: str = ""  # under the value, for a time: its spread over the steps, or that it is one step's


def rate_note(steps: Sequence[StepTrace]) -> str:
    """Tokens/s as a measurement, not a fact: with one step, that it is one step's time; with more, the 95%
    bootstrap interval over the steps (a busy moment in one step moves one step's rate, not the interval's
    other end)."""
    timed = [s for s in steps if s.draft_ms + s.verify_ms > 0]
    if len(timed) == 1:
        return "one step's time: not yet a rate"
    if len(timed) < 2:
        return ""
    spread = bootstrap(
        {"emitted": [len(s.emitted) for s in timed], "ms": [s.draft_ms + s.verify_ms for s in timed]},
        lambda c: 1000.0 * c["emitted"] / c["ms"],
    )
    return f"{spread.low:.1f}–{spread.high:.1f} over {len(timed)} steps (95%)"


# Under the two numbers a room reads side by side ("draft acceptance rate 89%" beside "α 0.828", issue 65.9), what
# each is, on screen (their help only on hover): the rate counts this run's tokens, α is the chance the numbers give.
RATE_NOTE = "counted: kept / drafted, this run"
ALPHA_NOTE = "expected: Σ min(p, q) a token"


def metric_tiles(
    m: Metrics, target_top_k: int | None = None, tree: bool = False, steps: Sequence[StepTrace] = ()
) -> list[Tile]:
    """The running metrics of docs/algorithm.md, one tile each, each defined in its help. With a remote target
    (`target_top_k`), α is marked approximate: the server returned only its top-k probabilities. For
    token trees (`tree`) each tile names what it counts: nodes verified, or depth accepted. `steps` (those
    counted in `m`): the timing tiles say their spread over them, or that they are one step's."""
    approx = f" — approximate (top-{target_top_k}): p beyond the server's top {target_top_k} is spread evenly"
    share = m.draft_ms / (m.draft_ms + m.verify_ms) if m.draft_ms + m.verify_ms else 0
    accepted = "accepted depth" if tree else "accepted"
    rate = (
        Tile(
            "node acceptance rate",
            f"{(m.draft_acceptance_rate or 0):.0%}",
            "accepted depth / nodes verified: a tree verifies alternatives of which at most one per depth can be "
            "accepted, so this reads lower than a chain's rate for the same tokens per step",
        )
        if tree
        else Tile("draft acceptance rate", f"{(m.draft_acceptance_rate or 0):.0%}", "accepted / drafted", RATE_NOTE)
    )
    tiles = [
        Tile(
            "mean acceptance length",
            f"{m.mean_acceptance_length or 0:.2f}",
            f"1 + {accepted} / steps: tokens per step, the target's token counted. Without it (mean accepted draft "
            f"tokens, {accepted} / steps): {m.mean_accepted_draft_tokens or 0:.2f}",
        ),
        rate,
        Tile(
            "α ≈ (top-k)" if target_top_k else "α",
            f"{(m.alpha or 0):.3f}",
            "mean over draft positions of Σ min(p, q)" + (approx if target_top_k else ""),
            ALPHA_NOTE,
        ),
        Tile(
            "target forward passes",
            str(m.target_forward_passes),
            f"for {m.emitted_tokens} tokens" + (f"; {m.drafted_tokens} nodes verified in them" if tree else ""),
        ),
        Tile(
            "tokens/s",
            f"{(m.tokens_per_second or 0):.1f}",
            "emitted tokens per second of drafting and verifying (the prompt's reading not counted); below it, the "
            "95% interval over the steps (a wall-clock time: on a busy server one step can take ten times another)",
            rate_note(steps),
        ),
        Tile(
            "time: draft / verify",
            f"{share:.0%} / {1 - share:.0%}",
            f"share of the decoding time spent drafting and verifying. c = {m.c or 0:.2f}: the time of one draft "
            "forward over one target forward (docs/algorithm.md); speculation can pay only where α > c",
            "one step's time" if len(steps) == 1 else "",
        ),
    ]
    engines = {**GLOSSARY, "α ≈ (top-k)": GLOSSARY["α"]}  # under the engines' names: one glossary
    return [
        Tile(t.label, t.value, f"{t.help}. {engines[t.label]}." if t.label in engines else t.help, t.note)
        for t in tiles
    ]


def default_step(steps: Sequence[StepTrace]) -> int:
    """The step (1-based) drawn unless one is picked: the newest; when the newest had no draft (the
    end was near), the newest that had one."""
    drafted = [s.index + 1 for s in steps if s.tau > 0]
    return drafted[-1] if drafted else len(steps)


def default_step_note(steps: Sequence[StepTrace], shown: int) -> str | None:
    """Why an older step is shown by default, or None."""
    if shown == default_step(steps) < len(steps):
        return f"The last step ({len(steps)}) had no draft: the end was near. Showing step {shown}, the last with one."
    return None


def metrics_upto(run: RunTrace, counted: Sequence[StepTrace]) -> tuple[Metrics, str]:
    """The running metrics over the steps counted (the first k of the run) and, in words, which."""
    if len(counted) < len(run.steps):
        return compute_metrics(counted, run.config.depth), f"steps 1–{len(counted)} of {len(run.steps)}"
    return run.metrics, "the whole run"


def expectation(tau: int) -> str:
    """Before the first Step: what a step can yield at τ (Markdown)."""
    return (
        f"**What to expect** at τ = {tau}: a step emits 1 to {tau + 1} tokens for one target pass; on average "
        "(1 − α^(τ+1)) / (1 − α) when each draft token is accepted with probability α."
    )


def decode_config(
    tree: tuple[int, int, int] | None, policy: str, confidence: float, broken: bool, **settings
) -> SpecConfig:
    """The Decode page's settings as a SpecConfig. With a tree, (topk, steps, num_draft_tokens): τ's
    policy and the broken draft are chain variants and are not used. Raises ConfigError."""
    if tree is not None:
        shape = dict(zip(("topk", "steps", "num_draft_tokens"), tree, strict=True))
        return SpecConfig(tau_policy="fixed", **shape, **settings)
    return SpecConfig(tau_policy=policy, confidence=confidence, broken_draft=broken, **settings)


LOSSY_NAMES = {  # each lossy rule with its knobs, as the page names it
    "typical": "Typical acceptance (lossy; ε = {posterior_threshold:g}, δ = {posterior_alpha:g})",
    "sglang": "SGLang's accept thresholds (lossy; t_s = {threshold_single:g}, t_a = {threshold_acc:g})",
    "ensemble": "Static ensemble (lossy; w = {ensemble_weight:g} on the target)",
}


LOSSY_TREE = (
    "**SGLang's accept thresholds (lossy)** walk this tree as its kernel does, and the output is not the target's. "
    "Its exact cost (the emitted distribution and its distance from the target) is computed for chains: set "
    "the tree off to see it beside the tokens per pass gained."
)


def lossy_cost(config: SpecConfig, m: Metrics, step: StepTrace, upto: str) -> str | None:
    """A lossy run's gain beside its cost (docs/algorithm.md, "Lossy rules"), in Markdown: tokens per pass, exact on
    the run's own drafts, against the lossless rule the engine runs with the knob off on the same drafts; how far the
    output moved from the target, TV(o_t, p_t), mean and largest; the same for the step shown. None: a lossless rule."""
    cost = step.cost
    if not config.lossy or m.lossy_tokens_per_pass is None or cost is None:
        return None
    name = LOSSY_NAMES[config.verification].format(**dataclasses.asdict(config.knobs))
    gain = m.lossy_tokens_per_pass - m.baseline_tokens_per_pass
    decided = cost.decided(step.n_accepted)
    return (
        f"**{name}**, against **{cost.baseline}** (lossless) on the same drafts ({upto}). "
        f"Gain: **{m.lossy_tokens_per_pass:.3f}** tokens per pass instead of {m.baseline_tokens_per_pass:.3f}, "
        f"**{gain:+.3f}** per pass (expected, exact on these drafts). "
        f"Cost: the output moved from the target's distribution by a total-variation distance of "
        f"**{m.tv_mean:.4f}** per token on average, **{m.tv_max:.4f}** at most (exact, in closed form; 0 for a "
        f"lossless rule).\n\n"
        f"This step: {cost.tokens_per_pass:.3f} tokens per pass expected against {cost.baseline_tokens_per_pass:.3f}; "
        f"TV per position {', '.join(f'{d:.4f}' for d in cost.tv)}"
        f" ({'the first ' + str(len(decided)) + ' decided its tokens' if len(decided) < step.tau else 'all decided'})."
    )
