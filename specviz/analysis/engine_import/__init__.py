"""A serving engine's own speculative-decoding numbers, read back: the other direction of
specviz.analysis.engine_logs. Each format is read as the engine writes it, from the engine's own source and the
versions that print it (tests/fixtures/engine_logs/ holds real pasted output of each, its source in its header):

- vLLM V1 log lines, `vllm/v1/spec_decode/metrics.py` (`SpecDecodingLogging.log`), one line per log interval:
  `Speculative metrics: Draft acceptance rate: 1.000, Number of accepted tokens: …, Number of draft tokens: …, `
  (the first V1 layout, vllm-project/vllm#15151, v0.8.2); `SpecDecoding metrics: Draft acceptance rate: …%,
  Accepted: … tokens, Drafted: … tokens` (#15902, v0.8.3–v0.8.4: an acceptance rate only); the same with `Mean
  acceptance length` and `Per-position acceptance rate` (#16665, v0.8.5); and `SpecDecoding metrics: Mean
  acceptance length: …, Accepted throughput: …, Drafted throughput: …, Accepted: …, Drafted: …, Per-position
  acceptance rate: …, Avg Draft acceptance rate: …%` (later; newer builds add fields such as `Current speculative
  depth`, which are skipped).
- vLLM V0 log lines, `vllm/engine/metrics.py` with `vllm/spec_decode/metrics.py` (`SpecDecodeWorkerMetrics`, up to
  v0.9): `Speculative metrics: Draft acceptance rate: …, System efficiency: …, Number of speculative tokens: k,
  Number of accepted tokens: …, Number of draft tokens: …, Number of emitted tokens: ….` (`Number of draft tokens
  tokens:`, `Number of emitted tokens tokens:` in v0.4–v0.5, `_format_spec_decode_metrics_str`). Running totals since
  the engine started; the steps are draft tokens / k, the mean length emitted / steps. V0's accepted tokens count every
  draft token the rejection sampler kept, also after the first rejection; the tokens a step keeps are emitted − steps.
- vLLM's `examples/offline_inference/spec_decode.py` summary (its print statements, vllm-project/vllm eb987dff):
  `num_drafts: …`, `num_draft_tokens: …`, `num_accepted_tokens: …`, `mean acceptance length: %.2f`, `acceptance at
  token i: %.2f` (i from 0; older versions print the mean and the rates only, `acceptance at token i:%.2f`).
- vLLM Prometheus text, `vllm:spec_decode_num_drafts`, `…_num_draft_tokens`, `…_num_accepted_tokens`,
  `…_num_accepted_tokens_per_pos{position="i"}` (and `…_num_draft_tokens_per_pos` where exported), each with the
  `_total` suffix a scrape shows — `vllm/v1/spec_decode/metrics.py`, `SpecDecodingProm`; counts since start-up.
- vLLM per-request statistics, a response's `speculative_decoding_stats` (`num_spec_steps`,
  `num_accepted_draft_tokens`, `num_draft_tokens`, `num_spec_tokens`, `acceptance_histogram`) —
  `docs/features/speculative_decoding/acceptance_metrics.md` (`--per-request-spec-decode-stats summary`; an older
  spelling puts the same object under `metrics.speculative_decoding`, its histogram a list).
- SGLang decode-batch log lines, `Decode batch, #running-req: B, …, accept len: L, accept rate: R, …` (`Decode
  batch.` in older builds), and the bare `accept len: …, accept rate: …` —
  `python/sglang/srt/managers/scheduler_metrics_mixin.py`, `log_decode_stats`: accept len = Σ (accepted + 1) / Σ
  batch size over the last `--decode-log-interval` batches (40 by default). The accept rate changed meaning with
  sgl-project/sglang#23530 (2026-04-23): before, accept len / speculative_num_draft_tokens (τ + 1 for a chain);
  after, accepted draft tokens / proposed ones, (accept len − 1) / τ. Both are tried on every line; the τ every line
  agrees on is taken, and where the two disagree the newer is, and said. A `server_args=ServerArgs(…)` line (or the
  launch command's flags) in the same paste gives speculative_num_steps, _eagle_topk and _num_draft_tokens exactly.
- SGLang gauges `sglang:spec_accept_length`, `sglang:spec_accept_rate` (and `sglang:spec_num_draft_tokens`,
  `sglang:spec_num_steps` where exported) — `python/sglang/srt/metrics/collector.py`.
- SGLang per-request `meta_info` — `python/sglang/srt/managers/tokenizer_manager.py`,
  `_calculate_spec_decoding_metrics`: `spec_verify_ct` with `spec_accept_token_num`, `spec_draft_token_num`,
  `spec_accept_histogram` (to 2026-04), then `spec_num_correct_drafts`, `spec_num_proposed_drafts`,
  `spec_correct_drafts_histogram` (sgl-project/sglang#24081: drafts only, the bonus token not counted; the histogram
  has τ + 1 buckets, index = draft tokens a step kept), with the older names kept as aliases.
- llama.cpp server, per request, `tools/server/server-context.cpp` (`print_timings`): `draft acceptance rate = R
  (A accepted / G generated)` (to 2026-05), `draft acceptance = R (A accepted / G generated), mean len = L` (MTP, from
  ggml-org/llama.cpp#22673), and `…, mean acceptance length = L, acceptance rate per position = (…)`
  (ggml-org/llama.cpp#24536, 2026-06); the JSON response's `timings.draft_n`, `timings.draft_n_accepted`.
- llama.cpp `statistics <impl>: #calls = N, #gen drafts = …, #acc drafts = …, #gen tokens = …, #acc tokens = …`
  (2026-01 to 04, llama.cpp's speculative-decoding document) and `statistics <impl>: #calls(b,g,a) = b g a, …,
  #mean acc len = …, #acc rate/pos = (…)` (from ggml-org/llama.cpp#24536) — `common/speculative.cpp`,
  `common_speculative_print_stats`: one line per implementation (`--spec-type draft-dflash,ngram-mod` prints two),
  running totals since the server started.
  The rates it prints cover the first positions only where it drafts more (ngram-mod: 2 rates for drafts of ~30):
  such a line's counts are a prefix, said, and its mean length stays exact.
- llama.cpp Prometheus text (`--metrics`, ggml-org/llama.cpp#26389, 2026-08): `llamacpp:spec_decode_num_drafts`,
  `…_num_draft_tokens`, `…_num_accepted_tokens`, `…_num_accepted_tokens_per_pos{position="N"}` — counts since start-up.
- `llama-speculative` and `llama-speculative-simple`: `n_draft = …`, `n_predict = …`, `n_drafted = …`,
  `n_accept = …`, `accept = …%` — `examples/speculative/speculative.cpp`, `examples/speculative-simple/…`.
- The llama.cpp build the log was printed by: `build: NNNN (hash)` (common_init, to 2026-04), `build_info: bNNNN-hash`
  (server, ggml-org/llama.cpp#21460), `version: NNNN (hash)` (`--version`), a response's `system_fingerprint`
  `bNNNN-hash`; vLLM's `vLLM API server version X.Y.Z`. The settings are written in that build's spelling
  (specviz.analysis.engine_flags).

Printed numbers are taken as the intervals their rounding allows: the steps behind a line are those N for which
whole counts c_i with c_i / N within half a unit of each printed rate sum to the accepted tokens, 1 + accepted / N
rounds to the printed mean, and N ≤ drafted ≤ N · τ (a rate of 0.035 over 15 accepted allows 423–434 steps; 431 tokens
drafted one a step fix 431); where several fit, the nearest to accepted / Σ rates is taken and said. A line joined from
several (a paste whose newlines were lost) is read as its pieces, one from each record's start; SGLang's `meta_info`
counters are read wherever they are quoted (a `Finish: … out={'meta_info': …}` log line, a dict printed by Python, a
table), and a paste that is a Python dict (`print(meta_info)`, single quotes) is read as a literal. Running totals
count again from each engine start the paste shows (`Initializing an LLM engine`, `build: N`). Lines that show
nothing to read say so: vLLM's `nan%` with a mean length (drafts counted, no draft token) is "drafts seen, no
acceptance", not "nothing found".

A paste is read into sources (`read`): a log with two implementations, two runs (a running total that falls: the
server restarted), per-request lines beside running totals, or two formats of one engine is several sources, each
with its own numbers, best first (engine-given counts, then counts rebuilt from printed rates, then a mean length,
then a rate only); `parse` returns the first. Every per-position rate here is unconditional: steps that accepted at
least i draft tokens over all steps (docs/algorithm.md, "Glossary: the same numbers in the serving engines").
Anything that cannot be read raises EngineLogError naming the line; nothing is half-read.

One module per part: `records` (the formats and what reading gives), `lines` (log lines), `prometheus` (/metrics
text), `responses` (JSON), `checks` (what every format's numbers must satisfy), `sources` (sources and pooling),
`reading` (a paste read whole)."""

from specviz.analysis.engine_import.reading import parse, read, read_upload
from specviz.analysis.engine_import.records import (
    CUMULATIVE,
    FORMATS,
    GRADES,
    LLAMACPP,
    MAX_CHARS,
    MAX_JSON_DEPTH,
    MAX_LINES,
    RUNNING_TOTALS,
    SGLANG,
    SGLANG_LOG_INTERVAL,
    SGLANG_MAX_TAU,
    VLLM,
    EngineImport,
    Format,
    Reading,
    Record,
)

__all__ = [
    "CUMULATIVE",
    "FORMATS",
    "GRADES",
    "LLAMACPP",
    "MAX_CHARS",
    "MAX_JSON_DEPTH",
    "MAX_LINES",
    "RUNNING_TOTALS",
    "SGLANG",
    "SGLANG_LOG_INTERVAL",
    "SGLANG_MAX_TAU",
    "VLLM",
    "EngineImport",
    "Format",
    "Reading",
    "Record",
    "parse",
    "read",
    "read_upload",
]
