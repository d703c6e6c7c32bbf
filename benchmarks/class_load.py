"""A class on one server, measured with no browser: N simulated students at once, over Streamlit's own protocol.

Starts a real `streamlit run app.py` (class mode on, loopback only) and N students, each a websocket client that
speaks what the browser's frontend speaks (benchmarks.stclient: Streamlit's own protobuf messages, ForwardMsg
cache, widget states, deferred downloads). Each student opens the Decode page from a link with a seed of its own,
then, every `--think` seconds ± 30 %, presses Step, and now and then Back, Reset, Run to end, or opens the
lessons page and comes back. The benchmark process runs at the lowest CPU priority, so the server is what is
measured (in a classroom the browsers run on the students' machines).

Reported per class size: Step latency p50 / p95 / max (click → the end of the script run that answers it, as
the browser sees it), every action's, the server's CPU per Step (all its CPU in the window over the Steps
taken), its resident memory (peak), errors (exceptions or error boxes on a page, failed requests), and whether
every student's final trace (downloaded as the page's "Trace as JSON") equals the same run decoded alone in
this process (same models, runtime, torch thread count, prompt, settings and seed).

Beside the class, the lecturer's session (opened with the class's lecturer key, in presentation view) steps the same
way and is reported apart. The students share four prompts (a class opens the lecturer's links); `--own-prompts`
gives each one a prompt of its own, so that no run finds its prompt already decoded (specviz.models.llamapool).

Usage: python -m benchmarks.class_load [--students 80] [--minutes 3] [--sizes 1 10 20 40] [--think 10]
       [--sweepers K] [--own-prompts] [--no-lecturer] [--env KEY=VALUE ...] [--json FILE]
The smaller sizes run first, each for a minute (or `--minutes` if shorter); the last line is the largest's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from urllib.parse import urlencode

from benchmarks.appserver import serve
from benchmarks.server_cpu import cpu_seconds

PROMPTS = (
    "Write a long story about a robot who learns to paint.",
    "Explain how a rainbow forms, step by step.",
    "Write a Python function that reverses a list, then explain it.",
    "List ten facts about the ocean.",
)
MAX_NEW = 96  # a run long enough to step through for minutes, short enough to end and start again
ACTIONS = (("step", 0.84), ("back", 0.05), ("reset", 0.03), ("run", 0.03), ("lesson", 0.05))
STEP_KEY = {"step": "decode_step", "back": "decode_back", "reset": "decode_reset", "run": "decode_run_all"}


SWEEP_LINK = urlencode({"sweep_taus": "1-8", "sweep_seeds": 2, "sweep_max_new": 48})  # 16 runs: a class-mode sweep


LECTURER_KEY = "class-load-lecturer"  # the server's lecturer key in this benchmark (a settings file it writes)


@dataclass
class Student:
    index: int
    sweeps: bool = False  # first runs a τ sweep (a heavy job), then steps like the others
    lecturer: bool = False  # the lecturer's session: opened with the lecturer key, in presentation view
    own_prompt: bool = False  # a prompt no other student has (no run can copy another's prompt from the cache)
    latencies: dict[str, list[float]] = field(default_factory=dict)
    steps_at: list[tuple[float, float]] = field(default_factory=list)  # (clicked at, latency) of each Step
    errors: list[str] = field(default_factory=list)
    trace: str | None = None
    retries: int = 0  # downloads asked for again after a 404 (see `download`)
    opens_at: list[tuple[float, float]] = field(default_factory=list)  # (opened at, latency) of the page

    @property
    def link(self) -> str:
        lecturer = {"lecturer": LECTURER_KEY, "decode_present": "true"} if self.lecturer else {}
        return urlencode(
            {
                "decode_seed": self.index,
                "decode_prompt": PROMPTS[self.index % len(PROMPTS)] + (f" (student {self.index})" * self.own_prompt),
                "decode_max_new": MAX_NEW,
                **lecturer,
            }
        )


def page_errors(client) -> list[str]:
    return [f"{kind}: {message}" for kind, message in client.exceptions()] + list(client.errors())


async def act(client, student: Student, action: str, timeout: float) -> None:
    start = time.perf_counter()
    if action == "lesson":
        await client.switch_page("Lessons", timeout=timeout)
        await client.switch_page("Decode", timeout=timeout)
    else:
        await client.click(STEP_KEY[action], timeout=timeout)
    student.latencies.setdefault(action, []).append(time.perf_counter() - start)
    if action == "step":
        student.steps_at.append((start, time.perf_counter() - start))
    student.errors += page_errors(client)


async def download(client, student: Student, key: str, tries: int = 3) -> bytes:
    """The file behind a download button, asked for again (as a person clicks again) when the server answered 404:
    Streamlit deleted a deferred download's file at the second clean-up after it was made, and every session's
    script run that ends cleans up, so on a busy server the file could go before the browser's GET arrived (the app
    now keeps it a minute: pages/_serving/downloads.py). Each retry is counted (`download_retries`; 0 expected); a
    download that fails `tries` times is an error."""
    from benchmarks.stclient import StreamlitClientError

    for _ in range(tries - 1):
        try:
            return await client.download(key, timeout=600)
        except StreamlitClientError as exc:
            if "HTTP 404" not in str(exc):
                raise
            student.retries += 1
    return await client.download(key, timeout=600)


async def student_life(url: str, student: Student, until: float, think: float, seed: int) -> None:
    from benchmarks.stclient import StreamlitClient

    rng = random.Random(seed)
    actions, weights = zip(*ACTIONS, strict=True)
    client = StreamlitClient(url)
    try:
        await asyncio.sleep(rng.uniform(0, think))  # the class does not all arrive in the same second
        if student.sweeps:  # the sweep page from a link, Run, and back to Decode when it has finished
            await client.connect(query_string=SWEEP_LINK, page_name="sweep", timeout=600)
            start = time.perf_counter()
            await client.click("sweep_run", timeout=1800)
            student.latencies.setdefault("sweep", []).append(time.perf_counter() - start)
            student.errors += page_errors(client)
            await client.close()
            client = StreamlitClient(url)
        start = time.perf_counter()
        await client.connect(query_string=student.link, timeout=600)
        student.latencies.setdefault("open", []).append(time.perf_counter() - start)
        student.opens_at.append((start, time.perf_counter() - start))
        student.errors += page_errors(client)
        if student.lecturer and not client.contains("This is the lecturer's session"):
            student.errors.append("the lecturer's link did not open the lecturer's session")
        while time.perf_counter() < until:
            await asyncio.sleep(think * rng.uniform(0.7, 1.3))
            if time.perf_counter() >= until:
                break
            await act(client, student, rng.choices(actions, weights)[0], timeout=600)
        if not any(w.endswith("-decode_json") for w in client.widgets()):  # no step yet: take one
            await act(client, student, "step", timeout=600)
        student.trace = (await download(client, student, "decode_json")).decode()
    except Exception as exc:
        student.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        await client.close()


async def _class_of(url: str, students: list[Student], seconds: float, think: float) -> None:
    until = time.perf_counter() + seconds
    await asyncio.gather(*(student_life(url, s, until, think, 1000 + s.index) for s in students))


def class_of(url: str, students: list[Student], seconds: float, think: float) -> None:
    """The students' browsers, in a thread at the lowest CPU priority (Linux sets it per thread): they take only
    the CPU the server leaves, as if they ran on the students' own machines."""

    def run() -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        asyncio.run(_class_of(url, students, seconds, think))

    browsers = threading.Thread(target=run)
    browsers.start()
    browsers.join()


