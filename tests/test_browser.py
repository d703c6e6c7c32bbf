"""One real-browser test: `streamlit run app.py` on a loopback port with the embedded pair,
driven by Playwright in Debian's headless Chromium (installed by .ci/run)."""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError("streamlit did not become healthy")


@pytest.fixture
def server(embedded_cache, tmp_path):
    port = _free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd = [
        sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
        "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false",
    ]  # fmt: skip
    with (tmp_path / "streamlit.log").open("w") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_healthy(url, proc)
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def test_step_in_a_real_browser(server, tmp_path):
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 2400})
        # a shared link to a sub-page, as the very first request the fresh server sees
        page.goto(f"{server}/about")
        page.get_by_role("heading", name="How speculative decoding works").wait_for(timeout=180_000)
        nav = page.locator('[data-testid="stSidebarNav"]')
        assert nav.get_by_text("Decode", exact=True).count() == 1
        assert nav.get_by_text("shared").count() == 0 and nav.get_by_text("app", exact=True).count() == 0
        page.goto(server)
        step = page.get_by_role("button", name="Step", exact=True)
        step.wait_for(timeout=180_000)  # the app loads the embedded pair before showing buttons
        page.get_by_text("Press Step").wait_for(timeout=180_000)
        step.click()
        page.locator(".js-plotly-plot").first.wait_for(timeout=180_000)
        page.get_by_text("Step 1:").first.wait_for(timeout=60_000)
        page.locator('[data-testid="stStatusWidget"]').wait_for(state="detached", timeout=60_000)
        shot = tmp_path / "decode.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        assert page.locator('[data-testid="stException"]').count() == 0
        assert page.get_by_text("Traceback").count() == 0
        assert page.locator(".sv-tgt").count() == 1  # the target's token is marked
        # settings survive a visit to another page (Streamlit drops undrawn widgets' values)
        seed = page.get_by_label("Seed")
        seed.fill("7")
        seed.press("Enter")
        page.get_by_text("Settings changed").wait_for(timeout=60_000)
        page.get_by_role("link", name="About").click()
        page.get_by_role("heading", name="How speculative decoding works").wait_for(timeout=60_000)
        page.get_by_role("link", name="Decode").click()
        page.get_by_label("Seed").wait_for(timeout=60_000)
        page.get_by_text("Settings changed").wait_for(timeout=60_000)
        assert page.get_by_label("Seed").input_value() == "7"
        browser.close()
