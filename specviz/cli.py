"""Command line.

`python -m specviz --prompt "..." --tau 4 --json` prints a run trace as JSON;
`python -m specviz sweep --taus 1-8 --prompt "..." --prompt "..." --json` prints a τ sweep: what was counted whatever
the machine's load, its times where they were undisturbed, and its speeds from the counted work at the pair's
calibration kept on this machine (measured first where none is kept, and the machine is quiet enough). `--help`
names both and every form a model is written in (SPEC_FORMS)."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Sequence

from specviz.analysis.measure import MeasurementError
from specviz.analysis.pairtimes import PairTimings, TimingBook
from specviz.analysis.sweep import Sweep, SweepSettings
from specviz.core.config import MODES, SpecConfig
from specviz.core.engine import Decoder
from specviz.drafts import kinds
from specviz.errors import ConfigError, PromptError, SpecvizError
from specviz.loading import load_pair
from specviz.models import embedded
from specviz.models.pair import ModelPair
from specviz.server.config import ServerConfig

SPEC_FORMS = """\
commands:
  python -m specviz --prompt TEXT ...        one run, its trace (--json) or its text and metrics
  python -m specviz sweep --prompt TEXT ...  a τ sweep: acceptance length and speedup against τ
                                             (python -m specviz sweep --help)

models (--target, --draft):
  embedded                   SmolLM2-135M-Instruct shipped with specviz (as a draft: its distilled draft)
  PATH.gguf                  a GGUF file on llama.cpp; a file of any other name that begins with
                             GGUF's magic bytes too (an Ollama blob ~/.ollama/models/blobs/sha256-HEX,
                             a GGUF named .bin)
  ollama:NAME[:TAG]          an Ollama model's GGUF
  hf:ORG/REPO:Q4_K_M         a GGUF file on the hub (or hf:ORG/REPO:FILE.gguf)
  ORG/NAME or FOLDER         a transformers model: a hub id or a local folder
  vllm:http://HOST:8000/v1#MODEL, sglang:http://HOST:30000, llamacpp:http://HOST:8000/v1
                             a served target
  drafts only (one of each kind, specviz.drafts.kinds):
