"""specviz as an installable library: the wheel carries the shipped draft and a `specviz` command,
and decodes from outside the checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers import save_tiny

pytestmark = [pytest.mark.slow, pytest.mark.numeric]  # builds a wheel, starts fresh interpreters; reads no clock
ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_decodes_outside_the_checkout(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
        timeout=600,
    )
    wheel = next((tmp_path / "dist").glob("specviz-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for part in ("draft.json", "draft.safetensors", "README.md"):
        assert f"specviz/assets/draft/{part}" in names
    assert "specviz/cli.py" in names and not any(n.startswith(("tests/", "pages/", "scripts/")) for n in names)
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    target, draft = save_tiny(tmp_path / "target", seed=0), save_tiny(tmp_path / "draft", seed=1, layers=1)
    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "HF_HUB_OFFLINE": "1"}
    where = subprocess.run(
        [sys.executable, "-c", "import specviz, specviz.drafts as d; print(specviz.__file__); print(d.DEFAULT_DIR)"],
        capture_output=True,
        text=True,
        cwd=away,
        env=env,
        check=True,
    )
    module, draft_dir = where.stdout.split()
    assert module.startswith(str(site)) and Path(draft_dir) == site / "specviz" / "assets" / "draft"
    out = subprocess.run(
        [
            str(site / "bin" / "specviz"),
            "--prompt",
            "w1 w2 w3",
            "--target",
            target,
            "--draft",
            draft,
            "--max-new-tokens",
            "6",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=away,
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert len(json.loads(out.stdout)["new_tokens"]) == 6