def solo_equal(traces: list[str | None], out: Path | None = None) -> list[bool]:
    """For each downloaded trace (None: none was downloaded), whether the same run reproduces it alone here, on the
    server's runtime, with the pair loaded once; each that differs is written to `out` beside the solo run's
    (served-K.json, alone-K.json)."""
    import torch

    import specviz
    from specviz.core.trace import RunTrace, check_run

    torch.set_num_threads(int(os.environ.get("SPECVIZ_TORCH_THREADS", "1")))  # the app's count: the same sums
    pair = specviz.load_pair("embedded", "embedded")
    equal = []
    for k, text in enumerate(traces):
        if text is None:
            equal.append(False)
            continue
        served = RunTrace.from_json(text)
        config = check_run(json.loads(text))
        alone = specviz.Decoder(pair, served.prompt, config, chat=served.chat, compare_rules=True)
        while len(alone.steps) < len(served.steps) and not alone.done:
            alone.step()
        equal.append(alone.trace().outcome() == served.outcome())
        if not equal[-1] and out is not None:
            (out / f"served-{k}.json").write_text(text)
            (out / f"alone-{k}.json").write_text(alone.trace().to_json(indent=1))
    return equal


def rss_peak(pid: int) -> float:
    """The process's peak resident memory so far, GB (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1e6
    return float("nan")


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-round(q * 100) * len(ordered) // 100) - 1)] if ordered else float("nan")


def class_env(out: Path) -> dict[str, str]:
    """The server's environment: class mode with its default budgets, and a lecturer key (in a settings file
    written to `out`) for the lecturer's session."""
    settings = out / "class.toml"
    settings.write_text(f'[class]\nlecturer_key = "{LECTURER_KEY}"\n')
    return {"SPECVIZ_CLASS_MODE": "1", "SPECVIZ_CLASS_SETTINGS": str(settings.resolve())}


