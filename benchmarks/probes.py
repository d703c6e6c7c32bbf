"""A student's probes rerun against a class server, beside the lecturer's session (issue 57, "Done when").

Starts the app in class mode on a loopback port (benchmarks.appserver.serve, a class TOML with a lecturer key) and a
loopback listener on another port that counts every connection and request made to it. The server's Hugging Face
endpoint is that listener (`HF_ENDPOINT`, the hub switched on: `HF_HUB_OFFLINE=0`, unless `--offline`) and its hub
cache a fresh folder, so a hub id the class does not allow would show as a request to the listener and bytes in that
folder; a served target (`vllm:http://127.0.0.1:PORT/v1`) names the listener itself. The class allows neither: its
`models` and `urls` name others.

Every browser tab is a benchmarks.stclient websocket client (Streamlit's own protocol), run in a thread at the
lowest CPU priority, so that the server is what is measured. The student's tabs connect from 127.0.0.2 and the
lecturer's from 127.0.0.3 (`--student-address`, `--lecturer-address`): Streamlit tells the app no address for a
client on 127.0.0.1, and the class's per-address bound (`heavy_jobs_per_address`) would not apply.

1. Quiet: the lecturer's session (`?lecturer=KEY`, presentation view) takes `--quiet-steps` Steps on Decode, one
   every `--pace` seconds (± 20 %) after the last answered; each Step's latency (click → the end of the script run
   that answers it) is kept. The server's resident memory (RSS of it and its children) is read at the start.
2. Probes, while the lecturer keeps stepping, in waves `--gap` seconds apart, the three waves opened `--rounds`
   times, each tab open `--open` seconds and then closed (the client disconnects): `--sandbox` Sandbox links with a
   `--words`-word table at τ = 8 in lossless mode, block verification; `--auto` auto-stepping Decode links
   (`decode_steps=10000`, a tree, τ = 16, 64 nodes); then hostile and refused links, each of which must answer with
   a message, not an exception: typed drafts `{"²":"x"}` and 3000 `[`, 3000 `[` as the lossless and the Sandbox
   table, Sandbox words that are markdown pointing at the listener, a hub id the class does not allow as target, as
   draft and as draft beside a served target, and the listener as a served target.
3. Settle: after the last tab closed the lecturer goes on stepping for `--settle` seconds; the server's RSS is read
   then, and its CPU use over that minute tells whether the probes' work went on without its tabs.

Reported: what each probe's tabs were told; the lecturer's Step p50 / p95 quiet, under the probes (and during each
kind of wave) and after them, and the ratio of the p95s (goal ≤ 1.5×); RSS at the start, its peak (sampled every
half second) and after the settle (goal: within 0.2 GB of the start); exceptions seen on any page, the lecturer's
included (goal 0); pages that would make a browser fetch or link the listener (markdown images, links or autolinks
to it, HTML src/href: goal 0); connections and requests to the listener and bytes written to the hub cache (goal 0);
"Traceback" lines in the server's log.

Usage: python -m benchmarks.probes [--quiet-steps 20] [--pace 3] [--open 10] [--sandbox 3] [--auto 6]
       [--words 400] [--gap 5] [--rounds 3] [--settle 60] [--offline] [--env KEY=VALUE ...] [--json FILE]
       [--out runs/probes]
One run with the defaults takes about 4–5 minutes on a 2-core server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import threading
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from benchmarks.class_load import quantile
from benchmarks.probe_links import SOURCE, Tab, open_tab, probes, said, sources
from benchmarks.probe_watch import Listener, RssSampler, folder_bytes, tree_rss_gb
from benchmarks.server_cpu import cpu_seconds

LECTURER_KEY = "probes-lecturer"
LECTURER_LINK = {
    "lecturer": LECTURER_KEY,
    "decode_present": "true",
    "decode_prompt": "Write a long story about a robot who learns to paint.",
    "decode_max_new": 256,  # the class's largest run: enough for `--run-steps` Steps
    "decode_seed": 7,
}


# --------------------------------------------------------------------------------------
# The lecturer
# --------------------------------------------------------------------------------------


@dataclass
class Lecturer:
    pace: float
    run_steps: int  # Steps before the run is reset (a run of 256 tokens ends near 60 Steps at τ = 4)
    phase: str = "warm-up"
    steps: list[tuple[float, float, str]] = field(default_factory=list)  # (clicked at, latency, phase)
    exceptions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # error boxes on the lecturer's page
    resets: int = 0
    is_lecturer: bool = False
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def latencies(self, phase: str) -> list[float]:
        return [t for _, t, p in self.steps if p == phase]

    def count(self, phase: str) -> int:
        return len(self.latencies(phase))

    async def life(self, url: str, source: str = "", seed: int = 57) -> None:
        from benchmarks.stclient import StreamlitClient

        SOURCE.set(source)
        rng = random.Random(seed)
        client = StreamlitClient(url)
        try:
            await client.connect(query_string=urlencode(LECTURER_LINK), timeout=600)
            self.is_lecturer = client.contains("This is the lecturer's session")
            await client.click("decode_step", timeout=600)  # the first Step reads the prompt: not timed
            self.ready.set()
            since_reset = 1
            while not self.stop.is_set():
                phase, start = self.phase, time.perf_counter()
                run = await client.click("decode_step", timeout=600)
                self.steps.append((start, time.perf_counter() - start, phase))
                self.exceptions += [f"{kind}: {message}" for kind, message in run.exceptions()]
                self.errors += run.errors()
                since_reset += 1
                if since_reset >= self.run_steps:  # a new run before this one ends (a Step at its end computes nothing)
                    await client.click("decode_reset", timeout=600)
                    self.resets += 1
                    since_reset = 0
                with contextlib.suppress(TimeoutError):  # the pause before the next Step, cut short by `stop`
                    await asyncio.wait_for(self.stop.wait(), self.pace * rng.uniform(0.8, 1.2))
        except Exception as exc:
            self.errors.append(f"the lecturer's client: {type(exc).__name__}: {exc}")
        finally:
            self.ready.set()
            await client.close()


# --------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------


async def _phases(url: str, pid: int, args: argparse.Namespace, listener: Listener) -> dict:
    lecturer = Lecturer(pace=args.pace, run_steps=args.run_steps)
    teacher = asyncio.create_task(lecturer.life(url, args.lecturer_address))
    await lecturer.ready.wait()
    marks: dict[str, float] = {"quiet": time.perf_counter()}
    cpu: dict[str, float] = {"quiet": cpu_seconds(pid)}
    rss_start = tree_rss_gb(pid)
    lecturer.phase = "quiet"
    while lecturer.count("quiet") < args.quiet_steps and not teacher.done():
        await asyncio.sleep(0.2)
    marks["probes"], cpu["probes"] = time.perf_counter(), cpu_seconds(pid)
    lecturer.phase = "probes"
    print(f"  quiet: {lecturer.count('quiet')} Steps; probes from now", flush=True)
    tabs: list[Tab] = []
    waves: list[tuple[str, float, float]] = []  # (what, opened, all closed), seconds from the quiet phase's start
    rss_by_wave: list[float] = []  # the server's RSS as each wave's tabs had closed, GB
    for round_ in range(args.rounds):
        for i, (what, wave) in enumerate(probes(args, listener.host)):
            if round_ or i:
                await asyncio.sleep(args.gap)
            opened = time.perf_counter()
            tabs += await asyncio.gather(
                *(open_tab(url, p, args.open, listener.host, args.student_address) for p in wave)
            )
            waves.append((what, round(opened - marks["quiet"], 1), round(time.perf_counter() - marks["quiet"], 1)))
            rss_by_wave.append(round(tree_rss_gb(pid), 2))
            print(f"  round {round_ + 1}, wave {i + 1} ({what}): {len(wave)} tabs closed", flush=True)
    marks["closed"], cpu["closed"] = time.perf_counter(), cpu_seconds(pid)
    lecturer.phase = "after"
    cpu0 = cpu["closed"]
    cpu_marks = [(0.0, 0.0, tree_rss_gb(pid))]  # (s since the tabs closed, server CPU-s since then, RSS GB)
    while (elapsed := time.perf_counter() - marks["closed"]) < args.settle and not teacher.done():
        await asyncio.sleep(min(10.0, args.settle - elapsed))
        cpu_marks.append((time.perf_counter() - marks["closed"], cpu_seconds(pid) - cpu0, tree_rss_gb(pid)))
    marks["settled"], cpu["settled"] = time.perf_counter(), cpu_seconds(pid)
    rss_after = tree_rss_gb(pid)
    lecturer.stop.set()
    await teacher
    return {
        "lecturer": lecturer,
        "tabs": tabs,
        "marks": marks,
        "rss_start": rss_start,
        "rss_after": rss_after,
        "cpu_marks": cpu_marks,
        "cpu": cpu,
        "waves": waves,
        "rss_by_wave": rss_by_wave,
    }


def _in_thread(coro_fn, *args) -> Any:
    """The clients' event loop in a thread at the lowest CPU priority (Linux sets it per thread): the tabs take only
    the CPU the server leaves, as browsers on the students' own machines would."""
    box: dict[str, Any] = {}

    def run() -> None:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        try:
            box["result"] = asyncio.run(coro_fn(*args))
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["result"]


