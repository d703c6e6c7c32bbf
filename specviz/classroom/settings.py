"""Every page setting in one registry: its key, default, allowed values and whether a shared link
carries it. Widgets take their ranges from here, app.py keeps every registered key across pages
(Streamlit forgets a widget's value on pages that do not draw it), and links read and write only
registered keys, checked against the same allowed values. Pure Python: no Streamlit.

Defaults of the decoding settings come from `SpecConfig` itself, so the pages never restate them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from specviz.analysis import engine_advice, engine_flags, outlook
from specviz.analysis.costmodel import CONTEXT, HARDWARE
from specviz.analysis.draft_sweep import GRADED as DRAFT_GRADES
from specviz.analysis.race import PRESETS as RACES
from specviz.analysis.race import YOURS
from specviz.class_policy import ClassPolicy
from specviz.classroom import links
from specviz.classroom.lessons import LESSONS
from specviz.classroom.quiz import KINDS
from specviz.classroom.sandbox import CUSTOM as SANDBOX_CUSTOM
from specviz.classroom.sandbox import MAX_TAU as SANDBOX_TAU
from specviz.classroom.sandbox import PRESETS as EXERCISES
from specviz.core.config import MODES, TAU_POLICIES, SpecConfig
from specviz.core.rules import RULES
from specviz.loading import AUTO, EMBEDDED, KERNELS, PRESETS, RUNTIMES, resolve_runtime
from specviz.models import llamacpp

CUSTOM = "Custom: hub id, folder or server"
ON_THIS_COMPUTER = "Models on this computer (GGUF)"
RENAMED = {  # older menu labels that links may still carry
    "Custom: hub id or local folder": CUSTOM,
    "Prompt lookup: repeat a text with its spelling fixed": RACES[0].label,
}
PAIRS = (*(p.label for p in PRESETS), ON_THIS_COMPUTER, CUSTOM)
LOSSLESS_SOURCES = ("Hand-made tables", "Real models (first step)")
_SPEC = {f.name: f.default for f in dataclasses.fields(SpecConfig)}
# The first page's prompt (chat template on): the embedded pair accepts about 3.5 tokens per step on
# it at the page's defaults, in textbook and greedy mode alike, without a repetition loop (measured:
# tests/test_embedded.py). "The cat sat on the" accepted 1.4 in greedy mode and looped in textbook.
FIRST_PROMPT = "Write a Python function that reverses a list."


# What the decoding widgets mean, one line each (their help texts on every page that draws them)
POLICY_HELP = (
    "fixed: τ every step.  heuristic: start at τ, +2 after a fully accepted step, −1 after a rejection (as "
    "assisted generation does).  confidence: at most τ, stop drafting when q's top probability falls below the "
    "threshold.  Each step's τ is in its trace."
)
TREE_HELP = {  # SGLang's names (--speculative-eagle-topk, --speculative-num-steps, --speculative-num-draft-tokens)
    "topk": "children per expanded node: how many alternatives the draft offers at each branch",
    "steps": "levels drafted: the deepest path, so a step emits at most steps + 1 tokens",
    "num_draft_tokens": "nodes the target verifies in its one pass: the tree's budget (the best-scored nodes are kept)",
}
BROKEN_HELP = "Each draft token is predicted from the confirmed text alone, not the earlier draft tokens of its step."
RULE_HELP = (
    'How lossless mode verifies (docs/algorithm.md, "Verification as serving engines run it").  token: r ≤ p/q, '
    "then norm(max(0, p − q)) (Leviathan et al.).  one-hot: r ≤ p(ŷ), then p without the rejected token, as vLLM "
    "and SGLang verify EAGLE, MTP and n-gram drafts.  block: thresholds h from the whole draft; n is the last "
    "position whose r ≤ h (Sun et al.; vLLM's block method).  LOSSY (faster, and the output is no longer the "
    "target's; the page shows by exactly how much): typical: p(ŷ) > min(ε, δ·exp(−H)), else argmax p (Medusa, vLLM "
    "V0).  sglang: r ≤ p(ŷ)/t_a or p(ŷ) ≥ t_s, else p without ŷ (SGLang's accept thresholds).  ensemble: token-wise "
    "against w·p + (1 − w)·q (transformers' assistant_ensemble_weight)."
)
RULE_LABELS = {  # each rule as a picker names it; the lossy ones say so
    "token": "token",
    "one-hot": "one-hot",
    "block": "block",
    "typical": "typical acceptance (lossy)",
    "sglang": "SGLang thresholds (lossy)",
    "ensemble": "static ensemble (lossy)",
}
# each lossy rule's settings: (label, SpecConfig field, help), named as its engine names them
KNOBS = {
    "typical": (
        ("Posterior threshold ε", "posterior_threshold", "vLLM V0's posterior_threshold (default 0.09)"),
        ("Posterior alpha δ", "posterior_alpha", "vLLM V0's posterior_alpha (default 0.3)"),
    ),
    "sglang": (
        ("Accept threshold single t_s", "threshold_single", "SGLang's --speculative-accept-threshold-single (1.0)"),
        ("Accept threshold acc t_a", "threshold_acc", "SGLang's --speculative-accept-threshold-acc (1.0, lossless)"),
    ),
    "ensemble": (("Ensemble weight w (the target's)", "ensemble_weight", "transformers' assistant_ensemble_weight"),),
}
MODE_HELP = (
    "textbook: greedy draft, accept if r ≤ p/q, else argmax p.  "
    "lossless: sampled draft, resample from norm(max(0, p − q)); output follows p exactly.  "
    "greedy: accept while the draft equals argmax p; output equals the target's greedy decoding."
)


RUNTIME_HELP = (
    "What runs the target. llama.cpp: in process, float32, at about the memory-bandwidth floor of this CPU "
    "(the embedded target and GGUF files; `make llama` installs it). torch-kernels: transformers with each product "
    "on the kernel timed fastest here for its shape and row count (oneDNN prepacked for several rows: a pass over "
    "five tokens costs about one over a single token). torch: transformers, eager, the reference. Both faster "
    "runtimes agree with torch's p within 1e-4. auto: llama.cpp where it is installed, else torch-kernels, for "
    "the embedded target; a GGUF file always runs on llama.cpp; torch for any other. The draft runs on torch (a lean "
    "forward beside the faster runtimes), a GGUF draft on llama.cpp. Both sides of every comparison run on the same "
    "runtime."
)


def runtime_line(choice: str, default: str = AUTO, threads: int | None = None) -> str:
    """In words, what runs the embedded target under `choice` (`default`: what "auto" means on this server; `threads`:
    its llama.cpp threads) and how to get the faster runtime (Markdown); raises ModelError where it cannot run."""
    runs = resolve_runtime(EMBEDDED, choice, default=default)
    if runs == llamacpp.RUNTIME:
        threads = threads or llamacpp.default_threads()
        return (
            f"The embedded target runs on **llama.cpp** (float32, in process, {threads} "
            f"thread{'s' if threads > 1 else ''}; `SPECVIZ_LLAMA_THREADS` sets it): the fastest here. "
            "Speculation pays most on **torch-kernels**, where a pass over five tokens costs about one over "
            "a single token, as on a GPU."
        )
    faster = (
        " A GGUF file runs on llama.cpp whatever this says."
        if llamacpp.available()
        else f" For the faster llama.cpp runtime, {llamacpp.INSTALL_HINT}."
    )
    if runs == KERNELS:
        return (
            "The target runs on **torch with per-shape kernels**: a pass over several tokens costs about one "
            "over a single token." + faster
        )
    return "The target runs on **torch** (eager): the reference, slower than the other runtimes." + faster


def gguf_target_line(name: str, threads: int | None = None) -> str:
    """In words, what runs a GGUF file of the user's as the target (`name`: as the pages name it): llama.cpp, whatever
    the runtime chosen, the file at its own quantization (Markdown; the name is markdown-escaped by the caller)."""
    threads = threads or llamacpp.default_threads()
    return (
        f"The target, **{name}**, runs on **llama.cpp** (a GGUF file at its own quantization, in process, {threads} "
        f"thread{'s' if threads > 1 else ''}; `SPECVIZ_LLAMA_THREADS` sets it), whatever the runtime above says: "
        "the runtime chooses for the embedded target and hub models."
    )


@dataclass(frozen=True)
class Setting:
    key: str
    default: Any
    allowed: tuple | None = None  # (lo, hi) for numbers and ranges, or the allowed strings
    link: bool = True  # goes into shared links


def _decoding(page: str, **overrides: Any) -> list[Setting]:
    """The SpecConfig fields a page exposes, defaults from SpecConfig unless overridden."""
    d = {**_SPEC, **overrides}
    return [
        Setting(f"{page}_mode", d["mode"], MODES),
        Setting(f"{page}_temperature", d["temperature"], (0.0, 2.0)),
        Setting(f"{page}_top_k", d["top_k"], (0, 100_000)),
        Setting(f"{page}_top_p", d["top_p"], (0.05, 1.0)),
    ]


def _knobs(page: str) -> list[Setting]:
    """The lossy rules' settings a page exposes (docs/algorithm.md, "Lossy rules"), defaults from SpecConfig."""
    return [
        Setting(f"{page}_{field}", _SPEC[field], (0.01 if field == "threshold_acc" else 0.0, 1.0))
        for knobs in KNOBS.values()
        for _, field, _ in knobs
    ]


