"""A run as the serving engines would log it (docs/algorithm.md, "Glossary: the same numbers in the serving
engines"): vLLM's spec-decode metrics line and Prometheus counters, SGLang's `accept len` / `accept rate`
and llama.cpp's draft acceptance rate, each computed from the trace with the engine's own formula, so an
engineer can put a specviz run beside an engine's log.

Read from the engines' source: vLLM `vllm/v1/spec_decode/metrics.py` (`SpecDecodingStats.observe_draft`,
`SpecDecodingLogging.log`, `SpecDecodingProm`); SGLang `python/sglang/srt/managers/scheduler_metrics_mixin.py`
(`log_decode_stats`); llama.cpp `tools/server/server-context.cpp`. Where a quantity has no exact counterpart
in a trace (vLLM's wall time of a log interval), the nearest one is used and said in the export."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specviz.core.trace import RunTrace, StepTrace

# Each metric the app shows under the engines' names (the help of every metric tile and chart; the table is
# docs/algorithm.md, "Glossary: the same numbers in the serving engines").
GLOSSARY = {
    "mean acceptance length": "vLLM logs it as 'Mean acceptance length' (1 + accepted / num_drafts); SGLang as "
    "'accept len' (gauge sglang:spec_accept_length); llama.cpp's server as 'mean acceptance length' (since "
    "ggml-org/llama.cpp#24536; older servers do not report it)",
    "draft acceptance rate": "vLLM: 'Avg Draft acceptance rate' (100 × accepted / drafted); llama.cpp: 'draft "
    "acceptance rate = … (accepted / generated)'. SGLang's 'accept rate' is not this: it counts the bonus token "
    "and divides by the tree's nodes and root",
    "node acceptance rate": "vLLM counts every verified node as drafted, so its 'Avg Draft acceptance rate' is this; "
    "SGLang's 'accept rate' is accept len / (nodes + 1), the bonus token counted",
    "α": "no engine reports it: it needs q in full, which engines do not keep",
    "target forward passes": "vLLM counts those that drafted as vllm:spec_decode_num_drafts; SGLang counts "
    "spec_verify_ct per request",
    "tokens/s": "no engine counterpart: vLLM's 'Accepted throughput' counts accepted draft tokens only, over its "
    "log interval's wall time",
    "per-position acceptance rate": "vLLM's 'Per-position acceptance rate' is this unconditional rate (counter "
    "vllm:spec_decode_num_accepted_tokens_per_pos / num_drafts), and so is llama.cpp's server's 'acceptance rate "
    "per position' (since ggml-org/llama.cpp#24536); EAGLE's old alpha is the conditional one; SGLang does not "
    "report either",
}


@dataclass(frozen=True)
class EngineCounts:
    """vLLM's counters over some steps: a step that drafted nothing is not a draft (vLLM skips it)."""

    num_drafts: int  # steps with at least one draft token
    num_draft_tokens: int  # Σ k: drafted tokens (a tree: every node verified)
    num_accepted_tokens: int  # Σ a: accepted draft tokens, the bonus excluded
    accepted_per_pos: tuple[int, ...]  # position j (0-based): drafts that accepted at least j + 1
    seconds: float  # the steps' draft and verify time (the trace's nearest to vLLM's log interval)
    steps: int  # every target pass, drafted or not (SGLang counts them all)

    @classmethod
    def of(cls, steps: Sequence[StepTrace], positions: int) -> EngineCounts:
        drafted = [s for s in steps if s.nodes > 0]
        per_pos = tuple(sum(1 for s in drafted if s.n_accepted > j) for j in range(positions))
        return cls(
            num_drafts=len(drafted),
            num_draft_tokens=sum(s.nodes for s in drafted),
            num_accepted_tokens=sum(s.n_accepted for s in drafted),
            accepted_per_pos=per_pos,
            seconds=sum(s.draft_ms + s.verify_ms for s in steps) / 1000.0,
            steps=len(steps),
        )


def _positions(run: RunTrace) -> int:
    """vLLM's num_spec_tokens: the positions its per-position rate has (a tree: its depth)."""
    planned = run.config.steps if run.config.tree else run.config.tau
    return max([planned, *(s.depth for s in run.steps)])


def vllm_line(counts: EngineCounts) -> str:
    """`SpecDecodingLogging.log`'s line for these counters."""
    if counts.num_drafts == 0:
        return "SpecDecoding metrics: (no step drafted a token: vLLM logs nothing)"
    seconds = counts.seconds if counts.seconds > 0 else float("nan")
    rate = 100.0 * counts.num_accepted_tokens / counts.num_draft_tokens
    rates = ", ".join(f"{a / counts.num_drafts:.3f}" for a in counts.accepted_per_pos)
    return (
        "SpecDecoding metrics: "
        f"Mean acceptance length: {1 + counts.num_accepted_tokens / counts.num_drafts:.2f}, "
        f"Accepted throughput: {counts.num_accepted_tokens / seconds:.2f} tokens/s, "
        f"Drafted throughput: {counts.num_draft_tokens / seconds:.2f} tokens/s, "
        f"Accepted: {counts.num_accepted_tokens} tokens, "
        f"Drafted: {counts.num_draft_tokens} tokens, "
        f"Per-position acceptance rate: {rates}, "
        f"Avg Draft acceptance rate: {rate:.1f}%"
    )


