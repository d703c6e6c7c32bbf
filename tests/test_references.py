"""Every reference resolves inside the repository: no file points at documents beside it (a user who
clones the project has only the project), every cited docs/… file exists, and every section cited as
docs/X.md, "Heading" is a heading of that file."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER, DOCS = "shared", ("SPEC", "DESIGN", "STYLE")  # the documents beside the repository, named in pieces so that
OUTSIDE = re.compile(rf"(?<![\w.-]){FOLDER}/|\b(?:{'|'.join(DOCS)})\.md\b")  # this file does not point outside
CITED = re.compile(r'docs/([a-z_]+\.md)(?:,? (?:"|\\")([^"\\]+)(?:"|\\"))?')
LINK = re.compile(r"\]\(([^)\s]+)\)")


def tracked_text() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / n for n in names if n.endswith((".py", ".md", ".toml", ".txt", ".cfg", ".yml", ".yaml", "run"))]


def headings(doc: Path) -> set[str]:
    return {line.lstrip("#").strip() for line in doc.read_text().splitlines() if line.startswith("#")}


def test_nothing_points_outside_the_repository():
    found = []
    for p in (p for p in tracked_text() if p.name != Path(__file__).name):
        lines = p.read_text(errors="replace").splitlines()
        found += [f"{p.relative_to(ROOT)}:{i}" for i, line in enumerate(lines, 1) if OUTSIDE.search(line)]
    assert found == []
    for p in tracked_text():  # markdown links stay inside the repository
        if p.suffix != ".md":
            continue
        for target in LINK.findall(p.read_text()):
            if target.startswith(("http://", "https://", "#", "mailto:")):
                continue
            resolved = (p.parent / target.split("#")[0]).resolve()
            assert resolved.is_relative_to(ROOT), f"{p.relative_to(ROOT)} links {target}, outside the repository"


def test_every_cited_document_and_section_exists():
    cited = 0
    for p in tracked_text():
        for name, wrapped in CITED.findall(p.read_text(errors="replace")):
            section = " ".join(wrapped.split())  # a citation may wrap across lines
            doc = ROOT / "docs" / name
            assert doc.exists(), f"{p.relative_to(ROOT)} cites docs/{name}, which does not exist"
            if section and not section.startswith(("step", "steps")):
                assert section in headings(doc), (
                    f'{p.relative_to(ROOT)} cites docs/{name}, "{section}": no such heading'
                )
            cited += 1
    assert cited > 30  # the code and pages cite the algorithm's document throughout


def test_a_reference_outside_would_be_found():
    spec = "SPEC" + ".md"  # spelled in two pieces, so that this file does not point outside itself
    assert OUTSIDE.search(f"see ../{'shared'}/{spec}") and OUTSIDE.search(f"({spec}, step 3)")
    assert CITED.findall('docs/algorithm.md, "Verify cost"') == [("algorithm.md", "Verify cost")]
    notes = "shared" + "/notes/gguf-drafts.md"  # a note beside the repository, cited bare or as a path
    assert OUTSIDE.search(f"(docs and the note {notes} give sizes)") and OUTSIDE.search(f"/work/{notes}")
    assert not OUTSIDE.search(f"pages/_{FOLDER}.py and specviz/_{FOLDER}/x.py")  # a name of the project's own