def _pair(page: str) -> list[Setting]:
    return [
        Setting(f"{page}_preset", PRESETS[0].label, PAIRS),
        Setting(f"{page}_target", "embedded"),
        Setting(f"{page}_draft", "embedded"),
        Setting(f"{page}_local_target", ""),  # "Models on this computer": a found GGUF file (its spec)
        Setting(f"{page}_local_draft", ""),
    ]


SETTINGS: dict[str, Setting] = {
    s.key: s
    for s in [
        Setting("runtime", RUNTIMES[0], RUNTIMES, link=False),  # the server's machine decides what can run
        *_pair("decode"),
        Setting("decode_prompt", FIRST_PROMPT),
        Setting("decode_chat", True),
        Setting("decode_tau", _SPEC["tau"], (1, 16)),
        *_decoding("decode"),
        Setting("decode_rule", RULES[0], RULES),  # lossless mode's verification rule (the lossy ones too)
        *_knobs("decode"),
        Setting("decode_seed", _SPEC["seed"], (0, 2**31 - 1)),
        Setting("decode_max_new", _SPEC["max_new_tokens"], (1, 1024)),
        Setting("decode_policy", _SPEC["tau_policy"], TAU_POLICIES),
        Setting("decode_threshold", _SPEC["confidence"], (0.05, 0.95)),
        Setting("decode_broken", _SPEC["broken_draft"]),
        Setting("decode_tree", False),  # token trees (docs/algorithm.md, "Token trees"): SGLang's three knobs below
        Setting("decode_tree_topk", 3, (1, 10)),
        Setting("decode_tree_steps", 4, (1, 8)),
        Setting("decode_tree_nodes", 8, (1, 64)),
        Setting("decode_present", False),
        Setting("decode_figures", False),  # q, p and r written under each draft token of the marked text
        Setting("decode_typed", ""),  # "Your draft": the words the next Step proposes (specviz.drafts.typed)
        Setting("decode_drafts", ""),  # link only: the run's typed drafts, {"step": "words"} (pages/_decode/typed.py)
        Setting("decode_quiz", False),
        Setting("decode_quiz_kind", "predict", tuple(KINDS)),
        Setting("decode_steps", 0, (0, 10_000)),  # link only: steps to take on opening
        Setting("decode_log_every", 0, (0, 1000)),  # steps per vLLM log interval in the engines' log (0: the run)
        *_pair("sweep"),
        Setting("sweep_prompts", "The cat sat on the\nWrite a Python function that reverses a list."),
        Setting("sweep_chat", True),
        *_decoding("sweep", mode="greedy"),
        Setting("sweep_rule", RULES[0], RULES),  # lossless mode's verification rule (the lossy ones too)
        *_knobs("sweep"),
        Setting("sweep_taus", (1, 8), (1, 16)),
        Setting("sweep_max_new", 48, (4, 512)),
        Setting("sweep_seeds", 1, (1, 10)),
        Setting("sweep_heuristic", False),
        Setting("sweep_confidence", False),
        Setting("sweep_policy_tau", 4, (1, 16)),
        Setting("sweep_threshold", _SPEC["confidence"], (0.05, 0.95)),
        Setting("sweep_drafts", list(DRAFT_GRADES)[:4], link=False),  # the sweep across drafts' drafts
        Setting("sweep_present", False),
        Setting("pay_hardware", "NVIDIA H100 SXM", (outlook.HERE, *HARDWARE)),
        Setting("pay_pair", "Llama-3.1-70B + Llama-3.2-1B", (*outlook.PAIRS, outlook.YOUR_PAIR)),
        Setting("pay_batch", 1, (1, 512)),
        Setting("pay_context", CONTEXT, (128, 131_072)),
        Setting("pay_source", outlook.SOURCES[0], outlook.SOURCES),
        Setting("pay_alpha", 0.7, (0.0, 1.0)),
        Setting("pay_present", False),
        Setting("pay_import_text", "", link=False),  # an engine's pasted numbers: too long for a link, and private
        Setting("pay_import_tau", 4, (1, 16)),  # the τ the engine ran at, where its numbers do not say
        Setting("pay_import_tree", False),  # SGLang ran a tree: its depth is typed, not nodes − 1
        Setting("pay_import_hw", engine_advice.HARDWARE_CHOICES[0], engine_advice.HARDWARE_CHOICES),
        Setting("pay_import_t1", 6.32, (0.001, 100_000.0)),  # ms; SGLang's Llama-3.1-8B on an H100 (158.34 tok/s)
        Setting("pay_import_tk", 6.32, (0.001, 100_000.0)),  # ms, a pass over k tokens
        Setting("pay_import_k", 4, (2, 65_536)),
        Setting("pay_import_extrapolate", False),  # τ beyond what the engine ran allowed
        Setting("pay_import_method", engine_advice.METHODS[0], engine_advice.METHODS),
        Setting("pay_import_sampling", engine_flags.SAMPLINGS[0], engine_flags.SAMPLINGS),  # the draft's sampling
        Setting("pay_import_model", "", link=False),  # the draft, as the user names it (path or name)
        Setting("pay_import_target", "", link=False),  # the target, as the user names it (path or name)
        Setting("pay_import_build", 0, (0, 100_000)),  # llama.cpp's build for its flags' spelling; 0: the log's, or now
        Setting("pay_import_source", 0, (0, 63), link=False),  # which source of a paste that holds several
        Setting("sandbox_preset", next(iter(EXERCISES)), (*EXERCISES, SANDBOX_CUSTOM)),
        Setting("sandbox_context", ""),  # the confirmed text before the draft, shown as the book writes it
        Setting("sandbox_present", False),
        Setting("sandbox_mode", "textbook", MODES),
        Setting("sandbox_tau", 1, (1, SANDBOX_TAU)),
        Setting("sandbox_seed", 0, (0, 10_000)),
        Setting("sandbox_rule", RULES[0], RULES),  # lossless mode's verification rule (the lossy ones too)
        *_knobs("sandbox"),
        *(Setting(f"sandbox_r{t}", 0.5, (0.0, 0.999)) for t in range(SANDBOX_TAU)),
        *(Setting(f"sandbox_u{t}", 0.5, (0.0, 0.999)) for t in range(SANDBOX_TAU)),  # lossless: the draft's draws
        Setting("sandbox_s", 0.5, (0.0, 0.999)),  # lossless: the next token's draw
        Setting("sandbox_table", ""),  # link only: the exercise's table as JSON columns
        Setting("lossless_source", LOSSLESS_SOURCES[0], LOSSLESS_SOURCES),
        Setting("lossless_tau", 2, (1, 8)),
        Setting("lossless_temperature", 1.0, (0.05, 2.0)),
        Setting("lossless_trials", 20_000, (100, 50_000)),
        Setting("lossless_table", ""),  # link only: the hand-made table as JSON columns
        *_pair("lossless"),
        Setting("lossless_prompt", "The cat sat on the"),
        Setting("lossless_trials_real", 200, (10, 1000)),
        Setting("lossless_present", False),
        Setting("race_preset", RACES[0].label, (*(r.label for r in RACES), YOURS)),
        Setting("race_max_new", 48, (8, 256)),
        Setting("race_present", False),
        Setting("lessons_lesson", LESSONS[0].key, tuple(lesson.key for lesson in LESSONS)),
        Setting("lessons_present", False),
    ]
}
LINK_ONLY = ("decode_steps", "decode_drafts", "sandbox_table", "lossless_table")  # read from links, never widgets


