"""The README and docs point at files that exist, and name commands the Makefile and the package define."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_link_and_image_points_at_something(doc):
    for target in LINK.findall(doc.read_text()):
        if target.startswith(("http://", "https://", "#", "mailto:")):
            continue
        path = (doc.parent / target.split("#")[0]).resolve()
        assert path.exists(), f"{doc.name} links {target}, which does not exist"


def test_the_readme_is_short_and_shows_the_app():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(images) >= 6 and all(i.startswith("assets/screenshots/") for i in images)
    total = sum((ROOT / i).stat().st_size for i in images)
    assert total <= 3 * 1024 * 1024  # small pictures: 3 MB together at most
    assert not re.search(r"\bsession \d", text, re.IGNORECASE)  # measurements are dated, not numbered rounds


def test_the_readmes_commands_are_the_ones_the_makefile_and_cli_define():
    text = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"(?m)^([a-z][a-z-]*):", makefile))
    for target in re.findall(r"`?make ([a-z-]+)`?", text):
        assert target in targets, f"README names make {target}, which the Makefile does not define"
    from specviz.cli import build_parser, build_sweep_parser

    commands = re.findall(r"(?m)^\.venv/bin/python -m specviz (.+)$", text)
    assert len(commands) == 2
    for command in commands:
        args = shlex.split(command)
        if args[0] == "sweep":
            build_sweep_parser().parse_args(args[1:])  # exits (SystemExit) on an unknown flag
        else:
            build_parser().parse_args(args)


WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
NUMBER_WORDS = {w: i for i, w in enumerate((WORDS + " seventeen eighteen nineteen twenty").split())}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_counts_of_things_the_code_defines_are_the_codes(doc):
    """A count in the docs comes from the code or is not written: "fifteen lessons" beside an app with 17
    was wrong twice over. Lessons, pages and race presets, in figures or in words."""
    from specviz.analysis.race import PRESETS as RACES
    from specviz.classroom.lessons import LESSONS

    pages = len(re.findall(r"st\.Page\(", (ROOT / "app.py").read_text()))
    counts = {"lessons": len(LESSONS), "questions": len(LESSONS), "pages": pages, "race presets": len(RACES)}
    for number, thing in re.findall(
        r"\b(\d+|[a-z]+) (lessons|questions|pages|race presets)\b", doc.read_text().lower()
    ):
        value = int(number) if number.isdigit() else NUMBER_WORDS.get(number)
        if value is not None:
            assert value == counts[thing], f"{doc.name} says {number} {thing}; the code has {counts[thing]}"
