"""The library's shape: no import cycle inside specviz/ (imports inside functions and under
TYPE_CHECKING count too), no private name imported from another module, no Streamlit."""

from __future__ import annotations

import ast
import re
from pathlib import Path

LIBRARY = Path(__file__).resolve().parents[1] / "specviz"


def imports() -> dict[str, list[tuple[str, list[str]]]]:
    """Module name → [(imported module, names imported from it)], from every import statement."""
    modules = {
        p.relative_to(LIBRARY.parent).with_suffix("").as_posix().replace("/", "."): p for p in LIBRARY.rglob("*.py")
    }
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


def package_graph(found: dict[str, list[tuple[str, list[str]]]]) -> dict[str, set[str]]:
    """specviz's packages and top-level modules (specviz.loading, specviz.server, …) → those each imports."""

    def unit(module: str) -> str:
        return ".".join(module.split(".")[:2])

    graph: dict[str, set[str]] = {}
    for module, targets in found.items():
        if module in ("specviz", "specviz.__init__"):
            continue  # the public API re-exports from below
        here = unit(module)
        graph.setdefault(here, set()).update(
            unit(t) for t, _ in targets if t.startswith("specviz.") and unit(t) != here
        )
    return graph


def test_no_import_cycle_between_the_librarys_packages():
    """Not only modules: no package imports one that imports it back (loading and server once did, through the class
    policy that lived in server/)."""
    assert cycles(package_graph(imports())) == []


def test_a_package_cycle_would_be_found():
    found = {"specviz.loading.x": [("specviz.server.y", [])], "specviz.server.z": [("specviz.loading", [])]}
    assert cycles(package_graph(found)) == [["specviz.loading", "specviz.server"]]


def test_a_cycle_would_be_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_private_name_crosses_modules_and_no_streamlit():
    for module, targets in imports().items():
        for target, names in targets:
            assert target.split(".")[0] != "streamlit", f"{module} imports streamlit"
            private = [n for n in names if n.startswith("_") and target.startswith("specviz")]
            assert not private, f"{module} imports {private} from {target}"


# The layers, bottom to top (docs/architecture.md): a module imports only from lower layers or from its own
# package. Package __init__ files count as their package's modules; the root package's __init__ is the public
# API, at the top of the library. Nothing is exempt.
LAYERS = {
    "specviz.errors": 0,
    "specviz.bounded": 0,  # imports nothing of specviz: the caller names the error it raises
    "specviz.limits": 1,
    "specviz.class_policy": 1,  # the class policy: a plain record every layer may be handed
    "specviz.pieces": 1,  # where work may let a server's other work go in between: marked from models up
    "specviz.models": 2,
    "specviz.core": 3,
    "specviz.specs": 3,  # a model spec parsed once (the user's text → a typed spec): below drafts and loading
    "specviz.analysis": 4,
    "specviz.drafts": 5,
    "specviz.viz": 5,
    "specviz.pair_parts": 5,  # a pair's parts in the store: their keys, one place for load_pair and planned_parts
    "specviz.loading": 6,
    "specviz.training": 7,
    "specviz.classroom": 7,
    "specviz.server": 7,  # its config is read at the top (app, CLI); turns, pair cache and click queue for the pages
    "specviz": 8,
    "specviz.cli": 8,
    "specviz.__main__": 9,
}