# the settings a class server caps (specviz.class_policy): key → the class budget that is its largest value
CLASS_CAPS = {
    "decode_max_new": "max_new_tokens",
    "sweep_max_new": "max_new_tokens",
    "race_max_new": "max_new_tokens",
    "lossless_trials": "lossless_trials",
    "lossless_trials_real": "lossless_trials",
}
PROMPTS = ("decode_prompt", "sweep_prompts", "lossless_prompt")  # free text a class server bounds in length


def defaults(keys: Iterable[str] | None = None, class_policy: ClassPolicy | None = None) -> dict[str, Any]:
    """Key → default of the widget settings (without the link-only keys); in class mode (`class_policy`, the
    server's, handed in) within its caps."""
    bounds = allowed(class_policy)
    values = {k: SETTINGS[k].default for k in (keys or SETTINGS) if k not in LINK_ONLY}
    return {k: min(v, bounds[k][1]) if k in CLASS_CAPS else v for k, v in values.items()}


def allowed(class_policy: ClassPolicy | None = None) -> dict[str, tuple]:
    """Key → allowed values, for every setting that has them; in class mode, its budgets cap some of them."""
    values = {k: s.allowed for k, s in SETTINGS.items() if s.allowed is not None}
    if class_policy is not None and class_policy.on:
        for key, budget in CLASS_CAPS.items():
            lo, hi = values[key]
            values[key] = (lo, max(lo, min(hi, getattr(class_policy, budget))))
    return values