def class_env(out: Path, args: argparse.Namespace, listener: Listener) -> dict[str, str]:
    """The server's environment: class mode with a lecturer key and lists that name neither the listener nor the
    probes' hub id; the hub switched on but pointed at the listener, its cache a fresh folder in `out`."""
    settings = out / "class.toml"
    settings.write_text(
        "[class]\n"
        f'lecturer_key = "{LECTURER_KEY}"\n'
        'models = ["HuggingFaceTB/SmolLM2-360M-Instruct"]\n'
        'urls = ["http://10.0.0.5:8000/v1"]\n'
    )
    hf = (out / "hf-home").resolve()
    env = {
        "SPECVIZ_CLASS_MODE": "1",
        "SPECVIZ_CLASS_SETTINGS": str(settings.resolve()),
        "HF_HOME": str(hf),
        "HF_HUB_CACHE": str(hf / "hub"),
        "HF_ENDPOINT": f"http://{listener.host}",
        "HF_HUB_OFFLINE": "1" if args.offline else "0",
        "HF_HUB_DISABLE_TELEMETRY": "1",
    }
    return {**env, **dict(item.split("=", 1) for item in args.env)}


def by_wave(steps: list[tuple[float, float, str]], waves: list[tuple[str, float, float]], t0: float) -> dict:
    """The lecturer's Steps clicked while a kind of wave was open (its tabs between opening and all closed), by
    kind: their count, p50 and p95."""
    out = {}
    for what in dict.fromkeys(w[0] for w in waves):
        windows = [(a, b) for kind, a, b in waves if kind == what]
        during = [t for at, t, _ in steps if any(a <= at - t0 <= b for a, b in windows)]
        out[what] = {"steps": len(during), "p50": _p(during, 0.5), "p95": _p(during, 0.95)}
    return out


