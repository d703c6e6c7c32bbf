"""One real-browser test: `streamlit run app.py` on a loopback port with the embedded pair,
driven by Playwright in Debian's headless Chromium (installed by .ci/run)."""

import contextlib
import os
import re
from pathlib import Path

import pytest

from benchmarks.appserver import CHROMIUM, CHROMIUM_ARGS, IDLE, serve
from tests.helpers import fake_pass_times

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def need_chromium() -> None:
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)


@pytest.fixture
def server(embedded_cache, tmp_path):
    """The app on the real embedded pair, its pass times decided (tests.helpers.FAKE_PASS_TIMES: the browser and the
    server share the cores, and what a page shows must not depend on how busy that made them)."""
    with serve(tmp_path / "streamlit.log", env=fake_pass_times(tmp_path)) as url:
        yield url


def test_step_in_a_real_browser(server, tmp_path):
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 2400})
        # a shared link to a sub-page, as the very first request the fresh server sees
        page.goto(f"{server}/about")
        page.get_by_role("heading", name="How speculative decoding works").wait_for(timeout=180_000)
        nav = page.locator('[data-testid="stSidebar"] [data-testid="stPageLink"]')
        nav.get_by_text("Decode", exact=True).first.wait_for(timeout=60_000)  # drawn by app.py, with the page
        assert nav.get_by_text("Decode", exact=True).count() == 1
        assert nav.get_by_text("shared").count() == 0 and nav.get_by_text("app", exact=True).count() == 0
        page.goto(server)
        step = page.get_by_role("button", name="Step", exact=True)
        step.wait_for(timeout=180_000)  # the app loads the embedded pair before showing buttons
        page.get_by_text("Press Step").wait_for(timeout=180_000)
        for _ in range(4):  # quick clicks during the cold first Step: each one taken, none dropped
            step.click()
            page.wait_for_timeout(100)
        page.locator(".js-plotly-plot").first.wait_for(timeout=180_000)
        page.get_by_text("Step 4:").first.wait_for(timeout=120_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        assert page.get_by_text("Step 5:").count() == 0
        shot = tmp_path / "decode.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.get_by_text("Traceback").count() == 0
        assert page.locator(".sv-tgt").count() == 1  # the target's token is marked
        page.get_by_role("button", name="Run to end").click()  # the last step may have no draft...
        progress = page.locator('[data-testid="stProgress"]')
        with contextlib.suppress(PlaywrightTimeout):  # on a fast machine the bar may come and go unseen
            progress.first.wait_for(timeout=10_000)
        progress.first.wait_for(state="detached", timeout=300_000)  # the whole run decoded (the picker was there
        page.get_by_text("Step shown (text").first.wait_for(
            timeout=180_000
        )  # since Step 2: it says nothing of the end)
        page.locator(IDLE).wait_for(timeout=60_000)
        assert page.locator(".gtitle", has_text="draft tokens accepted").count() == 1  # ...a q-vs-p chart stays
        # settings survive a visit to another page (Streamlit drops undrawn widgets' values)
        seed = page.get_by_label("Seed")
        for attempt in range(3):  # typed while a last rerun still draws, the box can take the server's value back
            page.wait_for_timeout(1000)
            page.locator(IDLE).wait_for(timeout=60_000)
            seed.fill("7")
            seed.press("Enter")
            try:
                page.get_by_text("Settings changed").wait_for(timeout=30_000)
                break
            except PlaywrightTimeout:
                assert attempt < 2, "the seed typed three times never took"
        page.get_by_role("link", name="About").click()
        page.get_by_role("heading", name="How speculative decoding works").wait_for(timeout=60_000)
        page.get_by_role("link", name="Decode").click()
        page.get_by_label("Seed").wait_for(timeout=60_000)
        page.get_by_text("Settings changed").wait_for(timeout=60_000)
        assert page.get_by_label("Seed").input_value() == "7"
        browser.close()


def test_quiz_then_a_corrupt_upload_in_a_real_browser(server, tmp_path):
    """Quiz mode shows nothing of r or the decisions before Reveal; a corrupt trace is one message,
    with no exception element, and the live run stays on the page."""
    import json

    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 2400}, accept_downloads=True)
        page.goto(server)
        page.get_by_text("Press Step").wait_for(timeout=180_000)
        page.get_by_text("Quiz mode").click()
        page.get_by_text("Will the target keep each token?").wait_for(timeout=60_000)
        page.get_by_role("button", name="Step", exact=True).click()
        page.locator(".gtitle", has_text="which will the target accept").wait_for(timeout=120_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        assert page.locator(".legendtext", has_text="r (uniform draw)").count() == 0
        assert page.locator(".sv-quiz").count() >= 1
        for hidden in (".sv-acc", ".sv-rej", ".sv-tgt"):
            assert page.locator(hidden).count() == 0, hidden
        assert page.get_by_text("Next token").count() == 0
        assert page.get_by_role("button", name="Trace as JSON").count() == 0
        assert page.get_by_text("up to the previous step").count() == 1
        page.screenshot(path=str(tmp_path / "quiz.png"), full_page=True)

        page.get_by_text("accept", exact=True).first.click()  # the class answers the first token
        page.locator(IDLE).wait_for(timeout=60_000)
        page.get_by_role("button", name="Reveal").click()
        page.get_by_text("Running score:").wait_for(timeout=60_000)
        page.locator(".legendtext", has_text="r (uniform draw)").wait_for(timeout=60_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        assert page.locator(".sv-mark").count() == 1  # its answer marked right or wrong in the text
        for plot in page.evaluate(CHART_TEXTS):  # the ✓/✗ row above the decisions covers nothing
            assert not overlapping(plot["texts"]) and not clipped(plot), (overlapping(plot["texts"]), clipped(plot))
        assert page.locator(".sv-tgt").count() == 1
        with page.expect_download() as download:
            page.get_by_role("button", name="Trace as JSON").click()
        data = json.loads(Path(download.value.path()).read_text())

        data["steps"][0]["q"][0] = "oops"
        page.locator('input[type="file"]').set_input_files(
            files=[{"name": "bad.json", "mimeType": "application/json", "buffer": json.dumps(data).encode()}]
        )
        message = page.get_by_text("is not a probability in [0, 1]")
        message.first.wait_for(timeout=60_000)
        assert message.count() == 1  # one message per rejected file, at the top of the page
        page.locator(IDLE).wait_for(timeout=60_000)
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.get_by_text("Traceback").count() == 0
        assert page.locator(".gtitle", has_text="Step 1:").count() == 1  # the live run is still drawn
        browser.close()


# Every text of every Plotly chart on the page: its box, its chart's box and its computed font size.
CHART_TEXTS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(plot => {
  const b = plot.getBoundingClientRect();
  const texts = Array.from(plot.querySelectorAll('svg text')).filter(t => (t.textContent || '').trim())
    .map(t => { const r = t.getBoundingClientRect();
      const size = parseFloat(getComputedStyle(t).fontSize);
      return {text: t.textContent, x: r.x, y: r.y, w: r.width, h: r.height, size}; })
    .filter(t => t.w > 0 && t.h > 0);
  return {box: {x: b.x, y: b.y, width: b.width, height: b.height}, texts};
})"""


def overlapping(texts: list[dict], tolerance: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes overlap (by more than `tolerance` pixels both ways)."""
    found = []
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            if min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"]) > tolerance and (
                min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"]) > tolerance
            ):
                found.append((a["text"], b["text"]))
    return found


def clipped(plot: dict, tolerance: float = 2.0) -> list[str]:
    """Texts that reach outside their chart's box (cut off on screen)."""
    box = plot["box"]
    return [
        t["text"]
        for t in plot["texts"]
        if t["x"] < box["x"] - tolerance
        or t["y"] < box["y"] - tolerance
        or t["x"] + t["w"] > box["x"] + box["width"] + tolerance
        or t["y"] + t["h"] > box["y"] + box["height"] + tolerance
    ]


def inside(box: dict | None, width: int, height: int) -> bool:
    return (
        box is not None
        and box["x"] >= 0
        and box["y"] >= 0
        and box["x"] + box["width"] <= width + 1
        and (box["y"] + box["height"] <= height + 1)
    )


def test_a_projector_sees_no_file_names_and_one_step_on_one_screen(server):
    """1280×720: the first second after a server start shows no raw file names as navigation
    (Streamlit's automatic pages/ menu, which showed 'app', 'shared', ... before), and in
    presentation view the marked text, the q-against-p chart with its decisions and the next
    token's chart are all inside the viewport, without scrolling."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(server, wait_until="commit")
        automatic = set()
        for _ in range(40):  # the first four seconds, ten looks a second
            automatic |= set(page.locator('[data-testid="stSidebarNav"] span').all_inner_texts())
            page.wait_for_timeout(100)
        assert automatic == set()
        step = page.get_by_role("button", name="Step", exact=True)
        step.wait_for(timeout=180_000)
        page.get_by_text("Press Step").wait_for(timeout=180_000)
        step.click()
        page.get_by_text("Step 1:").first.wait_for(timeout=180_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        page.get_by_text("Presentation view").click()
        page.get_by_text("Next token").first.wait_for(timeout=60_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        page.wait_for_timeout(1000)  # charts settle
        assert page.evaluate("window.scrollY") == 0
        charts = page.locator(".stPlotlyChart")
        assert inside(charts.nth(0).bounding_box(), 1280, 720)  # q against p, every decision above it
        assert inside(charts.nth(1).bounding_box(), 1280, 720)  # where the next token came from
        assert inside(page.locator(".sv-box").first.bounding_box(), 1280, 720)  # the marked text
        decisions = page.evaluate(
            "Array.from(document.querySelectorAll('.stPlotlyChart')[0].querySelectorAll('.annotation-text'))"
            ".map(e => e.textContent || '')"
        )
        assert decisions and all(("accepted" in d) or ("rejected" in d) or ("not reached" in d) for d in decisions)
        plots = page.evaluate(CHART_TEXTS)
        for plot in plots[:2]:  # the two charts a room reads: every label at 18 px or more, none cut, none covered
            small = [(t["text"], t["size"]) for t in plot["texts"] if t["size"] < 18]
            assert not small and not clipped(plot) and not overlapping(plot["texts"]), (small, clipped(plot))
        for plot in plots:
            assert not overlapping(plot["texts"])
        assert page.locator(".sv-legend").count() == 1  # the key of the marks, on the projector too
        assert page.locator('[data-testid="stException"]').count() == 0

        # normal view on the same 720-pixel screen: after Step the chart and its decisions are on screen
        page.get_by_text("Presentation view").click()
        page.get_by_text("Running metrics").wait_for(timeout=60_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        page.get_by_role("button", name="Step", exact=True).click()
        page.get_by_text("Step 2:").first.wait_for(timeout=120_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        assert page.evaluate("window.scrollY") == 0
        assert inside(page.locator(".stPlotlyChart").nth(0).bounding_box(), 1280, 720)
        plots = page.evaluate(CHART_TEXTS)
        for plot in plots:  # every chart of the page, below the fold too: no label over another, none cut
            assert not overlapping(plot["texts"]) and not clipped(plot), (overlapping(plot["texts"]), clipped(plot))
        # every column of the step table whole: nothing scrolls or is cut sideways
        table = page.locator('[data-testid="stTable"]').first
        widths = table.evaluate("e => [e.scrollWidth, e.clientWidth]")
        assert widths[0] <= widths[1] + 1, widths
        headers = table.locator("th").all_inner_texts()
        assert {"token", "q", "p", "p/q", "r", "decision"} <= {h.strip() for h in headers}
        browser.close()


def readable(plot: dict, size: float = 18) -> tuple[list, list, list]:
    """(texts under `size` px, pairs of texts that overlap, texts cut off) of one chart."""
    small = [(t["text"], t["size"]) for t in plot["texts"] if t["size"] < size]
    return small, overlapping(plot["texts"]), clipped(plot)


def test_presentation_views_read_on_a_projector(server):
    """1280×720 in presentation view: the step chart at τ = 16, the τ sweep and "Is it lossless?" on the real
    models: every chart label 18 px or more, none over another, none cut off."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    prompt = "sweep_prompts=Write+a+Python+function+that+reverses+a+list."
    pages = (
        ("?decode_steps=2&decode_present=true&decode_tau=16", None, "Step 2:", 1),
        (
            f"sweep?sweep_taus=1-3&sweep_max_new=12&sweep_present=true&{prompt}",
            re.compile(r"^Run \d+ of \d+ units"),
            re.compile("^Measured: "),
            2,
        ),
        (
            "lossless?lossless_source=Real+models+%28first+step%29&lossless_trials_real=20&lossless_present=true",
            re.compile("^Run the check"),
            re.compile("^lossless, block: "),
            5,
        ),
    )
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for query, press, wait, charts in pages:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(f"{server}/{query}")
            page.locator(IDLE).wait_for(timeout=300_000)
            if press:  # the page's own button, once it is drawn (not a button of the page shown before it)
                button = page.get_by_role("button", name=press)
                button.wait_for(timeout=300_000)
                button.click()
                page.wait_for_timeout(500)
                page.locator(IDLE).wait_for(timeout=300_000)
            page.get_by_text(wait).first.wait_for(timeout=300_000)
            page.locator(IDLE).wait_for(timeout=120_000)
            page.locator(".js-plotly-plot").nth(charts - 1).wait_for(timeout=120_000)  # drawn, on a busy machine too
            page.wait_for_timeout(1500)  # charts settle
            plots = page.evaluate(CHART_TEXTS)
            assert len(plots) >= charts, query
            for plot in plots[:charts]:
                small, over, cut = readable(plot)
                assert not small and not over and not cut, (query, small, over, cut)
            assert page.locator('[data-testid="stException"]').count() == 0
            page.close()
        browser.close()


def test_a_clicker_steps_and_goes_back_and_a_step_saves_as_a_1920_by_1080_picture(server, tmp_path):
    """Decode with the keyboard, as a presenter's clicker drives it: → and PageDown press Step, ← and PageUp press
    Back, also right after a toggle was clicked; in a text box the keys stay the text box's. Then the step's 16:9
    slide, saved by the chart's own camera button: a 1920×1080 PNG."""
    import struct

    need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720}, accept_downloads=True)
        page.goto(server)
        page.get_by_text("Press Step").wait_for(timeout=180_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        box = page.get_by_placeholder("mat and then slept")  # the sidebar's "Your draft"
        box.click()
        box.type("mat")
        page.keyboard.press("ArrowLeft")  # the cursor moves: no Back
        page.keyboard.press("PageDown")  # and no Step
        page.wait_for_timeout(1500)
        page.locator(IDLE).wait_for(timeout=60_000)
        assert page.get_by_text("Press Step").count() == 1 and page.get_by_text("Step 1:").count() == 0
        page.get_by_text("Presentation view").first.click()  # the focus on a toggle: the keys still step
        page.locator(IDLE).wait_for(timeout=60_000)
        page.keyboard.press("ArrowRight")
        page.get_by_text("Step 1:").first.wait_for(timeout=180_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        page.keyboard.press("PageDown")
        page.get_by_text("Step 2:").first.wait_for(timeout=120_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        page.keyboard.press("ArrowLeft")
        page.get_by_text("Step 2:").first.wait_for(state="detached", timeout=60_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        assert page.get_by_text("Step 1:").count() >= 1
        page.keyboard.press("PageUp")
        page.get_by_text("Press Step").wait_for(timeout=60_000)  # back before the first step
        page.locator(IDLE).wait_for(timeout=60_000)
        assert page.locator('[data-testid="stException"]').count() == 0

        page.keyboard.press("ArrowRight")
        page.get_by_text("Step 1:").first.wait_for(timeout=120_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        page.get_by_text("This step as a 16:9 picture for a slide").click()
        slide = page.locator('[data-testid="stExpander"]').filter(has_text="16:9").locator(".stPlotlyChart")
        slide.wait_for(timeout=60_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        slide.scroll_into_view_if_needed()
        slide.hover()
        with page.expect_download() as saved:
            slide.locator('[data-title="Download plot as a PNG"]').first.click()
        png = Path(saved.value.path()).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (1920, 1080)
        browser.close()


def choose(page, label: str, option: str) -> None:
    """Pick the option starting with `option` in the selectbox labelled `label`, as a user does: open its list,
    click the option; then wait until the box shows it and the app has run again."""
    box = page.locator('[data-testid="stSelectbox"]', has=page.get_by_text(label, exact=True)).first
    box.scroll_into_view_if_needed()
    for attempt in range(3):  # a click while the app still reruns can land on the box before it is redrawn
        page.locator(IDLE).wait_for(timeout=120_000)
        box.locator('[role="combobox"]').first.click()
        try:
            page.get_by_role("option").filter(has_text=option).first.click(timeout=10_000)
            break
        except Exception:
            assert attempt < 2, f"no option {option!r} under {label!r}"
            page.keyboard.press("Escape")
    field = box.locator('[role="combobox"]').first  # the box shows its value in a text field
    for _ in range(120):
        if field.input_value().startswith(option):
            break
        page.wait_for_timeout(500)
    assert field.input_value().startswith(option), field.input_value()
    page.wait_for_timeout(500)
    page.locator(IDLE).wait_for(timeout=120_000)


def test_a_gguf_pair_found_on_this_computer_is_picked_and_stepped_in_a_real_browser(embedded_cache, tmp_path):
    """Issue 43: a folder named by $SPECVIZ_MODELS_DIR holds the embedded target's float32 GGUF and an 8-bit copy. In
    the sidebar the user picks "Models on this computer", the float32 file as target and the 8-bit one as draft, and
    presses Step: the step's chart labels p and q with each file's quantization, no error on the page."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    from specviz.classroom.settings import ON_THIS_COMPUTER
    from specviz.models import embedded, llamacpp, quantize

    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")
    folder = tmp_path / "models"
    folder.mkdir()
    (folder / "smol.F32.gguf").symlink_to(embedded.ensure_f32_gguf())
    (folder / "smol.Q8_0.gguf").symlink_to(quantize.embedded_quantized("Q8_0"))
    env = {"SPECVIZ_MODELS_DIR": str(folder), "HOME": str(tmp_path / "home")}  # no other place holds a model
    with serve(tmp_path / "streamlit.log", env=env) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(url)
        page.get_by_text("Press Step").wait_for(timeout=180_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        choose(page, "Pair", ON_THIS_COMPUTER)
        target = page.locator('[data-testid="stSelectbox"]', has=page.get_by_text("Target (p), found on this computer"))
        target.wait_for(timeout=60_000)
        choose(page, "Target (p), found on this computer", "F32 · 0.13 B · 539.8 MB · smol.F32.gguf")
        choose(page, "Draft (q): the files whose vocabulary matches, smaller than the target", "Q8_0 · 0.13 B")
        page.get_by_text("files fit this target as drafts").first.wait_for(timeout=60_000)  # and what the pair needs
        page.get_by_role("button", name="Step", exact=True).click()
        page.locator(".js-plotly-plot").first.wait_for(timeout=180_000)
        page.get_by_text("Step 1:").first.wait_for(timeout=120_000)
        page.locator(IDLE).wait_for(timeout=60_000)
        legend = page.locator(".js-plotly-plot .legendtext").evaluate_all("els => els.map(e => e.textContent)")
        assert {"q (draft, Q8_0)", "p (target, F32)"} <= set(legend), legend
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.get_by_text("Traceback").count() == 0
        page.screenshot(path=str(tmp_path / "own-pair.png"), full_page=True)
        browser.close()


# In presentation view: the boxes a room must see of the step on screen (the prompt, the step's tokens and the
# numbers under them, the step chart's decisions and legend), each as the DOM lays it out.
STEP_BOXES = """() => {
  const box = e => { const r = e.getBoundingClientRect(); return {x: r.x, y: r.y, width: r.width, height: r.height,
    text: (e.textContent || '').trim()}; };
  const chart = document.querySelectorAll('.js-plotly-plot')[0];
  return {
    prompt: Array.from(document.querySelectorAll('.sv-prompt')).map(box),
    tokens: Array.from(document.querySelectorAll('.sv-acc, .sv-rej, .sv-nr, .sv-tgt, .sv-num')).map(box),
    decisions: Array.from(chart.querySelectorAll('.annotation-text')).map(box),
    legend: Array.from(chart.querySelectorAll('.legend')).map(box),
  };
}"""


def test_a_projector_sees_the_prompt_the_steps_tokens_every_decision_and_the_legend_at_any_tau(server):
    """Issue 55.1 and 55.2, at 1280×720 in presentation view with q, p and r under the tokens: Decode after three
    Steps at τ = 4 and at the largest τ the sidebar allows (16), and the Sandbox's five-token exercise at τ = 5 and at
    its largest τ (8). The prompt (on Decode), the step's own tokens and the numbers under them, every decision above
    the step chart and its legend are inside the viewport without scrolling, and no two decisions' boxes overlap (nor
    any two texts of the chart), measured from the DOM."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    from specviz.classroom.settings import FIRST_PROMPT, SETTINGS

    largest = SETTINGS["decode_tau"].allowed[1]
    five = "sandbox?sandbox_preset=Five-token+draft%2C+the+third+rejected+first&sandbox_present=true"
    pages = [(f"?decode_present=true&decode_figures=true&decode_tau={tau}", 3) for tau in (4, largest)]
    pages += [(five, 0), (f"{five}&sandbox_tau=8", 0)]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for query, steps in pages:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.goto(f"{server}/{query}")
            page.locator(IDLE).wait_for(timeout=300_000)
            for n in range(1, steps + 1):  # three Steps, as a lecturer clicks them
                page.get_by_role("button", name="Step", exact=True).click()
                page.get_by_text(f"Step {n}:").first.wait_for(timeout=180_000)
                page.locator(IDLE).wait_for(timeout=120_000)
            page.locator(".annotation-text").first.wait_for(timeout=120_000)
            page.wait_for_timeout(1500)  # charts settle
            assert page.evaluate("window.scrollY") == 0
            seen = page.evaluate(STEP_BOXES)
            seen["prompt"] = [b for b in seen["prompt"] if b["text"]]  # Decode's prompt; the Sandbox's context is empty
            assert [b["text"] for b in seen["prompt"]] == ([FIRST_PROMPT] if steps else [])
            assert seen["tokens"] and seen["decisions"] and len(seen["legend"]) == 1, (query, seen)
            for name in ("prompt", "tokens", "decisions", "legend"):
                outside = [b["text"] for b in seen[name] if not inside(b, 1280, 720)]
                assert not outside, (query, name, outside)
            boxes = [{**b, "w": b["width"], "h": b["height"]} for b in seen["decisions"]]
            assert not overlapping(boxes), (query, overlapping(boxes))
            chart = page.evaluate(CHART_TEXTS)[0]
            assert not overlapping(chart["texts"]) and not clipped(chart), (query, overlapping(chart["texts"]))
            assert page.locator('[data-testid="stException"]').count() == 0
            page.close()
        browser.close()


def test_across_drafts_for_a_found_gguf_target_in_a_real_browser(tmp_path):
    """Issue 53.1: tiny GGUF files in $SPECVIZ_MODELS_DIR (test_app_sweep.py's tiny_ggufs: a target, its 8-bit copy, a
    one-layer model, one of another vocabulary). On the τ sweep page the user picks "Models on this computer" and the
    target, opens "Across drafts", presses one button: the recommendation names the 8-bit copy at τ = 3 (every step
    τ + 1 = 4 tokens in 3 · 1 + 16 = 19 ms against 40 ms alone: 2.11×), and llama-server's line runs that file at that
    τ; the file of another vocabulary is listed with its reason. Pictures at 1280×720 and 1920×1080."""
    need_chromium()
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    from specviz.classroom.settings import ON_THIS_COMPUTER
    from specviz.models import gguf, llamacpp, quantize
    from tests.helpers import write_tiny_gguf

    if not llamacpp.available():
        pytest.skip("llama.cpp is not installed (make llama)")
    folder = tmp_path / "models"
    folder.mkdir()
    target = write_tiny_gguf(folder / "target.gguf")
    copy = quantize.quantized(target, "Q8_0", folder)
    write_tiny_gguf(folder / "small.gguf", seed=1, layers=1)
    write_tiny_gguf(folder / "other.gguf", seed=2, layers=1, renamed=300)
    env = {
        "SPECVIZ_MODELS_DIR": str(folder),
        "SPECVIZ_CACHE_DIR": str(tmp_path / "cache"),  # specviz's own cache: empty
        "HOME": str(tmp_path / "home"),  # no other place holds a model, whatever this machine's environment names
        "HF_HOME": str(tmp_path / "home" / "hf"),
        "HF_HUB_CACHE": str(tmp_path / "home" / "hf" / "hub"),
        "XDG_CACHE_HOME": str(tmp_path / "home" / "cache"),
        "OLLAMA_MODELS": str(tmp_path / "home" / "ollama"),
        **fake_pass_times(tmp_path),
    }
    info = gguf.read_info(target)
    label = f"F32 · {info.parameters / 1e9:.2f} B · {gguf.format_bytes(info.file_bytes)} · target.gguf"
    query = f"sweep?sweep_preset={ON_THIS_COMPUTER.replace(' ', '+')}&sweep_taus=1-3&sweep_max_new=8"
    with serve(tmp_path / "streamlit.log", env=env) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(f"{url}/{query}")
        page.get_by_text("Target (p), found on this computer").first.wait_for(timeout=180_000)
        page.locator(IDLE).wait_for(timeout=120_000)
        choose(page, "Target (p), found on this computer", label)
        panel = page.locator("[data-testid='stExpander']").filter(has_text="Across drafts").first
        panel.locator("summary").click()
        panel.get_by_text("other.gguf").first.wait_for(timeout=60_000)
        assert panel.get_by_text("token 300: '▁t41' in the target, '▁x' in the draft").count() == 1
        said = panel.locator("[data-testid='stAlertContentSuccess']").filter(has_text=" at τ = ").first
        started = panel.locator("[data-testid='stProgress'], [data-testid='stAlertContentSuccess']").first
        for attempt in range(3):  # a click while the app still reruns can land on the button before it is redrawn
            page.locator(IDLE).wait_for(timeout=120_000)
            panel.get_by_role("button", name="Benchmark these drafts").click()
            try:
                started.wait_for(timeout=30_000)
                break
            except PlaywrightTimeout:
                assert attempt < 2, f"the benchmark never started; the panel reads:\n{panel.inner_text()[-2000:]}"
        try:
            said.wait_for(timeout=300_000)
        except PlaywrightTimeout:  # what the panel said instead
            raise AssertionError(f"no recommendation; the panel reads:\n{panel.inner_text()[-4000:]}") from None
        page.locator(IDLE).wait_for(timeout=120_000)
        assert said.inner_text().splitlines()[-1] == (  # after its icon's name
            "target.Q8_0.gguf at τ = 3: 2.11× the target alone's speed here (α = 1.00, 4.00 tokens a step; c = 0.10, "
            "v(4) = 1.60)."
        )
        server = panel.locator("[data-testid='stCode']").filter(has_text="llama-server").first.inner_text()
        assert " ".join(server.split()) == (
            f"llama-server -m {target} --spec-type draft-simple --spec-draft-model {copy} --spec-draft-n-max 3 "
            "--spec-draft-n-min 0 --spec-draft-p-min 0.00"
        )
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.get_by_text("Traceback").count() == 0
        for width, height in ((1280, 720), (1920, 1080)):
            page.set_viewport_size({"width": width, "height": height})
            page.wait_for_timeout(1500)  # the chart redraws at the new width
            for part, shown in (("recommendation", said), ("table", panel.locator(".js-plotly-plot").first)):
                shown.scroll_into_view_if_needed()
                page.screenshot(path=str(tmp_path / f"across-drafts-{part}-{width}x{height}.png"))
        browser.close()
