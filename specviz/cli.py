"""Command line: `python -m specviz --prompt "..." --tau 4 --json` prints a run trace as JSON."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from specviz.config import MODES, SpecConfig
from specviz.engine import Decoder
from specviz.errors import PromptError, SpecvizError
from specviz.models import load_pair


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit code 2
        self.exit(2, f"specviz: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m specviz", description="Run speculative decoding and print the trace.")
    parser.add_argument("--prompt", required=True, help="text to continue")
    parser.add_argument("--target", default="embedded", help="target: 'embedded' (default), a hub id or a local folder")
    parser.add_argument(
        "--draft",
        default="embedded",
        help="draft: 'embedded' (default), 'self', 'prompt-lookup', 'early-exit:K', a hub id or a folder",
    )
    parser.add_argument(
        "--chat",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="wrap the prompt in the chat template (default: on for Instruct models)",
    )
    parser.add_argument("--device", default="auto", help="auto (default), cpu or cuda")
    parser.add_argument("--dtype", default="auto", help="auto (default), float32, float16 or bfloat16")
    parser.add_argument("--max-params", type=int, default=None, help="refuse larger models (parameters)")
    parser.add_argument("--tau", type=int, default=4, help="draft tokens per step (default 4)")
    parser.add_argument("--mode", choices=MODES, default="textbook")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-k", type=int, default=0)
    parser.add_argument("--top-p", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--json", action="store_true", help="print the whole run trace as JSON")
    return parser


def _quiet_transformers() -> None:
    # stderr carries only our one-line errors; stdout only the trace
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()


def _say_conversion(message: str) -> None:
    if "GGUF" in message or "rebuilding" in message:  # the one slow first-time step
        print(f"specviz: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = SpecConfig(
            tau=args.tau,
            mode=args.mode,
            temperature=args.temperature,
            top_k=args.top_k,
            top_p=args.top_p,
            seed=args.seed,
            max_new_tokens=args.max_new_tokens,
        )
        if not args.prompt.strip():
            raise PromptError("the prompt is empty: give some text with --prompt")
        _quiet_transformers()
        pair = load_pair(
            args.target, args.draft, device=args.device, dtype=args.dtype, max_params=args.max_params,
            progress=_say_conversion,
        )  # fmt: skip
        run = Decoder(pair, args.prompt, config, chat=args.chat).run()
    except SpecvizError as exc:
        print(f"specviz: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(run.to_json(indent=1))
    else:
        m = run.metrics
        print(f"[user] {run.prompt}\n[assistant] {run.text}" if run.chat else run.prompt_text + run.text)
        print(
            f"\n{m.steps} steps, mean acceptance length {m.mean_acceptance_length:.2f}, "
            f"draft acceptance rate {m.draft_acceptance_rate or 0:.2f}, α {m.alpha or 0:.2f}"
        )
    return 0
