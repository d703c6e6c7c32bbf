"""Before `make llama` builds llama-cpp-python: unpack its source and keep only what specviz uses of it.

ggml (vendored in llama-cpp-python 0.3.36) builds 14 x86 CPU libraries under GGML_CPU_ALL_VARIANTS and has no option
to choose among them, and the package forces llama.cpp's "common" library on, which its Python bindings never load
(only its multimodal library does, which the Makefile turns off): on a 2-core machine the build took 37.6 CPU-minutes.
This unpacks the sdist pip downloaded, deletes the `ggml_add_cpu_backend_variant(NAME …)` lines of the x86 list whose
NAME is not asked for, and turns the common library off, so the wheel built from the folder has those CPU libraries
and nothing it does not use. It stops with a message when a line is not where it expects or a name it is asked to
keep is missing (a new llama.cpp or llama-cpp-python): read their CMakeLists.txt again then.

    python scripts/llamasource.py SDIST.tar.gz FOLDER x64 haswell …

Run by the Makefile with the build's Python; imports nothing but the standard library; run twice, it starts over.
"""

from __future__ import annotations

import re
import shutil
import sys
import tarfile
from pathlib import Path

LIST = "vendor/llama.cpp/ggml/src/CMakeLists.txt"
PACKAGE = "CMakeLists.txt"  # llama-cpp-python's own
COMMON_ON = 'set(LLAMA_BUILD_COMMON ON CACHE BOOL "Build llama.cpp common library" FORCE)'
X86 = re.compile(r'if \(GGML_SYSTEM_ARCH STREQUAL "x86"\)\n(?P<body>.*?)\n\s*elseif', re.S)
VARIANT = re.compile(r"^\s*ggml_add_cpu_backend_variant\((?P<name>\w+)\b.*$\n?", re.M)


def kept(text: str, keep: set[str]) -> tuple[str, list[str]]:
    """`text` (ggml/src/CMakeLists.txt) with the x86 variants not in `keep` deleted; and the names deleted."""
    start = text.find("if (GGML_CPU_ALL_VARIANTS)")
    found = X86.search(text, start) if start >= 0 else None
    if found is None:
        raise SystemExit(f"{LIST}: no x86 list of CPU variants found; read it again for this llama.cpp")
    body = found["body"]
    names = [m["name"] for m in VARIANT.finditer(body)]
    if missing := sorted(keep - set(names)):
        raise SystemExit(f"{LIST}: no CPU variant {', '.join(missing)} in its x86 list ({', '.join(names)})")
    new = VARIANT.sub(lambda m: m[0] if m["name"] in keep else "", body)
    return text[: found.start("body")] + new + text[found.end("body") :], [n for n in names if n not in keep]


def unpack(sdist: Path, folder: Path, keep: set[str]) -> list[str]:
    """Unpack `sdist` into `folder` (emptied first), the package's root at `folder`; keep only `keep`'s variants."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    with tarfile.open(sdist) as archive:
        archive.extractall(folder, filter="data")
    (root,) = folder.iterdir()  # the sdist's one top folder, llama_cpp_python-0.3.36/
    for part in root.iterdir():
        part.rename(folder / part.name)
    root.rmdir()
    path = folder / LIST
    text, dropped = kept(path.read_text(), keep)
    path.write_text(text)
    package = (folder / PACKAGE).read_text()
    if package.count(COMMON_ON) != 1:
        raise SystemExit(f"{PACKAGE}: no line {COMMON_ON!r}; read it again for this llama-cpp-python")
    (folder / PACKAGE).write_text(package.replace(COMMON_ON, COMMON_ON.replace(" ON ", " OFF ")))
    return dropped


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        raise SystemExit(__doc__)
    sdist, folder, *keep = argv
    dropped = unpack(Path(sdist), Path(folder), set(keep))
    print(f"{folder}: builds the CPU libraries {', '.join(keep)}; left out {', '.join(dropped)} and llama.cpp's common")


if __name__ == "__main__":
    main(sys.argv[1:])
