"""Speculative decoding, one step at a time, exactly as SPEC.md describes it.

References: Leviathan, Kalman, Matias, "Fast Inference from Transformers via Speculative
Decoding" (ICML 2023); Chen et al., "Accelerating Large Language Model Decoding with Speculative
Sampling" (2023). Notation: p is the target, q the draft, τ the draft tokens per step.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

import torch

from specviz.core import tree as tree_mod
from specviz.core.config import SpecConfig
from specviz.core.rules import Choice, at, choose, ratio_of
from specviz.core.sampling import logits_to_probs, overlap, sample
from specviz.core.trace import (
    RunTrace,
    StepTrace,
    StopReason,
    TokenProb,
    TreeNode,
    TreeTrace,
    VerifyTrace,
    build_run_trace,
)
from specviz.errors import ConfigError, PromptError, SpecvizError
from specviz.limits import MAX_TAU, token_budget
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
    ) -> None:
        """`chat`: wrap a text prompt in the target's chat template; None = the model's default
        (on for Instruct models that have a template)."""
        self.pair = pair
        self.config = config or SpecConfig()
        check_target_supports(pair, self.config)
        self.prompt = prompt if isinstance(prompt, str) else ""
        self.prompt_text, ids, self.chat = encode_prompt(pair, prompt, chat)
        self.prompt_ids = tuple(ids)
        self._ids = list(ids)
        self._gen = torch.Generator().manual_seed(self.config.seed)
        self._target, self._draft = pair.new_sessions()
        if self.config.tree:
            for role, session in (("target", self._target), ("draft", self._draft)):
                if not isinstance(session, TreeSession):
                    name = pair.target.name if role == "target" else pair.draft.name
                    raise ConfigError(f"the {role} {name} cannot score a token tree; use a chain (steps = 0)")
        self._steps: list[StepTrace] = []
        self._history: list[torch.Tensor] = []  # generator state before each step, for undo()
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

    def step(self) -> StepTrace:
        if self.done:
            raise DecodingFinished(f"the run has finished ({self.stop_reason}); reset to start again")
        state = self._gen.get_state()
        try:
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
        """The τ the policy plans for the next step, from the earlier steps alone (SPEC.md,
        "Variants"): fixed and confidence, config τ (confidence may stop earlier); heuristic, config
        τ first, then +2 after a step that accepted all it planned and −1 (never below 1) after any
        other, as assisted generation schedules it."""
        planned = self.config.tau
        if self.config.tau_policy != "heuristic":
            return planned
        for step in self._steps:
            planned = min(MAX_TAU, planned + 2) if step.n_accepted >= planned else max(1, planned - 1)
        return planned

    def undo(self) -> StepTrace | None:
        """Take back the last step: output, caches and random state return to before it."""
        if not self._steps:
            return None
        trace = self._steps.pop()
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

    # --- one step, as SPEC.md -------------------------------------------------------------------

    def _step(self, index: int, tau: int) -> StepTrace:
        cfg, context_length = self.config, len(self._ids)
        t0 = time.perf_counter()
        draft, q = self._propose(tau)  # 1. draft τ tokens
        if self.pair.target.capabilities.splits_drafts:  # a text-only server cannot score every split (remote)
            keep = self._target.scorable_draft(self._ids, draft)
            draft, q = draft[:keep], q[:keep]
        t1 = time.perf_counter()
        feed = self._ids[self._target.length :] + draft  # 2. verify all of them in one pass
        p = self._warp(self._target.extend(feed, keep=len(draft) + 1))
        t2 = time.perf_counter()
        choice = choose(cfg.mode, draft, q, p, self._gen, verification=cfg.verification)  # 3–5. accept, count, next
        emitted = self._emit([*draft[: choice.n], choice.token])  # 6. new confirmed sequence
        timing = (t1 - t0, t2 - t1)
        return record_step(
            index, context_length, draft, q, p, choice, emitted, timing, self.pair.codec.token_text, cfg.top_n
        )

    def _tree_step(self, index: int, steps: int) -> StepTrace:
        """SPEC.md "Token trees": draft a tree, verify every node in one target pass, walk, emit."""
        cfg, context_length, ids = self.config, len(self._ids), self._ids
        t0 = time.perf_counter()
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
        logits = self._target.extend_tree([*pending, *tree.token], parents)
        p = self._warp(logits[len(pending) - 1 :])
        t2 = time.perf_counter()
        greedy = cfg.mode == "greedy"
        r = [None] * len(tree) if greedy else torch.rand(len(tree), generator=self._gen, dtype=torch.float64).tolist()
        walked = tree_mod.walk(cfg.mode, tree, p, r, self._gen, cfg.verification)
        self._target.retain([*range(base, base + len(pending)), *(base + len(pending) + i for i in walked.path)])
        drafted = [tree.session_index[i] for i in walked.path if i in tree.session_index]
        self._draft.retain(drafted)
        emitted = self._emit([*(tree.token[i] for i in walked.path), walked.token])
        return record_tree_step(
            index, context_length, cfg, tree, p, r, walked, emitted, (t1 - t0, t2 - t1), self.pair.codec.token_text
        )

    def _propose(self, tau: int) -> tuple[list[int], torch.Tensor]:
        """Each draft token conditions on the prefix and the earlier draft tokens of this step
        (with `broken_draft`, deliberately, on the prefix alone: the same q at every position)."""
        cfg, eos = self.config, self.pair.codec.eos_token_id
        lossless = cfg.mode == "lossless"
        tokens: list[int] = []
        rows: list[torch.Tensor] = []
        feed = self._ids[self._draft.length :]
        logits = None
        for t in range(tau):
            if logits is None or not cfg.broken_draft:
                logits = self._draft.extend(feed, keep=1)[-1]
            best = int(logits.argmax())  # = argmax of q: warping keeps the order of tokens
            if logits[best] == float("-inf"):  # the drafter has no proposal: stop drafting
                break
            if cfg.tau_policy == "confidence" and t and float(self._warp(logits).max()) < cfg.confidence:
                break  # the draft is unsure at this position: stop early (its q is computed, not used)
            row = logits
            if lossless:
                row = self._warp(logits)
                best = sample(row, self._gen)
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


def record_step(
    index: int, context_length: int, draft: list[int], q: torch.Tensor, p: torch.Tensor, choice: Choice,
    emitted: tuple[int, ...], timing: tuple[float, float], text: Callable[[int], str], top_n: int = 10,
) -> StepTrace:  # fmt: skip
    """The immutable record of one step: every number a chart or a student needs."""
    k, n = len(draft), choice.n
    extra = [] if choice.residual is None else [choice.residual[None]]
    verify = None
    if choice.verification != "token":
        block = choice.block
        verify = VerifyTrace(choice.verification, choice.threshold, choice.passed, block.w if block else (),
                             block.residual_mass if block else ())  # fmt: skip
    after = "rejected" if verify is not None and verify.rule == "block" else "not reached"  # block: each failed
    tops = _top_rows(torch.cat([q, p[:k], p[n : n + 1], *extra]), top_n, text)
    return StepTrace(
        index=index,
        context_length=context_length,
        tau=k,
        draft_tokens=tuple(draft),
        draft_text=tuple(text(y) for y in draft),
        q=tuple(at(q, draft).tolist()),
        p=tuple(at(p[:k], draft).tolist()),
        ratio=tuple(choice.ratio.tolist()),
        r=choice.r,
        accepted=tuple(t < n for t in range(k)),
        decision=tuple("accepted" if t < n else "rejected" if t == n else after for t in range(k)),
        beta=tuple(overlap(p[:k], q).tolist()),
        n_accepted=n,
        next_token=choice.token,
        next_text=text(choice.token),
        next_rule=choice.rule,
        next_prob=float(choice.dist[choice.token]),
        emitted=emitted,
        q_top=tops[:k],
        p_top=tops[k : 2 * k],
        next_top=tops[2 * k],
        residual_top=tops[2 * k + 1] if extra else None,
        draft_ms=timing[0] * 1000.0,
        verify_ms=timing[1] * 1000.0,
        verify=verify,
    )


def record_tree_step(
    index: int, context_length: int, cfg: SpecConfig, tree: tree_mod.DraftTree, p: torch.Tensor,
    r: Sequence[float | None], walked: tree_mod.Walk, emitted: tuple[int, ...], timing: tuple[float, float],
    text: Callable[[int], str],
) -> StepTrace:  # fmt: skip
    """A tree step's record: every node, and the chain fields read along the main line
    (`tree.main_line`), so that a topk = 1 tree's record is the chain's, field for field."""
    n_top = cfg.top_n
    q_rows = {node: dist for node, dist in tree.dist.items()}
    p_at = lambda node: p[node + 1]  # noqa: E731 - row of p after `node` (−1: the root)
    q_at = lambda node: q_rows[node]  # noqa: E731
    nodes = []
    for i in range(len(tree)):
        up, x = tree.parent[i], tree.token[i]
        residual_p, residual_q = walked.residuals.get(i, (None, None))
        nodes.append(TreeNode(
            parent=up, depth=tree.depth[i], token=x, text=text(x), q=tree.q[i], p=float(p_at(up)[x]),
            score=tree.score[i], rank=tree.rank[i], r=r[i] if walked.decision[i] != "not tested" else None,
            ratio=walked.ratio[i], decision=walked.decision[i], p_top=tree_mod.top(p_at(i), n_top, text),
            q_top=tree_mod.top(q_at(i), n_top, text) if i in q_rows else (),
            residual_top=tree_mod.top(residual_p, n_top, text) if residual_p is not None else (),
            q_residual_top=tree_mod.top(residual_q, n_top, text) if residual_q is not None else (),
        ))  # fmt: skip
    line = tree_mod.main_line(tree, walked)
    n = len(walked.path)
    if line:
        parents = [tree.parent[i] for i in line]
        q_line = torch.stack([q_at(up) for up in parents])
        p_line = torch.stack([p_at(up) for up in parents])
    else:
        q_line = p_line = torch.empty(0, p.shape[-1], dtype=torch.float64)
    draft = [tree.token[i] for i in line]
    choice = Choice(
        r=tuple(r[i] for i in line),
        ratio=ratio_of(at(p_line, draft), at(q_line, draft)) if line else torch.empty(0, dtype=torch.float64),
        n=n, token=walked.token, rule=walked.rule, dist=walked.dist,
        residual=walked.dist if walked.rule == "residual" else None,
    )  # fmt: skip
    rows = torch.cat([p_line, p_at(walked.stop)[None]])
    step = record_step(index, context_length, draft, q_line, rows, choice, emitted, timing, text, n_top)
    tree_trace = TreeTrace(
        topk=cfg.topk, steps=cfg.steps, num_draft_tokens=cfg.num_draft_tokens, nodes=tuple(nodes), path=walked.path,
        stop=walked.stop, root_p_top=tree_mod.top(p_at(-1), n_top, text),
        root_q_top=tree_mod.top(q_at(-1), n_top, text),
    )  # fmt: skip
    return dataclasses.replace(step, tree=tree_trace)


def _top_rows(dists: torch.Tensor, n: int, text) -> tuple[tuple[TokenProb, ...], ...]:
    """The n most likely tokens of each row, as (token, text, prob); zero-probability ones omitted."""
    values, indices = torch.topk(dists, min(n, dists.shape[-1]), dim=-1)
    return tuple(
        tuple([TokenProb(t, text(t), pr) for t, pr in zip(row_i, row_v, strict=True) if pr > 0])
        for row_i, row_v in zip(indices.tolist(), values.tolist(), strict=True)
    )


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


def encode_prompt(pair: ModelPair, prompt: str | Sequence[int], chat: bool | None) -> tuple[str, list[int], bool]:
    """(exact text encoded, its ids, whether the chat template was used), checked for the target."""
    if isinstance(prompt, str):
        if not prompt.strip():
            raise PromptError("the prompt is empty: type some text to continue")
        use_chat = _resolve_chat(pair, chat)
        text, ids = pair.codec.encode_chat(prompt) if use_chat else (prompt, pair.codec.encode(prompt))
    else:
        ids, use_chat = [int(y) for y in prompt], False
        text = pair.codec.decode(ids)
    _check_prompt(ids, pair)
    return text, ids, use_chat


def _resolve_chat(pair: ModelPair, chat: bool | None) -> bool:
    default = pair.codec.chat_default
    if chat and default is None:
        raise PromptError(f"{pair.target.name} has no chat template: turn the chat option off")
    return bool(default) if chat is None else chat


def _check_prompt(ids: list[int], pair: ModelPair) -> None:
    if not ids:
        raise PromptError("the prompt is empty: type some text to continue")
    max_length = pair.target.max_length
    if max_length is not None and len(ids) >= max_length:
        raise PromptError(f"the prompt is {len(ids)} tokens long; the target reads at most {max_length}: shorten it")
    bad = [y for y in ids if not 0 <= y < pair.target.vocab_size]
    if bad:
        raise PromptError(f"token ids outside the vocabulary: {bad[:5]}")