def machine() -> str:
    """The CPU's model name and the cores this machine has (/proc/cpuinfo)."""
    names = [
        line.split(":", 1)[1].strip()
        for line in Path("/proc/cpuinfo").read_text().splitlines()
        if line.startswith("model name")
    ]
    return f"{names[0] if names else 'unknown CPU'}, {os.cpu_count()} cores"


def _p(values: list[float], q: float) -> float:
    return statistics.median(values) if q == 0.5 and values else quantile(values, q)


def measure(args: argparse.Namespace) -> dict:
    from benchmarks.appserver import serve

    args.out.mkdir(parents=True, exist_ok=True)
    with Listener() as listener:
        env = class_env(args.out, args, listener)
        hf = Path(env["HF_HOME"])
        if hf.exists():
            import shutil

            shutil.rmtree(hf)
        hf.mkdir(parents=True)
        log = args.out / "server.log"
        procs: list = []
        t_start = time.perf_counter()
        with serve(log, env=env, procs=procs) as url:
            pid = procs[0].pid
            print(
                f"  server up in {time.perf_counter() - t_start:.0f} s (pid {pid}, listener {listener.host})",
                flush=True,
            )
            with RssSampler(pid) as rss, sources():
                got = _in_thread(_phases, url, pid, args, listener)
        hub_bytes = folder_bytes(hf)
    lecturer: Lecturer = got["lecturer"]
    marks, tabs = got["marks"], got["tabs"]
    connections_before, requests_before = listener.since(t_start)
    connections, requests = listener.since(marks["probes"])
    quiet, under, after = (lecturer.latencies(p) for p in ("quiet", "probes", "after"))
    exceptions = lecturer.exceptions + [f"{t.probe.name}: {e}" for t in tabs for e in t.exceptions]
    log_text = log.read_text(errors="replace")
    result = {
        "date": str(date.today()),
        "server_env": env,
        "quiet_steps": len(quiet),
        "probe_steps": len(under),
        "after_steps": len(after),
        "quiet_p50": _p(quiet, 0.5),
        "quiet_p95": _p(quiet, 0.95),
        "probes_p50": _p(under, 0.5),
        "probes_p95": _p(under, 0.95),
        "probes_max": max(under, default=float("nan")),
        "after_p50": _p(after, 0.5),
        "after_p95": _p(after, 0.95),
        "p95_ratio": _p(under, 0.95) / _p(quiet, 0.95) if quiet and under else float("nan"),
        "step_times": [(round(at - marks["quiet"], 1), round(t, 3), p) for at, t, p in lecturer.steps],
        "lecturer_resets": lecturer.resets,
        "lecturer_marked": lecturer.is_lecturer,
        "lecturer_errors": lecturer.errors,
        "probes_seconds": round(marks["closed"] - marks["probes"], 1),
        "waves": got["waves"],
        "by_wave": by_wave(lecturer.steps, got["waves"], marks["quiet"]),
        "rss_by_wave": got["rss_by_wave"],
        "student_address": args.student_address or "127.0.0.1",
        "lecturer_address": args.lecturer_address or "127.0.0.1",
        "rss_start_gb": got["rss_start"],
        "rss_peak_gb": rss.peak(marks["quiet"]),
        "rss_after_gb": got["rss_after"],
        "rss_after_minus_start_gb": got["rss_after"] - got["rss_start"],
        "settle_seconds": round(marks["settled"] - marks["closed"], 1),
        "settle_marks": [(round(t), round(c, 2), round(gb, 2)) for t, c, gb in got["cpu_marks"]],
        "server_cores_busy": {  # the server's CPU-s per second in each phase (2.0: both cores of a 2-core machine)
            phase: round((got["cpu"][end] - got["cpu"][phase]) / (marks[end] - marks[phase]), 2)
            for phase, end in (("quiet", "probes"), ("probes", "closed"), ("closed", "settled"))
        },
        "exceptions": exceptions,
        "fetches": [f"{t.probe.name}: {f}" for t in tabs for f in t.fetches],
        "no_message": [t.probe.name for t in tabs if t.probe.wants_message and not said(t.messages)],
        "listener_connections": connections,
        "listener_requests": requests,
        "listener_connections_before_probes": connections_before - connections,
        "listener_requests_before_probes": requests_before[: len(requests_before) - len(requests)],
        "hub_cache_bytes": hub_bytes,
        "log_tracebacks": log_text.count("Traceback (most recent call last)"),
        "tabs": [
            {
                "probe": t.probe.name,
                "open_s": round(t.open_s, 1),
                "answered_s": None if t.answered_s is None else round(t.answered_s, 2),
                "messages": [m[:300] for m in t.messages],
                "exceptions": t.exceptions,
                "fetches": t.fetches,
                "client_error": t.client_error,
            }
            for t in tabs
        ],
    }
    return result


