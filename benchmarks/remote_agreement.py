"""How closely a served target agrees with the local one, step by step.

Greedy decoding with the target behind llama-cpp-python's server (benchmarks/llamaserver.py); at
every step the local target is run at the same context on the same draft block, and the step is
"alike" when both give the same accepted length and the same next token. Two served forms: the
shipped Q4_1 GGUF, and the same file de-quantised to float32 (the very computation of the local
target). The draft is the embedded model's first 20 layers: often wrong, so rejections are common.
Usage: python -m benchmarks.remote_agreement [--tokens N] [--tau T] [--prompts K]
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from benchmarks.llamaserver import f32_gguf, llama_server
from specviz import SpecConfig, load_pair
from specviz.core.engine import Decoder
from specviz.drafts.subset import early_exit
from specviz.models.lm import HFModel
from specviz.models.pair import ModelPair
from specviz.models.remote import RemoteTokenizerError

PROMPTS = (  # prose first: in code SmolLM2 writes splits llama-cpp-python cannot be sent (README)
    "Tell me a short story about a robot.",
    "What is the capital of France?",
    "Describe a rainy afternoon in a small town.",
    "Explain why the sky is blue in two sentences.",
    "Give me three tips for learning to cook.",
    "Who wrote Pride and Prejudice?",
    "Write a Python function that reverses a list.",
    "How do I sort a dictionary by value in Python?",
)


@dataclass
class Agreement:
    steps: int = 0
    steps_alike: int = 0  # same accepted length and same next token as the local target
    positions: int = 0
    positions_alike: int = 0  # the server's argmax equals the local one
    rejected: int = 0  # steps that stopped before the end of the draft block
    widest_gap: float = 0.0  # where argmaxes differ: local p(local argmax) − local p(server's argmax)
    ended: list[str] = field(default_factory=list)  # how each run ended: eos, max_new_tokens, or an error

    def __str__(self) -> str:
        return (
            f"steps alike {self.steps_alike} of {self.steps} ({self.steps_alike / self.steps:.1%}), "
            f"argmax alike at {self.positions_alike} of {self.positions}, {self.rejected} rejections, "
            f"widest local gap where they differ {self.widest_gap:.2g}; runs ended: {', '.join(self.ended)}"
        )


def served_pair(url: str, local_target: HFModel) -> ModelPair:
    """The target behind llama-cpp-python at `url` with the embedded model's first 20 layers as draft."""
    pair = load_pair(f"llamacpp:{url}", "embedded")  # checks the server's tokenizer against the draft's
    return ModelPair(pair.target, HFModel(early_exit(local_target.model, 20), "first 20 layers"), pair.codec)


def local_probs(target: HFModel, context: list[int], draft: tuple[int, ...]) -> torch.Tensor:
    """The local target's p at each draft position and the one after, from one forward pass."""
    return torch.softmax(target.new_session().extend([*context, *draft], keep=len(draft) + 1), -1)


def greedy_agreement(pair: ModelPair, local_target: HFModel, prompts: tuple[str, ...], cfg: SpecConfig) -> Agreement:
    """Decode each chat prompt greedily with `pair`; compare every step with `local_target`."""
    found = Agreement()
    for prompt in prompts:
        run = Decoder(pair, prompt, cfg, chat=True)
        try:
            while not run.done:
                run.step()
            found.ended.append(str(run.stop_reason))
        except RemoteTokenizerError as exc:  # the steps so far still count
            found.ended.append(type(exc).__name__)
        context = list(run.prompt_ids)
        for step in run.steps:
            probs = local_probs(local_target, context, step.draft_tokens)
            best = probs.argmax(-1).tolist()
            n = next((t for t, y in enumerate(step.draft_tokens) if best[t] != y), step.tau)
            found.steps += 1
            found.steps_alike += (n, best[n]) == (step.n_accepted, step.next_token)
            served = [row[0].token for row in step.p_top] + [step.next_token]
            for t, y in zip([*range(step.tau), step.n_accepted], served, strict=True):
                found.positions += 1
                found.positions_alike += best[t] == y
                found.widest_gap = max(found.widest_gap, float(probs[t, best[t]] - probs[t, y]))
            found.rejected += step.n_accepted < step.tau
            context += step.emitted
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--tau", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=len(PROMPTS))
    args = ap.parse_args()
    local = load_pair("embedded", "self").target
    cfg = SpecConfig(mode="greedy", tau=args.tau, max_new_tokens=args.tokens)
    prompts = PROMPTS[: args.prompts]
    print(f"greedy, τ = {args.tau}, {args.tokens} tokens × {len(prompts)} chat prompts, one run on this machine")
    with tempfile.TemporaryDirectory() as tmp:
        for name, model in (("float32 GGUF", f32_gguf(Path(tmp) / "f32.gguf")), ("Q4_1 GGUF (shipped)", None)):
            with llama_server(model) as url:
                print(f"{name:>20}: {greedy_agreement(served_pair(url, local), local, prompts, cfg)}", flush=True)


if __name__ == "__main__":
    main()