"""


def spec_forms() -> str:
    """SPEC_FORMS, then every registered draft kind as it is written (a kind added later is listed too)."""
    lines = textwrap.wrap(
        kinds.hints(), width=96, initial_indent=" " * 4, subsequent_indent=" " * 4, break_on_hyphens=False
    )
    return SPEC_FORMS + "\n".join(lines) + "\n"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit code 2
        self.exit(2, f"specviz: error: {message}\n")


def _add_common(parser: argparse.ArgumentParser) -> None:
    """Models, prompt options and sampling settings: the same for a run and a sweep."""
    parser.add_argument(
        "--target",
        default="embedded",
        help="target: 'embedded' (default), a hub id, a transformers model's folder, a GGUF file run on llama.cpp "
        "(PATH.gguf or any file that begins with GGUF's magic, ollama:NAME[:TAG], hf:ORG/REPO:Q4_K_M), or a serving "
        "engine: "
        "vllm:http://HOST:8000/v1#MODEL, sglang:http://HOST:30000, llamacpp:http://HOST:8000/v1",
    )
    parser.add_argument(
        "--draft",
        default="embedded",
        help="draft: 'embedded' (default), a hub id, a folder, a GGUF file of the target's vocabulary (PATH.gguf, "
        f"ollama:NAME[:TAG], hf:ORG/REPO:Q4_K_M), or one of the draft kinds: {kinds.hints()}",
    )
    parser.add_argument(
        "--chat",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="wrap the prompt in the chat template (default: on for Instruct models, and for a GGUF file with a chat "
        "template unless its metadata calls it a base model)",
    )
    parser.add_argument("--device", default="auto", help="auto (default), cpu or cuda")
    parser.add_argument("--dtype", default="auto", help="auto (default), float32, float16 or bfloat16")
    parser.add_argument("--max-params", type=int, default=None, help="refuse larger models (parameters)")
    parser.add_argument("--mode", choices=MODES, default=SpecConfig.mode)  # defaults: SpecConfig's own
    parser.add_argument("--temperature", type=float, default=SpecConfig.temperature)
    parser.add_argument("--top-k", type=int, default=SpecConfig.top_k)
    parser.add_argument("--top-p", type=float, default=SpecConfig.top_p)
    parser.add_argument("--json", action="store_true", help="print the result as one JSON document")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m specviz",
        description="Run speculative decoding and print the trace; `python -m specviz sweep` measures a τ sweep.",
        epilog=spec_forms(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--prompt", required=True, help="text to continue")
    parser.add_argument("--tau", type=int, default=SpecConfig.tau, help="draft tokens per step (default %(default)s)")
    parser.add_argument("--seed", type=int, default=SpecConfig.seed)
    parser.add_argument("--max-new-tokens", type=int, default=SpecConfig.max_new_tokens)
    _add_common(parser)
    return parser


def parse_taus(text: str) -> tuple[int, ...]:
    """'1-8' → 1..8; '1,2,4' → (1, 2, 4); '1-4,8' → (1, 2, 3, 4, 8)."""
    taus: list[int] = []
    try:
        for part in text.replace(" ", "").split(","):
            lo, _, hi = part.partition("-")
            taus.extend(range(int(lo), int(hi or lo) + 1))
    except ValueError as exc:
        raise ConfigError(f"write τ values like 1-8 or 1,2,4; got {text!r}") from exc
    if not taus:
        raise ConfigError(f"no τ values in {text!r}")
    return tuple(sorted(set(taus)))


def build_sweep_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m specviz sweep",
        description="Measure acceptance length and speedup against τ.",
        epilog=spec_forms(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--taus", default="1-8", help="τ values: 1-8, or 1,2,4 (default 1-8)")
    parser.add_argument("--prompt", action="append", required=True, help="a prompt; repeat for several")
    parser.add_argument("--seeds", type=int, default=1, help="runs per τ and prompt, seeds 0..N-1 (default 1)")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument(
        "--measure-again",
        action="store_true",
        help="time the pair's passes anew (a quiet minute) and keep them in place of the calibration kept before",
    )
    _add_common(parser)
    return parser


def _quiet_transformers() -> None:
    # stderr carries only our one-line errors; stdout only the result
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()


def _say_conversion(message: str) -> None:
    if "GGUF" in message or "rebuilding" in message:  # the one slow first-time step
        print(f"specviz: {message}", file=sys.stderr)


def _server() -> ServerConfig:
    return ServerConfig.from_environ(os.environ)


def _pair(args: argparse.Namespace) -> ModelPair:
    """The pair, as this machine's environment sets it up (SPECVIZ_RUNTIME, SPECVIZ_MAX_PARAMS, SPECVIZ_LLAMA_*, …:
    read here, at the top, by specviz.server.config, and handed down)."""
    _quiet_transformers()
    server = _server()
    embedded.use_cache(server.cache_dir)
    return load_pair(
        args.target,
        args.draft,
        device=args.device,
        dtype=args.dtype,
        max_params=args.max_params,
        progress=_say_conversion,
        settings=server.load_settings(),
    )


def _run(args: argparse.Namespace) -> None:
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
    run = Decoder(_pair(args), args.prompt, config, chat=args.chat).run()
    if args.json:
        print(run.to_json(indent=1))
        return
    m = run.metrics
    print(f"[user] {run.prompt}\n[assistant] {run.text}" if run.chat else run.prompt_text + run.text)
    print(
        f"\n{m.steps} steps, mean acceptance length {m.mean_acceptance_length:.2f}, "
        f"draft acceptance rate {m.draft_acceptance_rate or 0:.2f}, α {m.alpha or 0:.2f}"
    )


def _sweep(args: argparse.Namespace) -> None:
    if args.seeds < 1:
        raise PromptError("--seeds must be at least 1")
    settings = SweepSettings(
        taus=parse_taus(args.taus),
        prompts=tuple(args.prompt),
        seeds=tuple(range(args.seeds)),
        mode=args.mode,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        max_new_tokens=args.max_new_tokens,
        chat=args.chat,
    )
    pair = _pair(args)
    timings = _calibration(pair, args.measure_again)
    sweep = Sweep(pair, settings, timings=timings)
    for done, total, unit in sweep.advance():
        print(f"specviz: {done}/{total} τ = {unit.tau}, prompt {unit.prompt_index + 1}", file=sys.stderr)
    result = sweep.result()
    if args.json:
        print(result.to_json(indent=1))
        return
    print(result.to_frame().to_string(index=False))
    print(result.verdict())


def _calibration(pair: ModelPair, again: bool) -> PairTimings | None:
    """The pair's calibration kept on this machine (SPECVIZ_TIMINGS_DIR, else the cache's `timings`), said on stderr
    with when and where it was measured; measured now where none is kept (or `again`), kept where the machine was
    quiet; None, said, where it cannot be had now (a busy machine)."""
    book = TimingBook(_server().timings_dir)
    kept = None if again else book.get(pair)
    if kept is None:
        print("specviz: timing the pair's passes (a pass over 1 to 16 tokens and a draft forward)", file=sys.stderr)
        try:
            measured = book.measure(pair)
        except MeasurementError as exc:
            print(f"specviz: no calibration kept: {exc}", file=sys.stderr)
            return book.get(pair)
        if not measured.quiet:
            print(f"specviz: not kept, {measured.where()}", file=sys.stderr)
        kept = book.get(pair)
    if kept is not None:
        print(f"specviz: speeds from counted work at {kept.label()}", file=sys.stderr)
    return kept


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    sweep = bool(argv) and argv[0] == "sweep"
    args = (build_sweep_parser() if sweep else build_parser()).parse_args(argv[1:] if sweep else argv)
    try:
        _sweep(args) if sweep else _run(args)
    except SpecvizError as exc:
        print(f"specviz: error: {exc}", file=sys.stderr)
        return 2
    return 0
