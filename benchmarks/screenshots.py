"""The README's pictures, made by the app itself: `python -m benchmarks.screenshots [OUT] [--size WxH]
[--only NAME ...]` starts the app on a loopback port with the embedded pair and takes each page from a
fixed link (fixed seeds: the same pictures every time) in Debian's headless Chromium.

`make screenshots` writes them into assets/screenshots/, where the README links them. Every shot
waits until the app's script run has finished and the charts are drawn."""

from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.appserver import CHROMIUM, CHROMIUM_ARGS, IDLE, ROOT, serve


@dataclass(frozen=True)
class Shot:
    name: str  # file stem
    query: str  # the link's query string (a page path and its settings)
    press: tuple[str, ...] = ()  # buttons to press, in order, once the page is ready
    wait_text: str = ""  # text that must be on the page before the picture
    full_page: bool = False
    expand: str = ""  # an expander to open (its label's start); the picture is then of that expander alone


SHOTS = (
    Shot("decode", "?decode_steps=4", wait_text="Step 4:"),  # a rejection, then two tokens not reached
    Shot("decode-present", "?decode_steps=4&decode_present=true", wait_text="Step 4:"),
    Shot("decode-quiz", "?decode_steps=2&decode_quiz=true&decode_quiz_kind=rule", wait_text="which will the target"),
    Shot(
        "decode-tree",
        "?decode_steps=3&decode_tree=true&decode_tree_topk=3&decode_tree_steps=4&decode_tree_nodes=10",
        wait_text="nodes verified in one pass",
    ),
    Shot(
        "decode-tree-present",
        "?decode_steps=3&decode_tree=true&decode_tree_topk=3&decode_tree_steps=4&decode_tree_nodes=10&decode_present=true",
        wait_text="nodes verified in one pass",
    ),
    Shot(
        "decode-rules",
        "?decode_steps=1&decode_mode=lossless&decode_rule=one-hot&decode_tau=4&decode_seed=22",
        wait_text="Step 1:",
        expand="The same step under each rule",
    ),
    Shot("race", "race", ("Start",), "Speculative decoding was"),
    Shot("sandbox", "sandbox?sandbox_preset=Five-token+draft%2C+the+third+rejected+first", wait_text="accepted"),
    Shot("lossless", "lossless", press=("Run the check",), wait_text="chi-square"),
    Shot("sweep", "sweep?sweep_taus=1-4&sweep_max_new=16&sweep_prompts=The+cat+sat+on+the", ("Run",), "Results"),
    Shot("lessons", "lessons?lessons_lesson=race", ("Run it",), "What the run showed"),
)


def own_models_shot() -> Shot:
    """Models on this computer: the embedded target's float32 GGUF with its 8-bit copy drafting (both in specviz's
    cache, where the sidebar looks), two steps."""
    from urllib.parse import urlencode

    from specviz.classroom.settings import ON_THIS_COMPUTER
    from specviz.models import embedded, quantize

    query = {
        "decode_preset": ON_THIS_COMPUTER,
        "decode_local_target": str(embedded.ensure_f32_gguf()),
        "decode_local_draft": str(quantize.embedded_quantized("Q4_0")),
        "decode_steps": 2,
    }
    return Shot("own-models", "?" + urlencode(query), wait_text="Step 2:")


def small(path: Path) -> None:
    """The PNG in 256 colours, optimised: a page's flat colours survive, and the file is a third."""
    from PIL import Image

    with Image.open(path) as image:
        image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


def take(url: str, out: Path, shots: tuple[Shot, ...], width: int, height: int) -> list[Path]:
    """Each shot as out/NAME.png; returns the files written."""
    from playwright.sync_api import sync_playwright

    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for shot in shots:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(f"{url}/{shot.query}")
            page.locator(IDLE).wait_for(timeout=300_000)
            for label in shot.press:
                # the label as a word: "Run" is not the Runtime help icon's "Runtime"
                page.get_by_role("button", name=re.compile(rf"\b{re.escape(label)}\b")).first.click()
                page.wait_for_timeout(500)
                page.locator(IDLE).wait_for(timeout=600_000)
            if shot.wait_text:
                page.get_by_text(shot.wait_text).first.wait_for(timeout=300_000)
            page.locator(IDLE).wait_for(timeout=300_000)
            target = page
            if shot.expand:
                target = page.locator("[data-testid='stExpander']").filter(has_text=shot.expand).first
                target.locator("summary").click()
                target.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
            page.wait_for_timeout(1500)  # charts settle
            path = out / f"{shot.name}.png"
            if shot.expand:
                target.screenshot(path=str(path))
            else:
                page.screenshot(path=str(path), full_page=shot.full_page)
            small(path)
            written.append(path)
            page.close()
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default=str(ROOT / "assets" / "screenshots"))
    parser.add_argument("--size", default="1280x720", help="viewport, WIDTHxHEIGHT")
    parser.add_argument("--only", nargs="*", default=None, help="shot names (default: all)")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: apt-get install chromium", file=sys.stderr)
        return 2
    width, height = (int(v) for v in args.size.lower().split("x"))
    everything = (*SHOTS, own_models_shot())
    shots = tuple(s for s in everything if args.only is None or s.name in args.only)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with serve(out / "streamlit.log") as url:
        files = take(url, out, shots, width, height)
    (out / "streamlit.log").unlink(missing_ok=True)
    for f in files:
        print(f"{f}  {f.stat().st_size / 1024:.0f} KiB")
    print(f"{len(files)} screenshots at {width}×{height} in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
