"""Speculative decoding, one step at a time, exactly as docs/algorithm.md describes it.

References: Leviathan, Kalman, Matias, "Fast Inference from Transformers via Speculative
Decoding" (ICML 2023); Chen et al., "Accelerating Large Language Model Decoding with Speculative
Sampling" (2023). Notation: p is the target, q the draft, τ the draft tokens per step.

Shapes, as vLLM's spec_decode marks its tensors: V is the vocabulary (the target's and the draft's, the same), τ the
draft tokens of this step (fewer than the setting near the end, at EOS or with an early stop), N a tree's drafted
nodes. Every distribution is a float64 CPU tensor whose last dimension is V (specviz.core.sampling).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import torch

from specviz import pieces
from specviz.core import lossy
from specviz.core import tree as tree_mod
from specviz.core.config import VERIFICATIONS, SpecConfig
from specviz.core.prompt import encode_prompt
from specviz.core.record import record_step, record_tree_step
from specviz.core.rules import RuleOutcome, choose, each_rule
from specviz.core.sampling import logits_to_probs, sample
from specviz.core.trace import (
    RunTrace,
    StepTrace,
    StopReason,
    build_run_trace,
)
from specviz.errors import ConfigError, SpecvizError
from specviz.limits import MAX_TAU, token_budget
from specviz.models import threads as torch_threads
from specviz.models.lm import TreeSession
from specviz.models.pair import ModelPair


class DecodingFinished(SpecvizError):
    """step() was called on a run that already stopped (EOS, max_new_tokens, context length)."""


class Decoder:
    """One run: a pair, a prompt, settings and a seeded generator. `step()` advances by one
    speculative step and returns its trace; `undo()` steps back; `run()` goes to the end."""

    def __init__(
        self,
        pair: ModelPair,
        prompt: str | Sequence[int],
        config: SpecConfig | None = None,
        chat: bool | None = None,
        compare_rules: bool = False,
    ) -> None:
        """`chat`: wrap a text prompt in the target's chat template; None = the model's default
        (on for Instruct models that have a template). `compare_rules`: keep, for every lossless chain step,
        what each verification rule makes of its draft and draws (`under_each_rule`); off when timing."""
        self.pair = pair
        self.config = config or SpecConfig()
        check_target_supports(pair, self.config)
        self.prompt = prompt if isinstance(prompt, str) else ""
        self.prompt_text, ids, self.chat = encode_prompt(pair, prompt, chat)
        self.prompt_ids = tuple(ids)
        self._ids = list(ids)
        self._gen = torch.Generator().manual_seed(self.config.seed)
        linear = not self.config.tree  # the most this run holds, a step's draft included
        self._target, self._draft = pair.new_sessions(tokens=session_tokens(len(ids), self.config), linear=linear)
        if self.config.tree:
            for role, session in (("target", self._target), ("draft", self._draft)):
                if not isinstance(session, TreeSession):
                    name = pair.target.name if role == "target" else pair.draft.name
                    raise ConfigError(f"the {role} {name} cannot score a token tree; use a chain (steps = 0)")
        self._steps: list[StepTrace] = []
        self._history: list[torch.Tensor] = []  # generator state before each step, for undo()
        self.compare_rules = compare_rules
        self._outcomes: dict[int, tuple[RuleOutcome, ...]] = {}  # step index → each rule's outcome
        with pieces.piece():  # reading the prompt is model work: a piece of its own (specviz.pieces)
            self.prefill_ms = self._prefill()

    # --- public ---------------------------------------------------------------------------------

    @property
    def steps(self) -> tuple[StepTrace, ...]:
        return tuple(self._steps)

    @property
    def new_tokens(self) -> tuple[int, ...]:
        return tuple(self._ids[len(self.prompt_ids) :])

    @property
    def stop_reason(self) -> StopReason | None:
        emitted = len(self._ids) - len(self.prompt_ids)
        eos = self.pair.codec.eos_token_id
        if emitted and eos is not None and self._ids[-1] == eos:
            return "eos"
        if emitted >= self.config.max_new_tokens:
            return "max_new_tokens"
        if self._budget() <= 0:
            return "context_length"
        return None

    @property
    def forward_seconds(self) -> tuple[float, float]:
        """Wall time spent inside the models' own forward passes so far: (draft, target)."""
        return self._draft.forward_seconds, self._target.forward_seconds

    @property
    def done(self) -> bool:
        return self.stop_reason is not None

    @torch_threads.on_one_thread
    def step(self) -> StepTrace:
        if self.done:
            raise DecodingFinished(f"the run has finished ({self.stop_reason}); reset to start again")
        state = self._gen.get_state()
        try:
            with pieces.piece():  # one step, one piece: a server may let others go between two (specviz.pieces)
                if self.config.tree:
                    trace = self._tree_step(len(self._steps), min(self.config.steps, self._budget() - 1))
                else:
                    trace = self._step(len(self._steps), min(self.planned_tau(), self._budget() - 1))
        except SpecvizError:  # e.g. a remote target failed mid-step: back to before it, the run intact
            self._gen.set_state(state)
            self._crop_sessions()
            raise
        self._history.append(state)
        self._steps.append(trace)
        return trace

    def planned_tau(self) -> int:
        """The τ the policy plans for the next step, from the earlier steps alone (docs/algorithm.md,
        "Variants"): fixed and confidence, config τ (confidence may stop earlier); heuristic, config
        τ first, then +2 after a step that accepted all it planned and −1 (never below 1) after any
        other, as assisted generation schedules it."""
        planned = self.config.tau
        if self.config.tau_policy != "heuristic":
            return planned
        for step in self._steps:
            planned = next_plan(planned, step.n_accepted)
        return planned

    def undo(self) -> StepTrace | None:
        """Take back the last step: output, caches and random state return to before it."""
        if not self._steps:
            return None
        trace = self._steps.pop()
        self._outcomes.pop(trace.index, None)
        self._gen.set_state(self._history.pop())
        del self._ids[len(self._ids) - len(trace.emitted) :]
        self._crop_sessions()
        return trace

    def restart(self, seed: int) -> None:
        """Back to the start of the run with a new seed; the prompt stays encoded in the caches."""
        while self.undo() is not None:
            pass
        self._gen.manual_seed(seed)
        self.config = dataclasses.replace(self.config, seed=seed)

    def under_each_rule(self, index: int) -> tuple[RuleOutcome, ...] | None:
        """What token-wise, one-hot and block verification make of step `index`'s draft and draws (kept
        when the run was started with `compare_rules` and the step is a lossless chain step); else None."""
        return self._outcomes.get(index)

    @torch_threads.on_one_thread
    def next_rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(p, q): the target's and the draft's distributions of the next token, each [V] float64 and warped as the
        run warps them, without taking a step (the caches are cropped back; no draw is taken from the run's
        generator). What a lossy rule's exact cost at the first position is computed from (specviz.core.lossy)."""
        with pieces.piece():
            q = self._warp(self._draft.extend(self._ids[self._draft.length :], keep=1)[-1])
            p = self._warp(self._target.extend(self._ids[self._target.length :], keep=1)[-1])
            self._crop_sessions()
        return p, q

    def run(self) -> RunTrace:
        while not self.done:
            self.step()
        return self.trace()

    def trace(self) -> RunTrace:
        return build_run_trace(
            config=self.config,
            target_name=self.pair.target.name,
            draft_name=self.pair.draft.name,
            prompt=self.prompt,
            chat=self.chat,
            prompt_text=self.prompt_text,
            prompt_ids=self.prompt_ids,
            steps=self._steps,
            new_tokens=self.new_tokens,
            text=self.pair.codec.decode(self.new_tokens),
            stop_reason=self.stop_reason,
            prefill_ms=self.prefill_ms,
            target_top_k=self.pair.target.capabilities.top_k,
        )

    # --- one step, as docs/algorithm.md -------------------------------------------------------------------

    def _step(self, index: int, tau: int) -> StepTrace:
        cfg, context_length = self.config, len(self._ids)
        t0 = time.perf_counter()
        draft, q = self._propose(tau)  # 1. draft τ tokens; q: [τ, V] float64, row t the draft's distribution at ŷ_t
        if self.pair.target.capabilities.splits_drafts:  # a text-only server cannot score every split (remote)
            keep = self._target.scorable_draft(self._ids, draft)
            draft, q = draft[:keep], q[:keep]
        t1 = time.perf_counter()
        feed = self._ids[self._target.length :] + draft  # 2. verify all of them in one pass
        # p: [τ + 1, V] float64: the target's distribution at each drafted position, then the one after the last
        p = self._warp(self._target.extend(feed, keep=len(draft) + 1))
        t2 = time.perf_counter()
        # 3–5. accept, count, next
        choice = choose(cfg.mode, draft, q, p, self._gen, verification=cfg.verification, knobs=cfg.knobs)
        emitted = self._emit([*draft[: choice.n], choice.token])  # 6. new confirmed sequence
        if self.compare_rules and cfg.mode == "lossless" and draft:  # the same step under each rule, to show
            rules = (*VERIFICATIONS, cfg.verification) if cfg.lossy else VERIFICATIONS  # a lossy run: its rule too
            self._outcomes[index] = each_rule(draft, q, p, choice.r, knobs=cfg.knobs, rules=rules)
        timing = (t1 - t0, t2 - t1)
        cost = lossy.cost_of(cfg.verification, draft, q, p, cfg.knobs) if cfg.lossy else None  # exact, closed form
        return record_step(
            index, context_length, draft, q, p, choice, emitted, timing, self.pair.codec.token_text, cfg.top_n, cost
        )

    def _tree_step(self, index: int, steps: int) -> StepTrace:
        """docs/algorithm.md, "Token trees": draft a tree, verify every node in one target pass, walk, emit."""
        cfg, context_length, ids = self.config, len(self._ids), self._ids
        t0 = time.perf_counter()
        if self.pair.draft.capabilities.plans:
            self._draft.plan(max(steps, 0))
        if steps < 1:  # no room for a draft token: the target's token alone, as a chain of τ = 0 would
            tree = tree_mod.root_only(self._draft, ids[self._draft.length :], self._warp)
        else:
            tree = tree_mod.draft_tree(
                self._draft, ids[self._draft.length :], cfg, steps, self._warp, self._gen, self.pair.codec.eos_token_id
            )
        t1 = time.perf_counter()
        pending = ids[self._target.length :]
        base = self._target.length
        parents = [base + j - 1 for j in range(len(pending))]
        parents += [base + len(pending) - 1 if up < 0 else base + len(pending) + up for up in tree.parent]
        logits = self._target.extend_tree([*pending, *tree.token], parents)  # [len(pending) + N, V]
        p = self._warp(logits[len(pending) - 1 :])  # [N + 1, V] float64: the root's row first, then one per node
        t2 = time.perf_counter()
        greedy = cfg.mode == "greedy"
        # r: N draws, one per node (None in greedy mode)
        r = [None] * len(tree) if greedy else torch.rand(len(tree), generator=self._gen, dtype=torch.float64).tolist()
        walked = tree_mod.walk(cfg.mode, tree, p, r, self._gen, cfg.verification, cfg.knobs)
        self._target.retain([*range(base, base + len(pending)), *(base + len(pending) + i for i in walked.path)])
        drafted = [tree.session_index[i] for i in walked.path if i in tree.session_index]
        self._draft.retain(drafted)
        emitted = self._emit([*(tree.token[i] for i in walked.path), walked.token])
        return record_tree_step(
            index, context_length, cfg, tree, p, r, walked, emitted, (t1 - t0, t2 - t1), self.pair.codec.token_text
        )

    def _propose(self, tau: int) -> tuple[list[int], torch.Tensor]:
        """Each draft token conditions on the prefix and the earlier draft tokens of this step
        (with `broken_draft`, deliberately, on the prefix alone: the same q at every position).

        Returns (tokens, q): tokens, τ′ ≤ `tau` ids (drafting stops at EOS, where the drafter has no proposal, or
        where a confidence policy stops it); q: [τ′, V] float64, row t the draft's distribution that ŷ_t was
        chosen from ([0, V] where nothing was drafted)."""
        cfg, eos = self.config, self.pair.codec.eos_token_id
        lossless = cfg.mode == "lossless"
        # a typed draft (specviz.drafts.typed): its tokens are proposed as they are, scored by the draft model's q
        given = self._draft.typed_draft() if self.pair.draft.capabilities.proposes else None
        tau = tau if given is None else min(tau, len(given))
        if self.pair.draft.capabilities.plans:  # a drafter that makes the step's whole draft at once (suffix decoding)
            self._draft.plan(tau)
        tokens: list[int] = []
        rows: list[torch.Tensor] = []  # τ′ rows of [V]: warped (lossless) or raw logits (warped together below)
        feed = self._ids[self._draft.length :]
        logits = None
        for t in range(tau):
            if logits is None or not cfg.broken_draft:
                logits = self._draft.extend(feed, keep=1)[-1]  # [V]: the draft's logits at the next position
            best = int(logits.argmax()) if given is None else given[t]  # = argmax of q: warping keeps the order
            if logits[best] == float("-inf"):  # the drafter has no proposal: stop drafting
                break
            if given is not None and not self._warp(logits)[best] > 0:
                break  # q(ŷ) = 0 (cut by top-k, top-p or temperature 0): p/q is undefined, the draft stops before it
            if cfg.tau_policy == "confidence" and t and float(self._warp(logits).max()) < cfg.confidence:
                break  # the draft is unsure at this position: stop early (its q is computed, not used)
            row = logits
            if lossless:
                row = self._warp(logits)
                best = sample(row, self._gen) if given is None else best  # a typed token is not drawn from q
            tokens.append(best)
            rows.append(row)
            if best == eos:
                break
            feed = [best]
        if not rows:
            return tokens, torch.empty(0, self.pair.target.vocab_size, dtype=torch.float64)
        stacked = torch.stack(rows)
        return tokens, stacked if lossless else self._warp(stacked)

    def _warp(self, logits: torch.Tensor) -> torch.Tensor:
        """logits: [..., V] any float dtype → probabilities [..., V] float64, each row warped by the run's
        temperature, top-k and top-p."""
        cfg = self.config
        return logits_to_probs(logits, cfg.temperature, cfg.top_k, cfg.top_p)

    def _emit(self, tokens: list[int]) -> tuple[int, ...]:
        eos = self.pair.codec.eos_token_id
        if eos is not None and eos in tokens:
            tokens = tokens[: tokens.index(eos) + 1]
        self._ids.extend(tokens)
        self._crop_sessions()
        return tuple(tokens)

    def _crop_sessions(self) -> None:
        # Keep in each cache only the prefix it shares with the confirmed sequence, minus the
        # last token, which the next step feeds. After an all-accepted step the draft cache
        # lacks ŷ_τ as well; the next step then feeds it two tokens.
        for session in (self._target, self._draft):
            session.crop(min(session.length, len(self._ids) - 1))

    @torch_threads.on_one_thread
    def _prefill(self) -> float:
        start = time.perf_counter()
        for session in (self._target, self._draft):
            if len(self._ids) > 1:
                session.extend(self._ids[:-1], keep=1)
        return (time.perf_counter() - start) * 1000.0

    def _budget(self) -> int:
        """Tokens this run may still emit (max_new_tokens, and the target's context length)."""
        left = self.config.max_new_tokens - (len(self._ids) - len(self.prompt_ids))
        return token_budget(left, self.pair.target.max_length, len(self._ids))