def report(r: dict) -> str:
    ok = {True: "met", False: "NOT met"}
    ratio_ok = r["p95_ratio"] <= 1.5
    rss_ok = abs(r["rss_after_minus_start_gb"]) <= 0.2
    lines = [f"probes beside a lecturer, {r['date']}, server env {r['server_env']}"]
    by_probe: dict[str, list[dict]] = {}
    for t in r["tabs"]:
        by_probe.setdefault(t["probe"], []).append(t)
    for name, tabs in by_probe.items():  # each probe's tabs (one a round)
        answered = [t["answered_s"] for t in tabs if t["answered_s"] is not None]
        times = f"answered in {', '.join(f'{a:.1f}' for a in answered)} s" if answered else "none answered"
        running = len(tabs) - len(answered)
        answers = list(dict.fromkeys(m[:160] for t in tabs for m in said(t["messages"])))
        said_text = "".join(f"; said {a!r}" for a in answers[:1]) + (
            f" (+{len(answers) - 1} other)" if answers[1:] else ""
        )
        more = "".join(
            f"; {k} {sorted({x for t in tabs for x in (t[k] if isinstance(t[k], list) else [t[k]]) if x})}"
            for k in ("exceptions", "fetches", "client_error")
            if any(t[k] for t in tabs)
        )
        lines.append(
            f"  {name}: {len(tabs)} tabs, {times}"
            + (f", {running} still running when closed" if running else "")
            + said_text
            + more
        )
    lines += [
        f"lecturer Steps: quiet p50 {r['quiet_p50']:.2f} s p95 {r['quiet_p95']:.2f} s ({r['quiet_steps']} Steps); "
        f"under the probes p50 {r['probes_p50']:.2f} s p95 {r['probes_p95']:.2f} s max {r['probes_max']:.2f} s "
        f"({r['probe_steps']} Steps in {r['probes_seconds']:.0f} s); after them p50 {r['after_p50']:.2f} s "
        f"p95 {r['after_p95']:.2f} s ({r['after_steps']} Steps)",
        f"  p95 under the probes / quiet: {r['p95_ratio']:.2f}× (goal ≤ 1.5×: {ok[ratio_ok]}); during each kind of "
        "wave: "
        + "; ".join(
            f"{what} p50 {w['p50']:.2f} s p95 {w['p95']:.2f} s ({w['steps']} Steps)"
            if w["steps"]
            else f"{what} no Step"
            for what, w in r["by_wave"].items()
        ),
        f"RSS: start {r['rss_start_gb']:.2f} GB, peak {r['rss_peak_gb']:.2f} GB, {r['settle_seconds']:.0f} s after the "
        f"tabs closed {r['rss_after_gb']:.2f} GB ({r['rss_after_minus_start_gb']:+.2f} GB; goal within 0.2 GB: "
        f"{ok[rss_ok]})",
        f"RSS as each wave's tabs had closed (sandbox, auto-steps, hostile; each round): {r['rss_by_wave']} GB",
        f"server cores busy (CPU-s a second): quiet {r['server_cores_busy']['quiet']}, under the probes "
        f"{r['server_cores_busy']['probes']}, after them {r['server_cores_busy']['closed']}; since the tabs closed "
        f"(s, server CPU-s, RSS GB): {r['settle_marks']}",
        f"exceptions on a page: {len(r['exceptions'])} (goal 0) {r['exceptions'] or ''}",
        f"pages that would fetch or link the listener: {len(r['fetches'])} (goal 0) {r['fetches'] or ''}",
        f"hostile or refused links answered with no message: {r['no_message'] or 'none'}",
        f"listener during the probes: {r['listener_connections']} connections, {len(r['listener_requests'])} requests "
        f"(goal 0) {r['listener_requests'][:5] or ''}; before them: {r['listener_connections_before_probes']} "
        f"connections; hub cache written: {r['hub_cache_bytes']} bytes (goal 0)",
        f"'Traceback' in the server's log: {r['log_tracebacks']}; lecturer's session marked as such: "
        f"{r['lecturer_marked']}; its error boxes: {r['lecturer_errors'] or 'none'}",
    ]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quiet-steps", type=int, default=20, help="the lecturer's Steps before the probes")
    p.add_argument("--pace", type=float, default=3.0, help="seconds between the lecturer's Steps (± 20 %%)")
    p.add_argument("--run-steps", type=int, default=40, help="the lecturer's Steps before a new run (Reset)")
    p.add_argument("--open", type=float, default=10.0, help="seconds each probe's tab stays open")
    p.add_argument("--sandbox", type=int, default=3, help="Sandbox tabs with a large table (lossless, block, τ = 8)")
    p.add_argument("--words", type=int, default=400, help="words in the Sandbox links' table")
    p.add_argument("--auto", type=int, default=6, help="auto-stepping Decode tabs (10000 steps, tree, τ = 16)")
    p.add_argument("--gap", type=float, default=5.0, help="seconds between the waves of tabs")
    p.add_argument("--rounds", type=int, default=3, help="times the waves are opened, one after another")
    p.add_argument(
        "--student-address", default="127.0.0.2", help="the address the probes' tabs connect from ('': 127.0.0.1)"
    )
    p.add_argument("--lecturer-address", default="127.0.0.3", help="the address the lecturer connects from")
    p.add_argument("--settle", type=float, default=60.0, help="seconds after the last tab closed before RSS is read")
    p.add_argument("--offline", action="store_true", help="the server's hub switched off (HF_HUB_OFFLINE=1)")
    p.add_argument("--env", nargs="*", default=[], help="KEY=VALUE for the server")
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--out", type=Path, default=Path("runs/probes"), help="the server's log, class TOML and hub cache")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    print(f"probes, {date.today()}, {machine()}", flush=True)
    result = measure(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    print(report(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