def layer_of(module: str) -> tuple[str, int]:
    """(the unit a module belongs to, its layer): the longest LAYERS entry that is the module or its package."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        unit = ".".join(parts[:end])
        if unit in LAYERS and (unit != "specviz" or module == "specviz"):
            return unit, LAYERS[unit]
    raise AssertionError(f"{module} is in no layer: add it to LAYERS (and to docs/architecture.md)")


def upward(found: dict[str, list[tuple[str, list[str]]]]) -> list[str]:
    wrong = []
    for module, targets in found.items():
        unit, level = layer_of(module.removesuffix(".__init__"))
        for target, _ in targets:
            if not target.startswith("specviz"):
                continue
            other, other_level = layer_of(target)
            if other != unit and other_level >= level:
                wrong.append(f"{module} imports {target} (layer {other_level} ≥ {level})")
    return wrong


def test_imports_run_down_the_layers():
    assert upward(imports()) == []


def test_an_import_up_a_layer_would_be_found():
    assert upward({"specviz.core.trace": [("specviz.analysis.metrics", [])]}) == [
        "specviz.core.trace imports specviz.analysis.metrics (layer 4 ≥ 3)"
    ]
    assert upward({"specviz.drafts.x": [("specviz.viz.charts", [])]}) != []  # the same layer, another package


# The class server's settings are handed in by the app (load_pair's guard, the HTTP opener's check); the layers that
# load and run models never read them: a library user with SPECVIZ_CLASS_MODE set gets the same library.
HANDED_IN = ("specviz.models", "specviz.core", "specviz.loading", "specviz.drafts")


def reads_class_settings(found: dict[str, list[tuple[str, list[str]]]]) -> list[str]:
    return [
        f"{module} imports {target}"
        for module, targets in found.items()
        if module.startswith(HANDED_IN)
        for target, names in targets
        if (target == "specviz.class_policy" and set(names) - {"ClassPolicy", "RefusedError"})
        or (target == "specviz" and "policy" in names)
    ]


def test_models_core_and_loading_never_read_class_settings():
    assert reads_class_settings(imports()) == []
    sources = [
        p
        for p in LIBRARY.rglob("*.py")
        if p.relative_to(LIBRARY.parent).as_posix().startswith(tuple(h.replace(".", "/") for h in HANDED_IN))
    ]
    assert [p.name for p in sources if "policy.current(" in p.read_text() or "CLASS_MODE_ENV" in p.read_text()] == []


def test_a_module_reading_class_settings_would_be_found():
    assert reads_class_settings({"specviz.models.x": [("specviz", ["policy"])]}) == ["specviz.models.x imports specviz"]
    assert reads_class_settings({"specviz.loading": [("specviz.class_policy", ["current"])]}) != []
    assert reads_class_settings({"specviz.loading": [("specviz.class_policy", ["ClassPolicy"])]}) == []


PAGES = LIBRARY.parent / "pages"
PAGE_LINES = 150  # app.py and each page: widgets and calls (what it decides lives in specviz/)
HELPER_LINES = 300  # a page's helper module (pages/_CONCEPT/*.py): one concept a reader can hold; past it, split
CONCEPTS = ("_common", "_decode", "_pay", "_race", "_serving", "_sweep")  # pages/'s helpers, by concept


def is_helper(path: Path) -> bool:
    return path.relative_to(PAGES).parts[0].startswith("_")


def test_pages_are_thin():
    """docs/architecture.md: a page is widgets and calls, 150 lines at most; its helpers one concept each, 300 at
    most."""
    sizes = {p: len(p.read_text().splitlines()) for p in [LIBRARY.parent / "app.py", *PAGES.rglob("*.py")]}
    long = {
        p.name: n
        for p, n in sizes.items()
        if n > (HELPER_LINES if p.parent != LIBRARY.parent and is_helper(p) else PAGE_LINES)
    }
    assert long == {}, f"pages over {PAGE_LINES} lines, helpers over {HELPER_LINES}: {long}"


SHARED_CONCEPTS = ("_common", "_serving")  # what every page uses: they import no page's own folder


def test_what_every_page_uses_imports_no_pages_own_helpers():
    """Issue 66: pages/_common and pages/_serving serve every page, so they import none of one page's folders
    (_decode, _pay, _race, _sweep): the shell reads a link's typed drafts itself, and Decode reads them from it."""
    own = [c for c in CONCEPTS if c not in SHARED_CONCEPTS]
    pattern = re.compile(rf"^\s*(?:from|import) pages\.({'|'.join(own)})\b", re.M)
    wrong = [
        f"{p.relative_to(PAGES)} imports pages.{m}"
        for concept in SHARED_CONCEPTS
        for p in sorted((PAGES / concept).glob("*.py"))
        for m in pattern.findall(p.read_text())
    ]
    assert wrong == []
    assert pattern.findall("from pages._decode.typed import from_link\n") == ["_decode"]  # it would find one


