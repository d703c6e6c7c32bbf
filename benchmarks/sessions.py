"""Many browser sessions on one app server, as a class uses it.

Starts `streamlit run app.py` on a loopback port and drives N real Chromium sessions (Playwright,
one browser context each) that step their own runs of the embedded pair at the same time, each
with its own seed (opened from a link). Reports, for each N, the first step apart (it also loads
the chart code into the page), then the median and p95 latency of the later steps (click → the
new step's chart shown); checks that no page shows an error and that every session's final trace
(downloaded as JSON) equals the same run decoded alone in this process.

Usage: python -m benchmarks.sessions [--sessions 1 4 8] [--steps 5] [--env KEY=VALUE ...]
Goal (issue 11): at 8 sessions, p95 no worse than 8 single-session steps one after another.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

from benchmarks.appserver import CHROMIUM, CHROMIUM_ARGS, IDLE, serve

PROMPT = "Write a long story about a robot who learns to paint."  # a long answer: no early end of text


async def session(browser, url: str, seed: int, steps: int, ready: asyncio.Barrier, out: Path) -> dict:
    context = await browser.new_context(viewport={"width": 1280, "height": 720}, accept_downloads=True)
    page = await context.new_page()
    try:
        return await _drive(page, url, seed, steps, ready)
    except Exception:
        await page.screenshot(path=str(out / f"stalled-seed{seed}.png"), full_page=True)
        (out / f"stalled-seed{seed}.txt").write_text(await page.inner_text("body"))
        raise
    finally:
        await context.close()


async def _drive(page, url: str, seed: int, steps: int, ready: asyncio.Barrier) -> dict:
    await page.goto(f"{url}/?{urlencode({'decode_seed': seed, 'decode_prompt': PROMPT})}")
    step = page.get_by_role("button", name="Step", exact=True)
    await page.get_by_text("Press Step").wait_for(timeout=300_000)  # the pair is loaded
    await asyncio.wait_for(ready.wait(), 600)  # every session loaded: step together
    latencies = []
    for k in range(1, steps + 1):
        began = time.perf_counter()
        await step.click()
        shown = page.locator(f'.gtitle:has-text("Step {k}:"), :text("This run has finished")')
        await shown.first.wait_for(timeout=300_000)
        if await page.get_by_text("This run has finished").count():  # end of text: the alone run stops too
            break
        latencies.append(time.perf_counter() - began)
    await page.locator(IDLE).wait_for(timeout=300_000)
    errors = await page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]').count()
    async with page.expect_download() as download:
        await page.get_by_role("button", name="Trace as JSON").click()
    trace = Path(await (await download.value).path()).read_text()
    return {"seed": seed, "latencies": latencies, "errors": errors, "trace": trace}


async def round_of(url: str, n: int, steps: int, first_seed: int, out: Path) -> list[dict]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        ready = asyncio.Barrier(n)
        tasks = [session(browser, url, first_seed + i, steps, ready, out) for i in range(n)]
        results = await asyncio.gather(*tasks)
        await browser.close()
    return results


def alone(seed: int, steps: int):
    """The same run decoded in this process, with nothing beside it."""
    import specviz

    pair = _pair()
    decoder = specviz.Decoder(pair, PROMPT, specviz.SpecConfig(seed=seed))
    while len(decoder.steps) < steps and not decoder.done:
        decoder.step()
    return decoder.trace()


@functools.cache
def _pair():
    import specviz

    return specviz.load_pair("embedded", "embedded")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--env", nargs="*", default=[], help="KEY=VALUE for the server (e.g. a compute scheme)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--out", type=Path, default=Path("runs/sessions"), help="server log, stalled pages")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import specviz

    env = dict(item.split("=", 1) for item in args.env)
    rows, ok = [], True
    args.out.mkdir(parents=True, exist_ok=True)
    with serve(args.out / "streamlit.log", env) as url:
        print(f"app at {url} {env or ''}", file=sys.stderr)
        seed = 100
        for n in args.sessions:
            began = time.perf_counter()
            results = asyncio.run(round_of(url, n, args.steps, seed, args.out))
            wall = time.perf_counter() - began
            first = [r["latencies"][0] for r in results if r["latencies"]]  # loads the chart code too
            latencies = [x for r in results for x in r["latencies"][1:]]
            same = sum(
                specviz.RunTrace.from_json(r["trace"]).outcome() == alone(r["seed"], args.steps).outcome()
                for r in results
            )
            errors = sum(r["errors"] for r in results)
            rows.append(
                {
                    "sessions": n,
                    "steps": len(latencies),
                    "first_step_median_s": statistics.median(first),
                    "first_step_max_s": max(first),
                    "median_s": statistics.median(latencies),
                    "p95_s": p95(latencies),
                    "max_s": max(latencies),
                    "identical_traces": same,
                    "errors_on_page": errors,
                    "round_s": wall,
                }
            )
            ok = ok and same == n and errors == 0
            print(json.dumps(rows[-1]), file=sys.stderr)
            seed += n
    single = rows[0]["median_s"] if rows and rows[0]["sessions"] == 1 else None
    print(
        "| sessions | first step: median / max (s) | later steps: median (s) | p95 (s) | p95 / (N × single median) "
        "| identical traces | errors |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        budget = f"{row['p95_s'] / (row['sessions'] * single):.2f}" if single else "–"
        print(
            f"| {row['sessions']} | {row['first_step_median_s']:.2f} / {row['first_step_max_s']:.2f} | "
            f"{row['median_s']:.2f} | {row['p95_s']:.2f} | {budget} | "
            f"{row['identical_traces']} of {row['sessions']} | {row['errors_on_page']} |"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