def measure(
    n: int,
    seconds: float,
    think: float,
    env: dict[str, str],
    out: Path,
    sweepers: int = 0,
    lecturer: bool = True,
    own_prompts: bool = False,
) -> dict:
    """A class of `n` (the first `sweepers` run a sweep first) and, with `lecturer`, the lecturer's session beside it
    (presentation view, opened with the lecturer key: first in the server's queue), measured apart. The students
    share four prompts (a class opens the lecturer's links), or with `own_prompts` each has a prompt of its own."""
    procs: list = []
    with serve(out / f"server-{n}.log", env=env, procs=procs) as url:
        pid = procs[0].pid
        warm = [Student(10_000)]  # load the pair and compile the pages once, before the clock starts
        class_of(url, warm, 1.0, 0.5)
        students = [Student(i, sweeps=i < sweepers, own_prompt=own_prompts) for i in range(n)]
        teacher = [Student(n, lecturer=True)] if lecturer else []
        cpu0, t0 = cpu_seconds(pid), time.perf_counter()
        class_of(url, students + teacher, seconds, think)
        cpu, wall = cpu_seconds(pid) - cpu0, time.perf_counter() - t0
        rss = rss_peak(pid)
    steps = [t for s in students if not s.sweeps for t in s.latencies.get("step", [])]  # the class's, beside
    settled = [t for s in students if not s.sweeps for at, t in s.steps_at if at - t0 > 2 * think]  # all arrived
    every = [t for s in students for times in s.latencies.values() for t in times]
    same = solo_equal([s.trace for s in students + teacher], out)  # the class's, then the lecturer's
    errors = [e for s in students + teacher for e in s.errors]
    lecturer_steps = [t for s in teacher for t in s.latencies.get("step", [])]
    return {
        "students": n,
        "sweepers": sweepers,
        "sweep_seconds": [round(t, 1) for s in students for t in s.latencies.get("sweep", [])],
        "seconds": round(wall, 1),
        "steps": len(steps),
        "actions": dict(Counter(a for s in students for a, times in s.latencies.items() for _ in times)),
        "step_p50": statistics.median(steps) if steps else float("nan"),
        "step_p95": quantile(steps, 0.95),
        "step_max": max(steps, default=float("nan")),
        "settled_p95": quantile(settled, 0.95),
        "step_times": sorted(
            (round(at - t0, 2), round(t, 3)) for s in students if not s.sweeps for at, t in s.steps_at
        ),
        "open_times": sorted((round(at - t0, 2), round(t, 3)) for s in students for at, t in s.opens_at),
        "action_p95": quantile(every, 0.95),
        "cpu_per_step": cpu / max(len(steps), 1),
        "server_cpu_share": cpu / wall / (os.cpu_count() or 1),
        "rss_gb": rss,
        "errors": len(errors),
        "download_retries": sum(s.retries for s in students),
        "error_samples": errors[:5],
        "traces_equal": sum(same[:n]),
        "traces": sum(s.trace is not None for s in students),
        "lecturer_steps": len(lecturer_steps),
        "lecturer_p95": quantile(lecturer_steps, 0.95),
        "lecturer_max": max(lecturer_steps, default=float("nan")),
        "lecturer_trace_equal": bool(teacher) and same[-1],
    }


def line(r: dict) -> str:
    return (
        f"students {r['students']}: p95 {r['step_p95']:.1f} s, max {r['step_max']:.1f} s, errors {r['errors']}, "
        f"traces equal {r['traces_equal']}/{r['students']}, RSS {r['rss_gb']:.1f} GB, "
        f"server CPU per Step {r['cpu_per_step']:.2f} s"
    )