def test_pages_helpers_live_in_a_folder_of_their_concept():
    """Issue 66.5: beside the pages (pages/*.py, each one the app's navigation names) only folders of helpers, one per
    concept: the Decode page's, Would it pay there?'s, the τ sweep's, the Race's, serving, and what every page uses."""
    import importlib.util

    loose = sorted(p.name for p in PAGES.glob("*.py") if p.name != "__init__.py" and p.name.startswith("_"))
    folders = sorted(p.name for p in PAGES.iterdir() if p.is_dir() and not p.name.startswith("__"))
    assert loose == [] and folders == list(CONCEPTS)
    named = re.findall(r'st\.Page\("pages/(\w+)\.py"', (LIBRARY.parent / "app.py").read_text())
    assert sorted(named) == sorted(p.stem for p in PAGES.glob("*.py") if p.name != "__init__.py")
    assert all(importlib.util.find_spec(f"pages.{c}") is not None for c in CONCEPTS)


def unused_imports(source: str) -> list[str]:
    """The names a module imports and never uses ("*" for a star import): a name imported only to be handed on (a
    noqa'd F401, __all__) makes the module a re-export facade, which the pages do not have: each imports what it uses
    from where it lives."""
    tree = ast.parse(source)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            imported |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            imported |= {a.asname or a.name.split(".")[0] for a in node.names}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return sorted(imported - used)


def test_no_page_module_is_a_facade():
    found = {
        p.name: names
        for p in [LIBRARY.parent / "app.py", *PAGES.rglob("*.py")]
        if (names := unused_imports(p.read_text()))
    }
    assert found == {}, f"names imported and not used (re-exported?): {found}"


def test_a_facade_would_be_found():
    facade = (
        "from pages._serving.compute import compute_turn, heavy_job  # noqa: F401 (re-exported)\n"
        "from pages._serving.pairs import *\n"
    )
    assert unused_imports(facade) == ["*", "compute_turn", "heavy_job"]
    listed = "from pages._serving.pairs import load_pair\n__all__ = ['load_pair']\n"  # named in __all__ only: handed on
    assert unused_imports(listed) == ["load_pair"]
    uses = (
        "from __future__ import annotations\nimport streamlit as st\nimport specviz.viz\n"
        "from pages._decode import step as s\n"
    )
    uses += "def f() -> specviz.viz.X:\n    with s.turn():\n        st.write(1)\n"
    assert unused_imports(uses) == []


# The environment is read at the top only: specviz.server.config (ServerConfig.from_environ, every SPECVIZ_* variable
# and the class settings file), called by the CLI and by the app through pages/_serving/config.py; what it read is
# handed down as arguments, and nothing below asks for the class policy itself.
TOP = ("specviz/server/config.py", "specviz/cli.py", "pages/_serving/config.py", "app.py")


