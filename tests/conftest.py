import os

# Tests never touch the network: set before transformers is imported anywhere.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The suite's real-model tests read the torch reference (pair.target.model); the llama.cpp runtime,
# which "auto" prefers where it is installed, is tested on its own (tests/test_llamacpp.py) and
# asked for by name there.
os.environ.setdefault("SPECVIZ_RUNTIME", "torch")  # for the app (AppTest) and the servers the tests start


import dataclasses

import pytest

from specviz import loading

# and for the library, which reads no environment: load_pair's default runtime when none is handed
loading.DEFAULTS = dataclasses.replace(loading.DEFAULTS, runtime=os.environ["SPECVIZ_RUNTIME"])


@pytest.fixture(scope="session")
def embedded_cache(tmp_path_factory):
    """A fresh cache for the embedded model, converted once per test session and shared by the
    slow tests and the browser test (subprocesses inherit the variable)."""
    from specviz.models import embedded

    root = tmp_path_factory.mktemp("specviz-cache")
    previous = os.environ.get(embedded.CACHE_ENV)
    os.environ[embedded.CACHE_ENV] = str(root)  # for the servers and command lines the tests start
    embedded.use_cache(root)  # as a server hands it in (specviz.server.config)
    messages = []
    path = embedded.ensure_cache(messages.append)
    yield {"root": root, "path": path, "messages": messages}
    embedded.use_cache(None)
    if previous is None:
        os.environ.pop(embedded.CACHE_ENV, None)
    else:
        os.environ[embedded.CACHE_ENV] = previous


@pytest.fixture(autouse=True)
def specviz_cache_as_it_was():
    """An app run under a test's $SPECVIZ_CACHE_DIR hands its cache folder down (pages/_server.py: embedded.use_cache);
    after the test the library's is the one it was."""
    from specviz.models import embedded

    before = embedded.named_cache()
    yield
    embedded.use_cache(before)


@pytest.fixture(autouse=True)
def one_torch_thread_count():
    """torch's float sums depend on its thread count (a reduction split two ways rounds differently: q moved
    by ~1e-6 between one and two threads). `torch.set_num_threads` from another thread (the app's own line, run
    by AppTest's script thread) changes the count that new threads start with but not the main thread's, so a
    test comparing runs in the main thread with runs in new threads would compare two thread counts. After
    each test the count new threads take is set back to the main thread's."""
    yield
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(torch.get_num_threads())


@pytest.fixture(autouse=True)
def quiet_machine(monkeypatch):
    """The busy notice reads the machine's load (specviz.analysis.busy.current_load); tests run beside others on
    shared cores, so every test sees a quiet machine unless it sets a load itself (tests/test_race.py does)."""
    from specviz.analysis import busy

    monkeypatch.setattr(busy, "current_load", lambda: busy.MachineLoad(0.0, 2))


@pytest.fixture(scope="session", autouse=True)
def steady_clock_for_the_session():
    """Before any fixture of a wider scope times something (a module's sweep, say): the steady default below."""
    from specviz.analysis import clock

    clock.set_default(clock.Timer(judge=False))
    yield
    clock.set_default(None)


@pytest.fixture(autouse=True)
def steady_clock(steady_clock_for_the_session):
    """Timings read the CPU's evidence of a disturbance (specviz.analysis.clock); tests run beside others on shared
    cores, so every test's default timer reads the clock but reports no disturbance. Tests of numbers hand in a
    FakeTimer (or set one as the default: it is set back after each test); tests/test_clock.py reads the real
    evidence."""
    from specviz.analysis import clock

    clock.set_default(clock.Timer(judge=False))
    yield
    clock.set_default(clock.Timer(judge=False))