def chart(results: list[dict], path: Path) -> None:
    """Step latency (p50, p95, max) against the class size, as a PNG (seconds on a log scale: a class that holds
    and one that does not, on one chart)."""
    import plotly.graph_objects as go

    sizes = [r["students"] for r in results]
    fig = go.Figure(
        [
            go.Scatter(x=sizes, y=[r[key] for r in results], mode="lines+markers", name=name)
            for key, name in (("step_p50", "median"), ("step_p95", "p95"), ("step_max", "max"))
        ]
    )
    goal = {"dash": "dot", "color": "black"}  # a line, not add_hline: its label drifts on a log axis
    fig.add_scatter(x=[min(sizes), max(sizes)], y=[2.0, 2.0], mode="lines", line=goal, name="2 s: the goal")
    fig.update_layout(
        title="Step latency against class size (one 2-core server)",
        xaxis_title="students stepping at once (one Step per ~10 s each)",
        yaxis_title="seconds, click → page updated",
        yaxis={
            "type": "log",
            "tickvals": [0.1, 0.2, 0.5, 1, 2, 5, 10, 20],
            "ticktext": ["0.1", "0.2", "0.5", "1", "2", "5", "10", "20"],
        },
        width=900,
        height=480,
        font={"size": 16},
        template="plotly_white",  # not Streamlit's (imported with its protocol): its colours are placeholders
    )
    html = path.with_suffix(".html")
    fig.write_html(str(html), include_plotlyjs=True)
    from playwright.sync_api import sync_playwright

    from benchmarks.appserver import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as p:  # Debian's Chromium draws the PNG (no image export package needed)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 900, "height": 480})
        page.goto(html.resolve().as_uri())
        page.wait_for_timeout(500)
        page.screenshot(path=str(path))
        browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=80, help="the largest class")
    parser.add_argument("--minutes", type=float, default=3.0, help="how long the largest class steps")
    parser.add_argument("--sizes", type=int, nargs="*", default=[1, 10, 20, 40], help="the smaller classes first")
    parser.add_argument("--think", type=float, default=10.0, help="seconds between a student's clicks (± 30 %%)")
    parser.add_argument("--env", nargs="*", default=[], help="KEY=VALUE for the server (e.g. SPECVIZ_LLAMA_THREADS=1)")
    parser.add_argument("--sweepers", type=int, default=0, help="students who first run a τ sweep (16 runs)")
    parser.add_argument("--no-lecturer", action="store_true", help="no lecturer's session beside the class")
    parser.add_argument("--own-prompts", action="store_true", help="each student a prompt of its own (none shared)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--neighbours", type=int, default=0, help='busy loops (python3 -c "while True: pass") beside the server'
    )
    parser.add_argument(
        "--chart-also", type=Path, nargs="*", default=[], help="results (--json) of other runs to chart"
    )
    parser.add_argument("--out", type=Path, default=Path("runs/class_load"), help="server logs and the chart")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args.out.mkdir(parents=True, exist_ok=True)
    env = {**class_env(args.out), **dict(item.split("=", 1) for item in args.env)}
    from specviz.analysis.snapshot import machine

    prompts = "each student's own" if args.own_prompts else f"{len(PROMPTS)} shared by the class"
    print(
        f"class load, {date.today()}, {machine()}, server env {env}, think {args.think:g} s ± 30 %, prompts {prompts}",
        flush=True,
    )
    sizes = [*sorted({n for n in args.sizes if n < args.students}), args.students]
    results = []
    neighbours = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.neighbours)]
    if neighbours:
        print(f"  beside {len(neighbours)} busy loop{'s' if len(neighbours) != 1 else ''}", flush=True)
    try:
        class_sizes(args, sizes, env, results)
    finally:
        for loop in neighbours:
            loop.kill()
            loop.wait()
    also = [r for path in args.chart_also for r in json.loads(path.read_text())]
    chart(sorted(results + also, key=lambda r: r["students"]), args.out / "latency.png")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    for result in results:
        print(line(result))
    return 0


def class_sizes(args, sizes: list[int], env: dict, results: list) -> None:
    """Each class size in turn, its result appended to `results` and printed as it comes."""
    for n in sizes:
        seconds = 60 * (args.minutes if n == args.students else min(args.minutes, 1.0))
        result = measure(
            n,
            seconds,
            args.think,
            env,
            args.out,
            sweepers=min(args.sweepers, n),
            lecturer=not args.no_lecturer,
            own_prompts=args.own_prompts,
        )
        results.append(result)
        print(
            f"  {n:3d} students, {result['seconds']:.0f} s: {result['steps']} Steps, actions {result['actions']}; "
            f"Step p50 {result['step_p50']:.2f} s; p95 once all have arrived {result['settled_p95']:.2f} s; "
            f"every action's p95 {result['action_p95']:.2f} s; "
            f"server busy {100 * result['server_cpu_share']:.0f} % of the cores"
            + (f"; {result['sweepers']} sweeps took {result['sweep_seconds']} s" if result["sweepers"] else "")
            + (
                f"; {result['download_retries']} downloads asked for again after a 404"
                if result["download_retries"]
                else ""
            )
            + (f"; errors e.g. {result['error_samples']}" if result["errors"] else "")
            + (
                f"; the lecturer's {result['lecturer_steps']} Steps (presentation view, first in the queue): "
                f"p95 {result['lecturer_p95']:.2f} s, max {result['lecturer_max']:.2f} s, trace "
                + ("equal to its solo run" if result["lecturer_trace_equal"] else "NOT equal to its solo run")
                if result["lecturer_steps"]
                else ""
            ),
            flush=True,
        )


if __name__ == "__main__":
    raise SystemExit(main())