def reads_environment(source: str) -> list[str]:
    """Where `source` reads the environment (os.environ, os.getenv, `from os import environ`) or asks for the class
    policy of the process (policy.current()), by line."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "environb", "getenv", "getenvb"):
            found.append(f"line {node.lineno}: {node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [f"line {node.lineno}: {a.name}" for a in node.names if a.name in ("environ", "getenv")]
        elif isinstance(node, ast.Attribute) and node.attr == "current" and "policy" in ast.unparse(node.value):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_only_the_top_reads_the_environment_or_the_class_policy():
    root = LIBRARY.parent
    below = [p for p in [*LIBRARY.rglob("*.py"), *(root / "pages").rglob("*.py")] if p.is_file()]
    wrong = {
        path: found
        for p in below
        if (path := p.relative_to(root).as_posix()) not in TOP and (found := reads_environment(p.read_text()))
    }
    assert wrong == {}
    assert all(reads_environment((root / top).read_text()) for top in TOP[1:])  # the readers are seen by the check


def test_an_environment_or_policy_read_would_be_found():
    assert reads_environment("import os\nlimit = os.environ.get('SPECVIZ_X', '1')\n") == ["line 2: environ"]
    assert reads_environment("import os\nx = os.getenv('SPECVIZ_X')\n") == ["line 2: getenv"]
    assert reads_environment("from os import environ\n") == ["line 1: environ"]
    assert reads_environment("rules = policy.current()\n") == ["line 1: policy.current"]
    assert reads_environment("def f(env):\n    return env.get('SPECVIZ_X')\n") == []  # handed in: fine


def test_every_package_of_the_library_is_in_the_wheel():
    """pyproject.toml lists the packages the wheel ships: a package folder missing there is missing from an install
    outside the checkout (specviz.server, models.gguf and analysis.engine_import once were)."""
    import tomllib

    listed = set(tomllib.loads((LIBRARY.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {p.parent.relative_to(LIBRARY.parent).as_posix().replace("/", ".") for p in LIBRARY.rglob("__init__.py")}
    assert folders - listed == set()


def walk_claims(text: str) -> list[tuple[str, list[str]]]:
    """docs/architecture.md's Step walk as (file, the names given after it) in order: every backticked path ending in
    .py, with the backticked names that follow it, each after a comma ("`pages/_decode/step.py`, `take`, `step`")."""
    section = text.split("## A Step, from the button to the chart")[1].split("\n## ")[0]
    section = " ".join(section.split())
    found = re.findall(r"`([\w/.]+\.py)`((?:, `[A-Za-z_][\w.]*`)*)", section)
    return [(file, re.findall(r"`([^`]+)`", names)) for file, names in found]


def test_the_docs_step_walk_names_files_and_functions_that_exist():
    """Issue 66.4: the walk a newcomer follows matches the code: each file it names exists and defines each function,
    class or method named after it (`Class.method` as `def method` in the file)."""
    root = LIBRARY.parent
    claims = walk_claims((root / "docs" / "architecture.md").read_text())
    assert len(claims) >= 20 and sum(len(names) for _, names in claims) >= 30
    missing = []
    for file, names in claims:
        path = root / file
        assert path.is_file(), file
        defined = {
            node.name
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        }
        missing += [f"{file}: {name}" for name in names if name.split(".")[-1] not in defined]
    assert missing == []


def test_a_walk_naming_a_function_that_is_gone_would_be_found():
    text = "## A Step, from the button to the chart\n1. `pages/_decode/step.py`, `buttons`, `gone`: x.\n## Next\n"
    assert walk_claims(text) == [("pages/_decode/step.py", ["buttons", "gone"])]


LONG_LINES = 60  # a function's lines, past which docs/architecture.md says why it is one piece


def long_functions(root: Path) -> set[tuple[str, str]]:
    """(file, function) for every function of specviz/ and pages/ longer than LONG_LINES."""
    found = set()
    for path in [*(root / "specviz").rglob("*.py"), *(root / "pages").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno - node.lineno >= LONG_LINES:
                found.add((path.relative_to(root).as_posix(), node.name))
    return found


def said_long(text: str) -> set[tuple[str, str]]:
    section = text.split("## Long functions, and why")[1].split("\n## ")[0]
    return {(f, n) for f, names in walk_claims("## A Step, from the button to the chart" + section) for n in names}


def test_every_long_function_is_one_the_docs_say_why():
    """Issue 66.6: functions over 60 lines only where docs/architecture.md says why (and none listed that is gone)."""
    root = LIBRARY.parent
    listed = said_long((root / "docs" / "architecture.md").read_text())
    assert long_functions(root) - listed == set()
    assert {(f, n) for f, n in listed if (f, n) not in long_functions(root)} == set()
