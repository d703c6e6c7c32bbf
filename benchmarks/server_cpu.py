"""What the app server spends per user action, measured on the server, not in the browsers.

Starts `streamlit run app.py` on a loopback port, drives one headless Chromium page (1280×720) and
reads the server process's CPU time (utime + stime, /proc) around each action: opening the Decode
page (the pair already loaded), a Step (median and mean over `--steps` steps after the first),
Run to end (per emitted token), and a lesson run. The browser runs beside the server on this
machine, but its CPU is not counted and it runs at the lowest priority (`nice 19`), so that it takes
only what the server leaves: in a classroom it runs on the students' machines. (At equal priority its
drawing preempts the server's threads mid-step; llama.cpp's two threads then spin at their barriers
while one waits: 0.26 against 0.15 CPU-s per Step, one run, 2026-11-24.)

Each configuration runs in a server of its own: the torch runtime, llama.cpp with every core per
decode (the default) and llama.cpp with one thread (`SPECVIZ_LLAMA_THREADS=1`).

The implied class size is how many students one server holds when each clicks Step every 10 s:
cores × 10 s / CPU-s per Step.

Usage: python -m benchmarks.server_cpu [--steps 12] [--cores 2] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from datetime import date
from pathlib import Path
from urllib.parse import urlencode

from benchmarks.appserver import CHROMIUM_ARGS, IDLE, niced_chromium, serve
from benchmarks.sessions import PROMPT

TICK = os.sysconf("SC_CLK_TCK")
TOKENS = 48  # Run to end's length: a prompt with a long answer, so no early end of text
LINK = "{}/?" + urlencode({"decode_prompt": PROMPT, "decode_max_new": TOKENS})
CONFIGS = {  # name: the server's environment
    "torch": {"SPECVIZ_RUNTIME": "torch"},
    "llama.cpp, every core": {"SPECVIZ_RUNTIME": "llama.cpp"},
    "llama.cpp, 1 thread": {"SPECVIZ_RUNTIME": "llama.cpp", "SPECVIZ_LLAMA_THREADS": "1"},
}


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process and its threads so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def settle(page) -> None:
    page.wait_for_timeout(300)
    page.locator(IDLE).wait_for(timeout=300_000)


def measure(url: str, pid: int, steps: int, chromium: str) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    out: dict[str, float] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(LINK.format(url))  # loads the pair (once per process): not counted as a page open
        page.get_by_text("Press Step").wait_for(timeout=300_000)
        settle(page)
        opened = browser.new_page(viewport={"width": 1280, "height": 720})
        before = cpu_seconds(pid)
        opened.goto(LINK.format(url))
        opened.get_by_text("Press Step").wait_for(timeout=300_000)
        settle(opened)
        out["page open"] = cpu_seconds(pid) - before
        opened.close()
        step = page.get_by_role("button", name="Step", exact=True)
        costs = []
        for k in range(1, steps + 2):
            before = cpu_seconds(pid)
            step.click()
            page.get_by_text(f"Step {k}:").first.wait_for(timeout=300_000)
            settle(page)
            costs.append(cpu_seconds(pid) - before)
        out["first Step"] = costs[0]
        out["Step (median)"] = statistics.median(costs[1:])
        out["Step (mean)"] = statistics.mean(costs[1:])
        page.get_by_role("button", name="Reset", exact=True).click()
        settle(page)
        before = cpu_seconds(pid)
        page.get_by_role("button", name="Run to end").click()
        page.get_by_text("Step shown (text").wait_for(timeout=600_000)
        settle(page)
        out[f"Run to end ({TOKENS} tokens), per token"] = (cpu_seconds(pid) - before) / TOKENS
        lesson = browser.new_page(viewport={"width": 1280, "height": 720})
        lesson.goto(f"{url}/lessons?lessons_lesson=next-token")
        lesson.get_by_role("button", name="Run it").wait_for(timeout=300_000)
        settle(lesson)
        before = cpu_seconds(pid)
        lesson.get_by_role("button", name="Run it").click()
        lesson.get_by_text("What the run showed").wait_for(timeout=300_000)
        settle(lesson)
        out["lesson run (next-token)"] = cpu_seconds(pid) - before
        browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--only", nargs="*", default=None, choices=list(CONFIGS), help="configurations to run")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        chromium = niced_chromium(Path(folder))
        for name, env in CONFIGS.items():
            if args.only is not None and name not in args.only:
                continue
            procs: list = []
            with serve(Path(f"/tmp/specviz-server-cpu-{len(results)}.log"), env=env, procs=procs) as url:
                results[name] = measure(url, procs[0].pid, args.steps, chromium)
    cpu = platform.processor() or platform.machine()
    print(f"Server CPU per action, one client, {date.today()}, {os.cpu_count()} cores ({cpu}); {args.steps} Steps")
    print("| action | " + " | ".join(results) + " |")
    print("|---|" + "---|" * len(results))
    for action in next(iter(results.values())):
        print(f"| {action} | " + " | ".join(f"{r[action]:.3f}" for r in results.values()) + " |")
    classes = " | ".join(f"{args.cores * 10 / r['Step (mean)']:.0f}" for r in results.values())
    print(f"| implied class at one Step per 10 s per student, {args.cores} cores | {classes} |")
    print(f"({time.perf_counter() - started:.0f} s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
