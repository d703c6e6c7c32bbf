"""The glossary of docs/algorithm.md ("Glossary: the same numbers in the serving engines") as data, for the
About page's table: each number specviz shows, its formula, and what vLLM, SGLang and llama.cpp call it (read from
the engines' own source: the files and commits are cited in docs/algorithm.md). Cells are Markdown (engine names in
code spans). tests/test_app_about.py checks that these rows are the document's, cell for cell."""

from __future__ import annotations

COLUMNS = ("specviz", "formula", "vLLM", "SGLang", "llama.cpp")
# Per step, a is the number of accepted draft tokens (the bonus excluded), k the number drafted.
ROWS: tuple[tuple[str, str, str, str, str], ...] = (
    (
        "steps",
        "target passes",
        "`vllm:spec_decode_num_drafts` (`num_drafts`): steps with at least one draft token",
        "not reported (internal counter `spec_num_forward_ct`: (request, step) pairs)",
        "`#gen drafts = %d` in the server's `statistics` line (ggml-org/llama.cpp#24536); not reported before",
    ),
    (
        "drafted",
        "`Σ k`",
        "`Drafted: %d tokens`, `vllm:spec_decode_num_draft_tokens`",
        "not reported",
        "`%5d generated`, `timings.draft_n`; `n_drafted` in `speculative-simple`",
    ),
    (
        "accepted",
        "`Σ a`",
        "`Accepted: %d tokens`, `vllm:spec_decode_num_accepted_tokens`",
        "not reported (its counter holds `Σ (a + 1)`)",
        "`%5d accepted`, `timings.draft_n_accepted`; `n_accept`",
    ),
    (
        "draft acceptance rate",
        "`Σ a / Σ k`",
        "`Avg Draft acceptance rate: %.1f%%` = `100·Σ a / Σ k`",
        "**no equivalent** (see `accept rate`)",
        "`draft acceptance rate = %0.5f`; `accept = %.3f%%` in the examples",
    ),
    (
        "mean acceptance length",
        "`1 + Σ a / steps`",
        "`Mean acceptance length: %.2f` = `1 + Σ a / num_drafts`",
        "`accept len: %.2f` = `Σ (a + 1) / Σ batch size`; gauge `sglang:spec_accept_length`; `avg_spec_accept_length`",
        "`mean acceptance length = %.2f` in the server's timings, `#mean acc len` in `statistics` "
        "(ggml-org/llama.cpp#24536); not reported before",
    ),
    (
        "mean accepted draft tokens",
        "`Σ a / steps`",
        "mean acceptance length − 1",
        "`accept len` − 1",
        "mean acceptance length − 1 (where reported)",
    ),
    (
        "per-position acceptance rate `i`",
        "`#{n ≥ i} / steps`",
        "`Per-position acceptance rate: %s` (one `%.3f` per position); counter "
        '`vllm:spec_decode_num_accepted_tokens_per_pos{position="i−1"}` / `num_drafts`',
        "not reported",
        "`acceptance rate per position = (%.3f, …)`, `#acc rate/pos` (ggml-org/llama.cpp#24536); not reported before",
    ),
    (
        "conditional per-position rate `i`",
        "`#{n ≥ i} / #{reached i}`",
        "not reported; with every step drafting `K` tokens it is the ratio of consecutive per-position rates",
        "not reported",
        "not reported",
    ),
    (
        "(no specviz metric)",
        "`mean acceptance length / (num_draft_tokens + 1)`, with `num_draft_tokens = τ` for a chain",
        "–",
        "`accept rate: %.2f` = `Σ (a + 1) / (steps · speculative_num_draft_tokens)`; gauge `sglang:spec_accept_rate`",
        "–",
    ),
)
NOTE = (
    "Per step, a is the number of accepted draft tokens (the bonus excluded), k the number drafted. α, c, v and "
    "tokens/s have no engine counterpart in these logs. SGLang's accept rate is not a draft acceptance rate: it counts "
    "the bonus token and divides by the tree's nodes. vLLM's per-position rate is unconditional (specviz's "
    "per-position acceptance rate); EAGLE's old alpha is the conditional one."
)


def glossary_rows() -> list[dict[str, str]]:
    """The table's rows, one dict per metric, keyed by COLUMNS."""
    return [dict(zip(COLUMNS, row, strict=True)) for row in ROWS]
