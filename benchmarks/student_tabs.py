"""One student against a class server (issue 68's probes): the app in class mode with docs/class.example.toml
(memory_gb 6.0) on a loopback port; one browser (one XSRF cookie, as a student's tabs share it) opens `--tabs`
tabs of a one-step link with the longest prompt the class allows and the most new tokens, one after another; the
server's resident memory (RSS, the server and its children) is read after each, then a minute after the tabs
closed. A second student (another browser) opens one tab beside the first one's: it must start its run, or be refused
for its own use only. Then the lecturer's Step latency, quiet and while the student opens `--wave` tabs at once.

Reported: RSS at start, its highest, against memory_gb + 0.5 GB; the tabs the server refused and the first refusal's
words; RSS a minute after the tabs closed, against the start + 0.2 GB; the lecturer's Step p50 / p95 quiet and
beside the wave, and their ratio (goal ≤ 1.5).
Usage: python -m benchmarks.student_tabs [--tabs 28] [--wave 9] [--steps 15]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

from benchmarks.class_memory import rss_gb

ROOT = Path(__file__).resolve().parent.parent
LECTURER_KEY = "change-me"  # docs/class.example.toml's


def tree_rss_gb(pid: int) -> float:
    """The server's RSS with its children's (a llama.cpp server it started, if any), GB."""
    total = rss_gb(pid)
    children = Path(f"/proc/{pid}/task/{pid}/children")
    for child in children.read_text().split() if children.exists() else []:
        total += rss_gb(int(child))
    return total


def long_link(chars: int, max_new: int, seed: int) -> str:
    """A one-step link whose prompt is `chars` random digits: the embedded tokenizer makes each digit a token of its
    own, so the prompt is as many tokens as the class lets a student type."""
    digits = "".join(random.Random(seed).choice("0123456789") for _ in range(chars))
    return urlencode({"decode_prompt": digits, "decode_max_new": max_new, "decode_steps": 1})


def refusal(client) -> str | None:
    """The page's refusal, if the tab was refused (a tab, a run or memory), else None."""
    for text in [*client.alerts(), *client.markdown()]:
        if any(word in text for word in ("most one student", "Cannot start", "refused", "in your other tabs")):
            return text
    return None


async def open_tab(url: str, link: str, cookie: str | None):
    from benchmarks.stclient import StreamlitClient

    client = StreamlitClient(url, browser_cookie=cookie)
    await client.connect(query_string=link, timeout=600)
    return client


async def lecturer_steps(client, steps: int, pause: float = 0.5) -> list[float]:
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        await client.click("decode_step", timeout=600)
        times.append(time.perf_counter() - start)
        await asyncio.sleep(pause)
    return times


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def probe(url: str, pid: int, args: argparse.Namespace) -> None:
    print(f"server up: {tree_rss_gb(pid):.2f} GB (the models load with the first page)")
    lecturer = await open_tab(url, urlencode({"lecturer": LECTURER_KEY}), None)
    print("lecturer's session:", lecturer.contains("This is the lecturer's session"))
    await lecturer_steps(lecturer, 2)  # warm
    start_rss = tree_rss_gb(pid)
    print(f"the lecturer's page open, its pair loaded and stepped: {start_rss:.2f} GB (the start)")
    quiet = await lecturer_steps(lecturer, args.steps, pause=0.2)  # as beside the wave below: like against like
    print(f"lecturer Step, quiet: p50 {statistics.median(quiet):.2f} s, p95 {p95(quiet):.2f} s")

    tabs, refused, highest, cookie = [], [], start_rss, None
    for i in range(args.tabs):
        client = await open_tab(url, long_link(args.chars, args.max_new, i), cookie)
        cookie = client.browser_cookie
        tabs.append(client)
        why = refusal(client)
        if why:
            refused.append((i + 1, why))
        now = tree_rss_gb(pid)
        highest = max(highest, now)
        print(f"tab {i + 1}: {now:.2f} GB" + (f"  refused: {why[:160]}" if why else ""))
    budget = args.memory_gb + 0.5
    verdict = "within" if highest <= budget else "OVER"
    print(f"highest RSS {highest:.2f} GB against memory_gb + 0.5 = {budget:.2f} GB: {verdict}")
    print(f"{len(refused)} of {args.tabs} tabs refused")

    again = await lecturer_steps(lecturer, 3)
    print(f"the lecturer steps beside them: {statistics.median(again):.2f} s, errors {lecturer.errors()[:2]}")
    other = await open_tab(url, long_link(args.chars, args.max_new, 999), None)  # another browser: another student
    why = refusal(other)
    print(
        "a second student's tab beside them: "
        + (f"refused: {why[:200]}" if why else f"not refused, errors {other.errors()[:2]}")
        + f"; names the first student's use: {bool(why) and any(w in why for w in ('other tabs', 'other open run'))}"
    )
    tabs.append(other)
    for client in tabs:
        await client.close()
    await asyncio.sleep(args.after)
    after = tree_rss_gb(pid)
    change = after - start_rss
    print(f"{args.after:.0f} s after the tabs closed: {after:.2f} GB ({change:+.2f} against the start; goal ≤ +0.2)")

    waves = [open_tab(url, long_link(args.chars, args.max_new, 100 + i), cookie) for i in range(args.wave)]
    opening = asyncio.gather(*waves)
    beside = await lecturer_steps(lecturer, args.steps, pause=0.2)
    wave = await opening
    ratio = p95(beside) / p95(quiet)
    print(
        f"lecturer Step beside {args.wave} tabs opening: p50 {statistics.median(beside):.2f} s,"
        f" p95 {p95(beside):.2f} s, {ratio:.2f}× the quiet p95 (goal ≤ 1.5)"
    )
    for client in [*wave, lecturer]:
        await client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tabs", type=int, default=28)
    parser.add_argument("--wave", type=int, default=9)
    parser.add_argument("--steps", type=int, default=15, help="lecturer Steps timed, quiet and beside the wave")
    parser.add_argument("--after", type=float, default=60.0, help="seconds after the tabs closed to read RSS")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from benchmarks.appserver import serve
    from specviz.server.config import class_policy

    settings = ROOT / "docs" / "class.example.toml"
    env = {"SPECVIZ_CLASS_MODE": "1", "SPECVIZ_CLASS_SETTINGS": str(settings)}
    policy = class_policy(env)
    args.memory_gb, args.chars, args.max_new = policy.memory_gb, policy.prompt_chars, policy.max_new_tokens
    procs: list = []
    with tempfile.TemporaryDirectory() as tmp, serve(Path(tmp) / "server.log", env=env, procs=procs) as url:
        asyncio.run(probe(url, procs[0].pid, args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
