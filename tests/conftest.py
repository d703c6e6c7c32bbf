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
loading.options.DEFAULTS = dataclasses.replace(loading.options.DEFAULTS, runtime=os.environ["SPECVIZ_RUNTIME"])


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
    """An app run under a test's $SPECVIZ_CACHE_DIR hands its cache folder down (pages/_serving/config.py:
    embedded.use_cache); after the test the library's is the one it was."""
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
def timings_kept_apart(monkeypatch, tmp_path_factory):
    """Each test's calibrations kept in a folder of its own (SPECVIZ_TIMINGS_DIR, read by the app and the command
    line, inherited by the processes a test starts): never the user's, never another test's."""
    monkeypatch.setenv("SPECVIZ_TIMINGS_DIR", str(tmp_path_factory.mktemp("timings")))


@pytest.fixture(autouse=True)
def quiet_machine(monkeypatch):
    """The busy notice reads the machine's load (specviz.analysis.busy.current_load); tests run beside others on
    shared cores, so every test sees a quiet machine unless it sets a load itself (tests/test_race.py does)."""
    from specviz.analysis import busy

    monkeypatch.setattr(busy, "current_load", lambda: busy.MachineLoad(0.0, 2))


@pytest.fixture(scope="session", autouse=True)
def steady_clock_for_the_session():
    """Before any fixture of a wider scope times something (a module's sweep, say): the default below."""
    from specviz.analysis import clock
    from tests.helpers import fake_ms

    clock.set_default(clock.FakeTimer(fake_ms))
    yield
    clock.set_default(None)


@pytest.fixture(autouse=True)
def steady_clock(steady_clock_for_the_session):
    """Timings on a shared machine depend on what else runs (specviz.analysis.clock): a busy one withholds them. So
    no test reads the clock (issue 52.6): every test's default timer is a FakeTimer giving tests.helpers.fake_ms,
    nothing disturbed, while its models run. A test with other times hands in its own FakeTimer (or sets one as the
    default: it is set back after each test); tests/test_clock.py's marked test reads the real evidence."""
    from specviz.analysis import clock
    from tests.helpers import fake_ms

    clock.set_default(clock.FakeTimer(fake_ms))
    yield
    clock.set_default(clock.FakeTimer(fake_ms))


@pytest.fixture
def loads(monkeypatch):
    """Patch model loading for the AppTests (tests/test_app_*.py); returns the (target, draft) the app asked for."""
    import streamlit as st

    import specviz
    from tests.helpers import tiny_text_pair

    calls = []

    def fake_load_pair(target, draft, runtime="torch", **_kwargs):
        calls.append((target, draft))
        return tiny_text_pair(chat=True, runtime="torch" if runtime == "auto" else runtime)

    monkeypatch.setattr(specviz, "load_pair", fake_load_pair)
    st.cache_resource.clear()
    yield calls
    st.cache_resource.clear()


@pytest.fixture
def tiny(tmp_path):
    """A tiny GGUF file written here (tests/helpers.py's write_gguf), for the tests of specviz.models.gguf
    (tests/test_gguf_*.py); a test module may define its own `tiny`."""
    from tests.helpers import write_gguf

    return write_gguf(tmp_path / "tiny.gguf")


@pytest.fixture
def found_files(tmp_path, monkeypatch):
    """Three GGUF files of one vocabulary in $SPECVIZ_MODELS_DIR, header-only (nothing loads them here), of 3, 2
    and 1 units of width: big.gguf takes mid and small as drafts, mid.gguf only small, small.gguf none."""
    import streamlit as st

    from tests.helpers import write_gguf

    folder = tmp_path / "models"
    files = {name: write_gguf(folder / f"{name}.gguf", width=width) for name, width in (("big", 24), ("mid", 16))}
    files["small"] = write_gguf(folder / "small.gguf", width=8)
    monkeypatch.setenv("SPECVIZ_MODELS_DIR", str(folder))
    monkeypatch.setenv("SPECVIZ_CACHE_DIR", str(tmp_path / "cache"))  # specviz's own cache: empty
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no other place holds a model
    for name in ("HF_HOME", "HF_HUB_CACHE", "XDG_CACHE_HOME", "OLLAMA_MODELS"):
        monkeypatch.delenv(name, raising=False)
    st.cache_data.clear()
    yield {name: str(path) for name, path in files.items()}
    st.cache_data.clear()