def prompt_chars(class_policy: ClassPolicy | None = None) -> int | None:
    """The longest prompt a student may type (class mode), else None."""
    return class_policy.prompt_chars if class_policy is not None and class_policy.on else None


def limits(key: str) -> tuple:
    """A numeric widget's (min, max)."""
    lo, hi = SETTINGS[key].allowed
    return lo, hi


def from_link(params: Mapping[str, str], class_policy: ClassPolicy | None = None) -> tuple[dict[str, Any], list[str]]:
    """(settings a link's query parameters set, one message per parameter that could not be used);
    a pair menu label that was renamed is read as its new name; in class mode a prompt longer than the
    class allows is not used."""
    params = {k: RENAMED.get(v, v) if k.endswith("_preset") else v for k, v in params.items()}
    values, problems = links.decode(params, linkable(), allowed(class_policy))
    if (most := prompt_chars(class_policy)) is not None:
        for key in PROMPTS:
            if len(values.get(key, "")) > most:
                problems.append(
                    f"ignored {key} from the link: {len(values.pop(key)):,} characters, the class allows {most:,}"
                )
    return values, problems


def linkable() -> dict[str, Any]:
    """Key → default of everything a link may set."""
    return {k: s.default for k, s in SETTINGS.items() if s.link}


def for_link(prefix: str, values: dict[str, Any]) -> dict[str, Any]:
    """The values of page `prefix` that go into its link."""
    return {k: v for k, v in values.items() if k.startswith(f"{prefix}_") and k in SETTINGS and SETTINGS[k].link}


# One click from the textbook's setting to what a class should see on the embedded pair (docs/app.md, Decode):
TYPED_EXERCISE = {  # the textbook's exercise 1: the sentence as a completion, its draft typed for the next Step
    "decode_prompt": "The cat sat on the",
    "decode_chat": False,
    "decode_mode": "textbook",
    "decode_temperature": 1.0,
    "decode_top_k": 0,
    "decode_top_p": 1.0,
    "decode_tree": False,
    "decode_broken": False,
    "decode_typed": "mat and then slept",
}
# live text that reads well: the bare sentence with lossless sampling at T = 1 wrote junk ('The cat sat on the
# "Other", opposite. For example the'), and with the chat template a chat model answers it as a question; asked for
# a story at T = 0.7 it writes one, on each of seeds 0 to 4 (docs/app.md, Decode)
TYPED_STORY = {
    "decode_prompt": "Continue the story: The cat sat on the",
    "decode_chat": True,
    "decode_mode": "lossless",
    "decode_temperature": 0.7,
    "decode_top_k": 0,
    "decode_top_p": 1.0,
    "decode_tree": False,
    "decode_broken": False,
}
