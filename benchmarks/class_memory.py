"""A class server's memory as a student's links ask it for more pairs (issue 46): the app in class mode on a loopback
port, then one session per link, each taking one Step, the server's resident memory (RSS, of the server process
and its children) read after each. The links are the four of the report (the default pair, then the untrained,
self-draft and prompt-lookup presets, all on the embedded target), then, after the pairs were idle past the class's
minute, two early-exit drafts that make others give their place back. With one copy of each model however many
pairs use it (specviz.models.store) the presets after the first add little, and an evicted pair gives its memory
back.
Usage: python -m benchmarks.class_memory [--idle 65]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

LINKS = (
    {"decode_steps": 1},
    {"decode_preset": "Untrained draft (first 8 layers)", "decode_steps": 1},
    {"decode_preset": "Self-draft (α = 1)", "decode_steps": 1},
    {"decode_preset": "Prompt lookup", "decode_steps": 1},
)
AFTER_IDLE = (
    {"decode_preset": "Custom: hub id, folder or server", "decode_target": "embedded", "decode_draft": "early-exit:3"},
    {"decode_preset": "Custom: hub id, folder or server", "decode_target": "embedded", "decode_draft": "early-exit:5"},
)


def rss_gb(pid: int) -> float:
    """The server process's resident memory now, GB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1e6
    return float("nan")


async def open_link(url: str, query: dict) -> list[str]:
    from benchmarks.stclient import StreamlitClient

    client = StreamlitClient(url)
    try:
        await client.connect(query_string=urlencode({**query, "decode_steps": query.get("decode_steps", 1)}))
        problems = [*client.errors(), *(f"{k}: {v}" for k, v in client.exceptions())]
        return problems
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=float, default=65.0, help="seconds to wait before the last two links")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from benchmarks.appserver import serve

    procs: list = []
    with tempfile.TemporaryDirectory() as tmp:
        env = {"SPECVIZ_CLASS_MODE": "1"}
        with serve(Path(tmp) / "server.log", env=env, procs=procs) as url:
            pid = procs[0].pid
            print(f"server up: {rss_gb(pid):.2f} GB")
            previous = None
            for i, query in enumerate((*LINKS, *AFTER_IDLE)):
                if i == len(LINKS):
                    print(f"(idle {args.idle:.0f} s: the pairs may now be given back)")
                    time.sleep(args.idle)
                problems = asyncio.run(open_link(url, query))
                now = rss_gb(pid)
                added = "" if previous is None else f" ({now - previous:+.2f} GB)"
                what = query.get("decode_draft") or query.get("decode_preset", "the default pair")
                print(f"{what}: {now:.2f} GB{added}" + (f"  problems: {problems}" if problems else ""))
                previous = now
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