def session_tokens(prompt_tokens: int, config: SpecConfig) -> int:
    """The most a run holds in its models' caches, a step's draft included: what its sessions are opened for (a
    model that allocates them up front, llama.cpp, sizes them so; a class server counts them so before the run)."""
    return prompt_tokens + config.max_new_tokens + max(MAX_TAU, config.num_draft_tokens) + 2


def next_plan(planned: int, accepted: int) -> int:
    """The heuristic τ policy's plan after a step that planned `planned` draft tokens and accepted `accepted`: +2
    where it accepted all it planned, else −1, never below 1 (nor above MAX_TAU). A step drafts its plan, or fewer
    where the run has fewer tokens left to write (Decoder.step)."""
    return min(MAX_TAU, planned + 2) if accepted >= planned else max(1, planned - 1)


def check_target_supports(pair: ModelPair, config: SpecConfig) -> None:
    """A top-k-only target gives p(ŷ) and argmax p exactly, so textbook and greedy are exact at
    temperature 1 or 0 with no top-k or top-p; everything that needs p in full is refused. A target that
    cannot score a token tree in one pass is refused trees."""
    able = pair.target.capabilities
    if config.tree and not able.trees:
        raise ConfigError(
            f"the target {pair.target.name} is served remotely: its API scores one sequence per request and cannot "
            "verify a token tree in one pass with a tree attention mask; use a chain (steps = 0) or a local target"
        )
    if able.top_k is None:
        return
    why = f"the target {pair.target.name} returns only its top {able.top_k} probabilities"
    if config.mode == "lossless":
        raise ConfigError(
            f"{why}: lossless mode samples from max(0, p − q) and from p in full, which need all of p; use "
            "textbook or greedy mode (exact with a remote target)"
        )
    if config.temperature not in (0.0, 1.0) or config.top_k or config.top_p < 1.0:
        raise ConfigError(
            f"{why}: temperature {config.temperature:g}, top-k {config.top_k} and top-p {config.top_p:g} would "
            "renormalise p over tokens it did not return; use temperature 1 (or 0) with top-k 0 and top-p 1"
        )
