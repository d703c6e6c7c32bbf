import os

# Tests never touch the network: set before transformers is imported anywhere.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The suite's real-model tests read the torch reference (pair.target.model); the llama.cpp runtime,
# which "auto" prefers where it is installed, is tested on its own (tests/test_llamacpp.py) and
# asked for by name there.
os.environ.setdefault("SPECVIZ_RUNTIME", "torch")


import pytest


@pytest.fixture(scope="session")
def embedded_cache(tmp_path_factory):
    """A fresh cache for the embedded model, converted once per test session and shared by the
    slow tests and the browser test (subprocesses inherit the variable)."""
    from specviz.models import embedded

    root = tmp_path_factory.mktemp("specviz-cache")
    previous = os.environ.get(embedded.CACHE_ENV)
    os.environ[embedded.CACHE_ENV] = str(root)
    messages = []
    path = embedded.ensure_cache(messages.append)
    yield {"root": root, "path": path, "messages": messages}
    if previous is None:
        os.environ.pop(embedded.CACHE_ENV, None)
    else:
        os.environ[embedded.CACHE_ENV] = previous
