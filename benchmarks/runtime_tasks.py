"""What the faster runtime changes for a user: the app's own long tasks timed on each runtime.

For torch (eager, one thread, as the app runs it), torch on per-shape kernels and llama.cpp (in
process), the faster two with the draft's lean forward, each in a fresh interpreter, wall clock of:
- the τ sweep at the page's defaults (two prompts, τ 1–8, 48 tokens, one seed, textbook);
- Run to end on Decode's defaults (its first prompt, τ = 4, textbook);
- the Lossless page's real-model check at its defaults (200 first steps per mode, three modes);
- every lesson's live run, one after another.
Usage: python -m benchmarks.runtime_tasks
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import date

RUNTIMES = ("torch", "torch-kernels", "llama.cpp")


def measure(runtime: str) -> dict[str, float]:
    import specviz
    from specviz.analysis.lossless import first_tokens, reference
    from specviz.analysis.sweep import Sweep, SweepSettings
    from specviz.classroom.lessons import LESSONS
    from specviz.classroom.settings import SETTINGS

    pairs: dict[tuple[str, str, str], specviz.ModelPair] = {}

    default = runtime

    def load(target: str, draft: str, runtime: str | None = None) -> specviz.ModelPair:
        key = (target, draft, runtime or default)
        if key not in pairs:
            pairs[key] = specviz.load_pair(target, draft, runtime=key[2])
        return pairs[key]

    pair = load("embedded", "embedded")
    out = {}
    start = time.perf_counter()
    low, high = SETTINGS["sweep_taus"].default
    prompts = tuple(SETTINGS["sweep_prompts"].default.splitlines())
    sweep = Sweep(pair, SweepSettings(taus=tuple(range(low, high + 1)), prompts=prompts), {})
    for _ in sweep.advance():
        pass
    out["sweep (page defaults: 2 prompts, τ 1–8)"] = time.perf_counter() - start

    start = time.perf_counter()
    specviz.Decoder(pair, SETTINGS["decode_prompt"].default, specviz.SpecConfig()).run()
    out["Run to end (Decode defaults)"] = time.perf_counter() - start

    start = time.perf_counter()
    prompt = SETTINGS["lossless_prompt"].default
    for mode in specviz.MODES:
        config = specviz.SpecConfig(tau=SETTINGS["lossless_tau"].default, mode=mode)
        list(first_tokens(pair, prompt, config, SETTINGS["lossless_trials_real"].default))
        reference(pair, prompt, config)
    out["Lossless, real models (200 trials × 3 modes)"] = time.perf_counter() - start

    for name in ("early-exit:8", "self", "prompt-lookup"):  # loaded before the clock: as the app caches them
        load("embedded", name)
    load("embedded", "early-exit:8", runtime="torch")  # the roles-swapped lesson runs both sizes on torch
    start = time.perf_counter()
    for lesson in LESSONS:
        lesson.run(pair, load)
    out[f"all {len(LESSONS)} lessons"] = time.perf_counter() - start
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        import torch

        torch.set_num_threads(1)  # as app.py sets it
        print(json.dumps(measure(argv[1])))
        return 0
    results = {}
    for runtime in RUNTIMES:
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        cmd = [sys.executable, "-m", "benchmarks.runtime_tasks", "--child", runtime]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        results[runtime] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"The app's long tasks, {date.today()}, {os.cpu_count()} cores, seconds (wall clock), one run each")
    print("| task | torch (eager) | torch-kernels | llama.cpp |")
    print("|---|---|---|---|")
    for task, before in results["torch"].items():
        cells = [f"{results[r][task]:.1f} ({before / results[r][task]:.1f}×)" for r in RUNTIMES[1:]]
        print(f"| {task} | {before:.1f} | " + " | ".join(cells) + " |")
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
