"""What a lecturer sees at 1280×720 (issue 65.6, 65.9), in Debian's headless Chromium: the note on the textbook's
draft beside the chart in presentation view, a lesson's chart on screen, no Plotly toolbar over a chart's title, no
focus ring left on the row of buttons after a click, and the slide's camera under the picture, clear of it."""

import os
import re

import pytest

from benchmarks.appserver import CHROMIUM, CHROMIUM_ARGS, IDLE, ROOT, serve
from tests.helpers import fake_pass_times
from tests.test_browser import need_chromium

pytestmark = [pytest.mark.browser, pytest.mark.slow]
TYPED = "?decode_prompt=The%20cat%20sat%20on%20the&decode_typed=mat%20and%20then%20slept&decode_present=true"


def settle(page) -> None:
    page.wait_for_timeout(1500)
    page.locator(IDLE).wait_for(timeout=300_000)


def on_screen(box) -> bool:
    return box is not None and box["y"] >= 0 and box["y"] + 40 <= 720 and box["x"] + box["width"] <= 1280


def test_a_lecturer_at_1280_by_720_reads_the_note_the_lessons_chart_and_every_title(embedded_cache, tmp_path):
    need_chromium()
    from playwright.sync_api import sync_playwright

    env = fake_pass_times(tmp_path)
    env["PYTHONPATH"] += os.pathsep + str(ROOT)  # this checkout's specviz, before an installed one
    with serve(tmp_path / "streamlit.log", env=env) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(f"{url}/{TYPED}")  # the book's draft, stepped on a projector: its note beside the chart
        main = page.locator('[data-testid="stMain"]')  # (the hidden sidebar has a button of that name too)
        main.get_by_role("button", name=re.compile("Step with your draft")).wait_for(timeout=300_000)
        settle(page)
        main.get_by_role("button", name=re.compile("Step with your draft")).click()
        page.get_by_text("Step 1:").first.wait_for(timeout=300_000)
        settle(page)
        note = page.locator('[data-testid="stAlertContainer"]').filter(has_text="mat and then slept").first
        assert on_screen(note.bounding_box()), note.bounding_box()
        assert re.search(r"Why no rejection\?|Where r decided:", note.inner_text())
        page.screenshot(path=str(tmp_path / "typed.png"))

        page.goto(f"{url}/lessons?lessons_lesson=tau-policy&lessons_present=true")  # a lesson's chart on screen
        page.get_by_role("button", name="Run it").wait_for(timeout=300_000)
        settle(page)
        page.get_by_role("button", name="Run it").click()
        page.get_by_text("What the run showed").first.wait_for(timeout=300_000)
        settle(page)
        assert on_screen(page.locator(".stPlotlyChart").first.bounding_box())

        page.goto(f"{url}/?decode_steps=2")  # the pointer on a chart's title: no toolbar over it
        page.get_by_text("Step 2:").first.wait_for(timeout=300_000)
        settle(page)
        chart = page.locator(".stPlotlyChart").first
        chart.scroll_into_view_if_needed()
        title = chart.locator(".gtitle").bounding_box()
        page.mouse.move(title["x"] + title["width"] - 5, title["y"] + 5)
        page.wait_for_timeout(800)
        bars = [b for b in chart.locator(".modebar").all() if b.is_visible()]
        assert not bars  # it covered the title where the pointer rested
        page.get_by_role("button", name="Step", exact=True).click()  # a click leaves no focus ring on the row
        page.get_by_text("Step 3:").first.wait_for(timeout=300_000)
        settle(page)
        ring = page.evaluate(
            "() => { const s = getComputedStyle(document.activeElement);"
            " return [document.activeElement.tagName, s.outlineStyle, s.boxShadow]; }"
        )
        assert ring[0] != "BUTTON" or (ring[1] == "none" and ring[2] == "none"), ring

        page.get_by_text("This step as a 16:9 picture for a slide").click()  # the slide keeps its camera, under it
        slide = page.locator(".st-key-decode_slide_chart .stPlotlyChart")
        slide.wait_for(timeout=60_000)
        settle(page)
        slide.scroll_into_view_if_needed()
        slide.hover()
        camera = slide.locator('[data-title="Download plot as a PNG"]').first
        camera.wait_for(state="visible", timeout=10_000)
        picture, button = slide.locator(".main-svg").first.bounding_box(), camera.bounding_box()
        assert button["y"] >= picture["y"] + picture["height"] - 1, (button, picture)  # under it, not over it
        page.screenshot(path=str(tmp_path / "slide.png"))
        assert page.locator('[data-testid="stException"]').count() == 0
        browser.close()
