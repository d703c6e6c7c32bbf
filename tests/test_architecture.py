"""The library's shape: no import cycle inside specviz/ (imports inside functions and under
TYPE_CHECKING count too), no private name imported from another module, no Streamlit."""

from __future__ import annotations

import ast
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "specviz"


def imports() -> dict[str, list[tuple[str, list[str]]]]:
    """Module name → [(imported module, names imported from it)], from every import statement."""
    modules = {p.relative_to(LIBRARY.parent).with_suffix("").as_posix().replace("/", "."): p
               for p in LIBRARY.rglob("*.py")}  # fmt: skip
    found: dict[str, list[tuple[str, list[str]]]] = {m: [] for m in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [a.name for a in node.names]
                subs = [f"{node.module}.{n}" for n in names if f"{node.module}.{n}" in modules]
                found[module] += [(s, []) for s in subs] or [(node.module, names)]
            elif isinstance(node, ast.Import):
                found[module] += [(a.name, []) for a in node.names]
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    out: list[list[str]] = []

    def walk(path: list[str]) -> None:
        for nxt in sorted(graph.get(path[-1], ())):
            if nxt == path[0]:
                out.append(path)
            elif nxt not in path and nxt > path[0]:
                walk([*path, nxt])

    for start in sorted(graph):
        walk([start])
    return out


def test_no_import_cycle_inside_the_library():
    found = imports()
    graph = {m: {t for t, _ in targets if t in found and t != "specviz"} for m, targets in found.items()}
    graph.pop("specviz", None)  # the package's __init__ re-exports the public API from below
    assert cycles(graph) == []


def test_a_cycle_would_be_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_private_name_crosses_modules_and_no_streamlit():
    for module, targets in imports().items():
        for target, names in targets:
            assert target.split(".")[0] != "streamlit", f"{module} imports streamlit"
            private = [n for n in names if n.startswith("_") and target.startswith("specviz")]
            assert not private, f"{module} imports {private} from {target}"