def vllm_lines(run: RunTrace, every: int = 0) -> list[str]:
    """The metrics line per log interval of `every` steps (0: one interval, the whole run)."""
    positions, steps = _positions(run), list(run.steps)
    size = every if every > 0 else max(1, len(steps))
    return [vllm_line(EngineCounts.of(steps[i : i + size], positions)) for i in range(0, len(steps), size)]


def vllm_prometheus(run: RunTrace) -> str:
    """`SpecDecodingProm`'s counters after the run, as a /metrics scrape shows them (the `_total` suffix)."""
    c = EngineCounts.of(run.steps, _positions(run))
    lines = [
        f"vllm:spec_decode_num_drafts_total {c.num_drafts}",
        f"vllm:spec_decode_num_draft_tokens_total {c.num_draft_tokens}",
        f"vllm:spec_decode_num_accepted_tokens_total {c.num_accepted_tokens}",
    ]
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{j}"}} {a}'
        for j, a in enumerate(c.accepted_per_pos)
    ]
    return "\n".join(lines)


def sglang_line(run: RunTrace) -> str:
    """SGLang's `log_decode_stats` fields: accept len = Σ (a + 1) / steps; accept rate = accept len /
    speculative_num_draft_tokens, which counts the root (a chain of τ: τ + 1; a tree: its nodes + 1)."""
    c = EngineCounts.of(run.steps, _positions(run))
    if c.steps == 0:
        return "accept len: –, accept rate: –"
    length = (c.num_accepted_tokens + c.steps) / c.steps
    nodes = (run.config.num_draft_tokens if run.config.tree else run.config.tau) + 1
    return f"accept len: {length:.2f}, accept rate: {length / nodes:.2f}"


def llamacpp_line(run: RunTrace) -> str:
    """llama.cpp server's line at the end of a request (`n_draft_accepted / n_draft_total`)."""
    c = EngineCounts.of(run.steps, _positions(run))
    if c.num_draft_tokens == 0:
        return "(no draft token: llama.cpp prints no draft acceptance rate)"
    accepted, drafted = c.num_accepted_tokens, c.num_draft_tokens
    return f"draft acceptance rate = {accepted / drafted:0.5f} ({accepted:5d} accepted / {drafted:5d} generated)"


def llamacpp_timing_line(run: RunTrace) -> str:
    """The line current llama.cpp servers print at the end of a request (ggml-org/llama.cpp#24536): the draft
    acceptance, the mean acceptance length 1 + accepted / verify steps and the per-position rates over those steps,
    each position's accepted drafts counted as vLLM counts them."""
    c = EngineCounts.of(run.steps, _positions(run))
    if c.num_draft_tokens == 0:
        return "(no draft token: llama.cpp prints no draft acceptance)"
    accepted, drafted = c.num_accepted_tokens, c.num_draft_tokens
    rates = ", ".join(f"{a / c.num_drafts:.3f}" for a in c.accepted_per_pos)
    return (
        f"draft acceptance = {accepted / drafted:0.5f} ({accepted:5d} accepted / {drafted:5d} generated), "
        f"mean acceptance length = {1 + accepted / c.num_drafts:5.2f}, acceptance rate per position = ({rates})"
    )


def engine_report(run: RunTrace, every: int = 0) -> str:
    """Everything above as one text file, with what each number covers."""
    settings = f"τ = {run.config.tau}" if not run.config.tree else f"a tree of {run.config.num_draft_tokens} nodes"
    return "\n".join(
        [
            f"# specviz run: {run.target_name} + {run.draft_name}, {run.config.mode} mode, {settings}, "
            f"{len(run.steps)} steps, {len(run.new_tokens)} tokens",
            "# throughputs: over the steps' draft + verify time (vLLM divides by its log interval's wall time)",
            "# vLLM (vllm/v1/spec_decode/metrics.py, SpecDecodingLogging.log), one line per log interval:",
            *vllm_lines(run, every),
            "# vLLM Prometheus counters (SpecDecodingProm) after the run:",
            vllm_prometheus(run),
            "# SGLang (scheduler_metrics_mixin.py, the Decode batch line), over the whole run:",
            sglang_line(run),
            "# llama.cpp server (server-context.cpp), at the end of the request (older builds, then current ones):",
            llamacpp_line(run),
            llamacpp_timing_line(run),
            "",
        ]
    )
