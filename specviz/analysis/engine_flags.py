"""The settings to run a pair in each engine, spelled as the user's engine version takes them: a copyable command
line (or a settings block) and a one-line reason each. Pure strings: nothing here runs an engine.

Each spelling is read from the engine's own source (tests/fixtures/engine_flags/ hold the names as each parser lists
them, with the file and commit, and tests/test_engine_advice.py checks every line written here against them):

- llama.cpp's llama-server. The current spelling (`common/arg.cpp`, as `tools/server/README.md`'s generated help
  lists it at ggml-org/llama.cpp 00dc8057): `--spec-type draft-simple` (a comma-separated list of
  implementations), `--spec-draft-model` (`-md`, `--model-draft` aliases), `--spec-draft-n-max`,
  `--spec-draft-n-min`, `--spec-draft-p-min` (`--draft-p-min` alias). `--draft`, `--draft-n`, `--draft-max` and
  `--draft-min`, `--draft-n-min` are removed params there: the parser throws "the argument has been removed" and the
  server exits. They were replaced by ggml-org/llama.cpp#22397 ("spec : refactor params", merged 2026-04-28,
  commit 14e733e36f5752f39494b6c7e88022e43c05729a, release b8955): builds up to b8954 take `--draft-max`,
  `--draft-min`, `--draft-p-min`, `-md` (`common/arg.cpp` at 145b6280d6aa1890e22457143dad0badb3fd6820), and there a
  draft model alone turns drafting on. `--spec-type draft-simple` came with ggml-org/llama.cpp#22964 (2026-05-12),
  which renamed the draft-model implementations `draft-*`; it landed between b9106 and b9134 (java-llama.cpp's
  breaking-changes record of that upgrade), so from b8955 to b9133 the new `--spec-draft-*` names are written
  without `--spec-type` (a draft model still enabled drafting there), and from b9134 on with it (later builds
  no longer start drafting from `--spec-draft-model` alone: ggml-org/llama.cpp#24850).
- LM Studio. Its speculative-decoding settings are the `llm.prediction.speculativeDecoding` keys of
  `packages/lms-kv-config/src/schema.ts` (lmstudio-ai/lmstudio-js at 0012463e): for its llama.cpp engine
  `draftModel`, `maxTokensToDraft`, `minDraftLengthToConsider`, `minContinueDraftingProbability`, `numReuseTokens`;
  for MLX `draftModel`, `numDraftTokensExact` (the chat sidebar's "Speculative Decoding" section, where the
  Draft Model is chosen, lmstudio.ai/docs/advanced/speculative-decoding). The Python SDK names the same fields
  `draftModel`, `speculativeDecodingMinDraftLengthToConsider`, `speculativeDecodingMinContinueDraftingProbability`,
  `speculativeDecodingNumDraftTokensExact` (`src/lmstudio/_kv_config.py`, lmstudio-ai/lmstudio-python at 1f5340f5).
- vLLM: `vllm serve TARGET --speculative-config JSON` with `method`, `model`, `num_speculative_tokens`
  (`vllm/config/speculative.py`, `SpeculativeConfig`, at f19b16d9) and, for the dynamic schedule,
  `num_speculative_tokens_per_batch_size` (`docs/features/speculative_decoding/dynamic_speculative_decoding.md` at
  dba5f190). Before v0.8 the same was `--speculative-model` and `--num-speculative-tokens` (vllm-project/vllm#3706;
  deprecated for `--speculative-config` in v0.8 and removed by vllm-project/vllm#15466, 2025-03).
- SGLang: `python -m sglang.launch_server --model-path TARGET --speculative-algorithm ALGO
  --speculative-draft-model-path DRAFT --speculative-num-steps τ --speculative-eagle-topk 1
  --speculative-num-draft-tokens τ+1` (`python/sglang/srt/server_args.py` at 001067ff; a flag is its field's name);
  STANDALONE is the algorithm for a separate smaller draft model, NGRAM for none.

How the draft is verified, each engine's own options (OPTIONS; tests/fixtures/engine_flags/*_options.txt hold their
names): llama.cpp's `--spec-draft-sampling greedy|probabilistic` (ggml-org/llama.cpp#27694, release b11368; llama-
server's help: "how the draft is sampled (default: greedy)") is this app's one-hot rule (greedy: the draft's argmax,
accepted while the target's own sample agrees) or its token-wise rule (probabilistic: a sampled draft kept with
min(1, p/q)), for draft-simple and draft-mtp; vLLM's `draft_sample_method` (greedy | probabilistic) is the same choice
and `rejection_sample_method` (standard | synthetic | block) the verifier (`vllm/config/speculative.py` at 002e77c1);
SGLang verifies one-hot always, and its `--speculative-accept-threshold-single`/`-acc` below 1 make it lossy
(`server_args.py`, sgl-kernel `speculative_sampling.cuh`); `--speculative-adaptive` changes the steps, not the rule.

A build number the log prints is not always upstream's: a fork numbers its own releases. The log's own command line
is the evidence for the spelling (`--spec-draft-n-max` is the current one whatever the number says), and a number
below b4000, older than any llama-server that drafted (ggml-org/llama.cpp#10455, 2024-11), is not taken as upstream's:
both get the current spelling with a note, never a removed flag."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from specviz.errors import ConfigError

# llama.cpp: the build (release bNNNN) from which --draft-max / --draft-min are refused (ggml-org/llama.cpp#22397)
LLAMACPP_SPEC_RENAME = 8955
# the build from which --spec-type draft-simple is certainly accepted (ggml-org/llama.cpp#22964, within b9106–b9134)
LLAMACPP_DRAFT_SIMPLE = 9134
# the build from which --spec-draft-sampling is accepted (ggml-org/llama.cpp#27694, release b11368)
LLAMACPP_DRAFT_SAMPLING = 11368
# below this a build number is not upstream's llama-server with drafting (ggml-org/llama.cpp#10455 came after b4000)
LLAMACPP_SERVER_DRAFT = 4000
SAMPLINGS = ("greedy", "probabilistic")  # the draft's sampling, as llama.cpp and vLLM name it
RULE_OF_SAMPLING = {"greedy": "one-hot", "probabilistic": "token"}  # → this app's rule (SpecConfig.verification)
SAMPLED_TYPES = ("draft-simple", "draft-mtp")  # the llama.cpp drafts --spec-draft-sampling probabilistic applies to
VLLM_SPECULATIVE_CONFIG = (0, 8)  # vLLM versions from which --speculative-config replaces the separate flags
LMSTUDIO_KEY = "llm.prediction.speculativeDecoding"
ENGINES = ("llama.cpp", "LM Studio", "vLLM", "SGLang")
LLAMACPP_TYPES = {  # vLLM's method (the page's choice) → llama.cpp's --spec-type for a drafting model
    "draft_model": "draft-simple",
    "eagle3": "draft-eagle3",
    "mtp": "draft-mtp",
}
SGLANG_ALGORITHMS = {  # vLLM's method (the page's choice) → SGLang's --speculative-algorithm
    "draft_model": "STANDALONE",
    "eagle": "EAGLE",
    "eagle3": "EAGLE3",
    "mtp": "EAGLE",  # SGLang runs a model's MTP layers through its EAGLE worker (NEXTN is an alias of EAGLE)
    "ngram": "NGRAM",
    "suffix": "SUFFIX",  # suffix decoding (docs/algorithm.md, "Suffix decoding"): no draft model
}
MODEL_FREE = ("ngram", "suffix")  # methods that draft from the text, with no model of their own


@dataclass(frozen=True)
class Flag:
    """A setting as one engine takes it."""

    engine: str
    text: str  # to copy as it is
    reason: str  # one line


def _quote(value: str) -> str:
    return shlex.quote(value) if value else value


def llamacpp_server(
    target: str,
    draft: str,
    tau: int,
    n_min: int = 0,
    p_min: float | None = None,
    build: int | None = None,
    kind: str = "draft-simple",
    sampling: str | None = None,
    spelling: str | None = None,
    types: tuple[str, ...] = (),
) -> Flag:
    """llama-server's command line for a draft model (`kind`: draft-simple, or draft-eagle3 / draft-mtp for such a
    head), in the spelling of `build` (None: the current one) unless the log's own command line (`spelling`:
    "current" where it used --spec-draft-*, "old" where --draft-max; `types`: its --spec-type values) says otherwise;
    `sampling` greedy or probabilistic writes --spec-draft-sampling where the build has it."""
    _check(tau, n_min, p_min)
    if kind not in LLAMACPP_TYPES.values():
        raise ConfigError(f"llama.cpp drafts with a model as {', '.join(LLAMACPP_TYPES.values())}; got {kind!r}")
    if sampling is not None and sampling not in SAMPLINGS:
        raise ConfigError(f"llama.cpp samples the draft {' or '.join(SAMPLINGS)}; got {sampling!r}")
    current, spelled = _llamacpp_spelling(build, spelling)
    own = next((t for t in types if t != kind and t == kind.removeprefix("draft-")), None)  # a fork's name for it
    parts = ["llama-server", "-m", _quote(target or "target.gguf")]
    unknown = build is not None and build < LLAMACPP_SERVER_DRAFT  # not upstream's number: written as now
    if current and (build is None or build >= LLAMACPP_DRAFT_SIMPLE or unknown or spelling == "current" or types):
        parts += ["--spec-type", own or kind]
        if own:
            spelled += f"; --spec-type {own}, as the log's own command line names {kind}"
    if current:
        parts += ["--spec-draft-model", _quote(draft or "draft.gguf"), "--spec-draft-n-max", str(tau)]
        parts += ["--spec-draft-n-min", str(n_min)]
        if p_min is not None:
            parts += ["--spec-draft-p-min", f"{p_min:.2f}"]
    else:
        parts += ["-md", _quote(draft or "draft.gguf"), "--draft-max", str(tau), "--draft-min", str(n_min)]
        if p_min is not None:
            parts += ["--draft-p-min", f"{p_min:.2f}"]
    if sampling is not None:
        fork = unknown or (spelling == "current" and build is not None and build < LLAMACPP_SPEC_RENAME)
        has = current and not fork and (build is None or build >= LLAMACPP_DRAFT_SAMPLING)
        rule = RULE_OF_SAMPLING[sampling]
        if fork:
            spelled += (
                f"; --spec-draft-sampling (upstream from b{LLAMACPP_DRAFT_SAMPLING}) is left out: this build's number "
                "does not say whether it has it (without it the draft is greedy: the one-hot rule)"
            )
        elif not has:
            spelled += (
                f"; --spec-draft-sampling came with b{LLAMACPP_DRAFT_SAMPLING}: this build drafts greedily (the "
                "one-hot rule)"
            )
        elif sampling == "probabilistic" and kind not in SAMPLED_TYPES:
            spelled += f"; --spec-draft-sampling probabilistic applies to {' and '.join(SAMPLED_TYPES)}, not {kind}"
        elif sampling == "greedy":
            spelled += "; greedy drafting, --spec-draft-sampling's default (not written): this app's one-hot rule"
        else:
            parts += ["--spec-draft-sampling", sampling]
            spelled += f"; --spec-draft-sampling {sampling} verifies with this app's {rule} rule (lossless)"
    known = build is not None and LLAMACPP_SERVER_DRAFT <= build < LLAMACPP_DRAFT_SIMPLE and spelling != "current"
    if current and kind != "draft-simple" and known and not types:
        spelled += f"; --spec-type {kind} is not written before b{LLAMACPP_DRAFT_SIMPLE}: update to use that head"
    stop = f", stop drafting below p = {p_min:.2f}" if p_min is not None else ""
    return Flag("llama.cpp", " ".join(parts), f"At most {tau} draft tokens, at least {n_min}{stop}: {spelled}.")


def _llamacpp_spelling(build: int | None, spelling: str | None) -> tuple[bool, str]:
    """(current spelling, in words): from the build number, unless the log's own command line or a number no upstream
    llama-server with drafting has says otherwise."""
    if spelling == "current" and build is not None and build < LLAMACPP_SPEC_RENAME:
        return True, (
            f"build {build} is below b{LLAMACPP_SPEC_RENAME}, yet the log's own command line uses --spec-draft-*: a "
            "fork's build number, not upstream's, so the current spelling, as that command line has it"
        )
    if spelling == "old" and (build is None or build >= LLAMACPP_SPEC_RENAME):
        return False, (
            "the log's own command line uses --draft-max, which upstream refuses from "
            f"b{LLAMACPP_SPEC_RENAME}" + (f" (its build number, {build}, is a fork's)" if build is not None else "")
        )
    if build is not None and build < LLAMACPP_SERVER_DRAFT and spelling is None:
        return True, (
            f"build {build} is older than any upstream llama-server that drafts (ggml-org/llama.cpp#10455, after "
            f"b{LLAMACPP_SERVER_DRAFT}): a fork's or an unknown number, so the current spelling (type the upstream "
            f"build it follows if it is before b{LLAMACPP_SPEC_RENAME})"
        )
    if build is None:
        return True, (
            f"current llama.cpp (b{LLAMACPP_DRAFT_SIMPLE} on); --draft-max and --draft-min are refused from "
            f"b{LLAMACPP_SPEC_RENAME}"
        )
    if build >= LLAMACPP_SPEC_RENAME:
        typed = "with --spec-type" if build >= LLAMACPP_DRAFT_SIMPLE else "--spec-type draft-simple only"
        renamed = f"--spec-draft-* from b{LLAMACPP_SPEC_RENAME}"
        return True, f"build {build} ({renamed}, {typed} from b{LLAMACPP_DRAFT_SIMPLE})"
    return False, f"build {build}, before b{LLAMACPP_SPEC_RENAME} renamed them to --spec-draft-n-max/-n-min"


def lmstudio(draft: str, tau: int, n_min: int = 0, p_min: float | None = None, mlx: bool = False) -> Flag:
    """LM Studio's speculative-decoding settings (its config keys) for its llama.cpp engine, or MLX's."""
    _check(tau, n_min, p_min)
    name = draft or "draft-model-key"
    if mlx:
        config = {f"{LMSTUDIO_KEY}.draftModel": name, f"{LMSTUDIO_KEY}.numDraftTokensExact": tau}
        reason = f"LM Studio's MLX engine drafts exactly {tau} tokens a step (numDraftTokensExact); no cut-off there."
        return Flag("LM Studio (MLX)", json.dumps(config, indent=1), reason)
    config = {f"{LMSTUDIO_KEY}.draftModel": name, f"{LMSTUDIO_KEY}.maxTokensToDraft": tau}
    config[f"{LMSTUDIO_KEY}.minDraftLengthToConsider"] = n_min
    if p_min is not None:
        config[f"{LMSTUDIO_KEY}.minContinueDraftingProbability"] = round(p_min, 2)
    reason = (
        "The Speculative Decoding section's Draft Model and draft settings (LM Studio's own keys; its "
        f"maxTokensToDraft slider starts at 10, type {tau} in the field): at most {tau}, at least {n_min}"
        + (f", stop drafting below p = {p_min:.2f}." if p_min is not None else ".")
    )
    return Flag("LM Studio", json.dumps(config, indent=1), reason)


def vllm(
    target: str,
    draft: str,
    tau: int,
    method: str = "draft_model",
    schedule: list[list[int]] | None = None,
    version: tuple[int, ...] | None = None,
    sampling: str | None = None,
    extra: dict | None = None,
) -> Flag:
    """`vllm serve`'s speculative settings (τ = the largest of the schedule where one is given); `sampling`
    probabilistic adds draft_sample_method (greedy is its default, so not written); `extra`: more keys of the
    speculative config, as vLLM names them (suffix decoding's suffix_decoding_*)."""
    if sampling is not None and sampling not in SAMPLINGS:
        raise ConfigError(f"vLLM samples the draft {' or '.join(SAMPLINGS)}; got {sampling!r}")
    _check(tau, 0, None)
    model = draft or ("" if method in (*MODEL_FREE, "mtp") else "draft-model")
    if version is not None and tuple(version) < VLLM_SPECULATIVE_CONFIG:
        parts = ["vllm", "serve", _quote(target or "target-model"), "--speculative-model"]
        parts += [_quote(model or "[ngram]"), "--num-speculative-tokens", str(tau)]
        why = "vLLM before 0.8 (--speculative-config replaced these two flags in 0.8)"
        return Flag("vLLM", " ".join(parts), f"{tau} draft tokens a step: {why}.")
    config: dict = {"method": method}
    if model:
        config["model"] = model
    config["num_speculative_tokens"] = tau
    if schedule and len(schedule) > 1:
        config["num_speculative_tokens_per_batch_size"] = schedule
    if sampling == "probabilistic":
        config["draft_sample_method"] = sampling
    config.update(extra or {})
    quoted = shlex.quote(json.dumps(config))
    text = f"vllm serve {_quote(target or 'target-model')} --speculative-config {quoted}"
    why = f"{tau} draft tokens a step" + (
        ", τ per batch as scheduled" if "num_speculative_tokens_per_batch_size" in config else ""
    )
    if sampling is not None:
        why += f"; draft_sample_method {sampling}: this app's {RULE_OF_SAMPLING[sampling]} rule (lossless" + (
            "; the default, so not written)" if sampling == "greedy" else "; it keeps the draft's logits)"
        )
    return Flag("vLLM", text, f"{why} (vLLM 0.8 on; the per-batch schedule needs a build with dynamic speculation).")


def sglang(target: str, draft: str, tau: int, method: str = "draft_model", sampling: str | None = None) -> Flag:
    """SGLang's launch_server flags for a chain of τ (one token per level: --speculative-eagle-topk 1). SGLang
    verifies one-hot always (its kernel keeps no draft probabilities): `sampling` probabilistic is said, not written;
    its accept thresholds stay at their lossless 1.0."""
    _check(tau, 0, None)
    algorithm = SGLANG_ALGORITHMS.get(method)
    if algorithm is None:
        raise ConfigError(
            f"SGLang has no algorithm for vLLM's method {method!r}; choose one of {sorted(SGLANG_ALGORITHMS)}"
        )
    parts = ["python", "-m", "sglang.launch_server", "--model-path", _quote(target or "target-model")]
    parts += ["--speculative-algorithm", algorithm]
    if method not in MODEL_FREE and (draft or algorithm != "EAGLE"):
        parts += ["--speculative-draft-model-path", _quote(draft or "draft-model")]
    parts += ["--speculative-num-steps", str(tau), "--speculative-eagle-topk", "1"]
    parts += ["--speculative-num-draft-tokens", str(tau + 1)]
    why = f"A chain of {tau}: --speculative-num-draft-tokens counts the verified root, so {tau} + 1"
    if sampling == "probabilistic":
        why += "; SGLang verifies as if q were one-hot (no token-wise rule there): its draft stays greedy"
    return Flag("SGLang", " ".join(parts), why + ".")


@dataclass(frozen=True)
class EngineOption:
    """One of an engine's options for how speculative decoding runs, as its source defines it."""

    engine: str
    name: str  # the flag or settings key, as written
    values: tuple[str, ...]  # the values it takes ("" where it takes a number or nothing)
    default: str
    lossy: bool  # some value makes the output differ from the target's distribution
    what: str  # what it does, in words (the lossy values named)
    source: str  # the file (and version) it was read from


OPTIONS = (
    EngineOption(
        "llama.cpp",
        "--spec-draft-sampling",
        SAMPLINGS,
        "greedy",
        False,
        "How the draft is sampled: greedy drafts the argmax and keeps it while the target's own sample agrees (this "
        "app's one-hot rule); probabilistic samples the draft and keeps each token with min(1, p/q), else resamples "
        "from the residual (the token-wise rule), for draft-simple and draft-mtp. Both leave the output the target's.",
        f"common/arg.cpp, ggml-org/llama.cpp#27694 (release b{LLAMACPP_DRAFT_SAMPLING})",
    ),
    EngineOption(
        "llama.cpp",
        "--spec-draft-p-split",
        (),
        "0.10",
        False,
        "The split probability of the multi-branch drafter (examples/speculative/speculative.cpp): where another "
        "token's draft probability is above it, a new branch is drafted from that token. It changes what is "
        "drafted, not how it is verified: lossless.",
        "common/arg.cpp (--draft-p-split before b8955)",
    ),
    EngineOption(
        "llama.cpp",
        "--spec-type",
        ("draft-simple", "draft-eagle3", "draft-mtp", "draft-dflash", "ngram-mod", "ngram-simple"),
        "none",
        False,
        "Which drafters run, a comma-separated list (draft-mtp,ngram-mod): each keeps its own statistics line, so a "
        "log of two is two sources here; the per-request 'draft acceptance' line pools them.",
        "common/arg.cpp, common/speculative.cpp (ggml-org/llama.cpp#22964)",
    ),
    EngineOption(
        "vLLM",
        "draft_sample_method",
        SAMPLINGS,
        "greedy",
        False,
        "greedy: the draft's argmax, verified as if q were one-hot (the one-hot rule); probabilistic: a sampled draft "
        "verified with its own logits, min(1, p/q) (the token-wise rule), at the cost of GPU memory for them.",
        "vllm/config/speculative.py (SpeculativeConfig, vllm-project/vllm 002e77c1)",
    ),
    EngineOption(
        "vLLM",
        "rejection_sample_method",
        ("standard", "synthetic", "block"),
        "standard",
        True,
        "standard: rejection sampling (lossless); block: block verification, the draft judged as a whole (Sun et "
        "al., lossless); synthetic is lossy: it accepts draft tokens with preset rates (synthetic_acceptance_rates "
        "or _length), whatever the target says, to benchmark a given acceptance.",
        "vllm/config/speculative.py (SpeculativeConfig, vllm-project/vllm 002e77c1)",
    ),
    EngineOption(
        "SGLang",
        "--speculative-accept-threshold-single",
        (),
        "1.0",
        True,
        "Lossy below 1: a drafted child is accepted outright when the target gives it p ≥ this threshold, even "
        "where the coin would reject it; at 1.0 the target-only (one-hot) sampling is lossless.",
        "python/sglang/srt/server_args.py, sgl-kernel speculative_sampling.cuh (TreeSpeculativeSamplingTargetOnly)",
    ),
    EngineOption(
        "SGLang",
        "--speculative-accept-threshold-acc",
        (),
        "1.0",
        True,
        "Lossy below 1: a child is accepted when the coin u ≤ s / t_acc, s the target's p summed over the children "
        "tried, so a threshold below 1 keeps more than p allows; 1.0 is the lossless rule.",
        "python/sglang/srt/server_args.py, sgl-kernel speculative_sampling.cuh (TreeSpeculativeSamplingTargetOnly)",
    ),
    EngineOption(
        "SGLang",
        "--speculative-adaptive",
        (),
        "off",
        False,
        "Adapts --speculative-num-steps while serving, from a moving average of the accept length over the "
        "candidate steps of --speculative-adaptive-config (candidate_steps, ema_alpha, warmup_batches, "
        "update_interval, hysteresis): it changes τ, not the rule, so lossless; the flags here set one τ.",
        "python/sglang/srt/server_args.py, python/sglang/srt/speculative/adaptive_spec_params.py",
    ),
)


def settings(
    target: str,
    draft: str,
    tau: int,
    p_min: float | None = None,
    n_min: int = 0,
    engine: str | None = None,
    build: int | None = None,
    version: tuple[int, ...] | None = None,
    method: str = "draft_model",
) -> tuple[Flag, ...]:
    """The settings to run `draft` for `target` at τ in each engine (or only `engine`), with llama.cpp in the
    spelling of `build` and vLLM in that of `version` (None: the current spelling)."""
    if engine is not None and engine not in ENGINES:
        raise ConfigError(f"no settings for {engine!r}: one of {', '.join(ENGINES)}")
    made = {
        "llama.cpp": lambda: (llamacpp_server(target, draft, tau, n_min, p_min, build),),
        "LM Studio": lambda: (lmstudio(draft, tau, n_min, p_min), lmstudio(draft, tau, mlx=True)),
        "vLLM": lambda: (vllm(target, draft, tau, method, version=version),),
        "SGLang": lambda: (sglang(target, draft, tau, method),),
    }
    return tuple(flag for name in ([engine] if engine else ENGINES) for flag in made[name]())


def _check(tau: int, n_min: int, p_min: float | None) -> None:
    if not isinstance(tau, int) or isinstance(tau, bool) or tau < 1:
        raise ConfigError(f"τ is a whole number of draft tokens, at least 1; got {tau!r}")
    if not 0 <= n_min <= tau:
        raise ConfigError(f"the shortest draft is between 0 and τ = {tau}; got {n_min}")
    if p_min is not None and not 0.0 <= p_min <= 1.0:
        raise ConfigError(f"p-min is a probability, 0 to 1; got {p_min}")


def own_gguf_pair(target_file: str, draft_file: str, draft_name: str, tau: int) -> tuple[Flag, ...]:
    """llama-server's and LM Studio's settings for a GGUF pair of the user's own at the τ they measured it at: their own
    files (`draft_name`: the draft as LM Studio lists it), p-min 0 (every step drafts τ tokens, as measured here)."""
    server = settings(target_file, draft_file, tau, p_min=0.0, engine="llama.cpp")
    studio = settings(target_file, draft_name, tau, p_min=0.0, engine="LM Studio")
    return server + tuple(flag for flag in studio if flag.engine == "LM Studio")
