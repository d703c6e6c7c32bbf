"""Class mode (specviz.class_policy): the three probes a student could make against a class server — make it send
requests anywhere, make it load anything, take the machine for themselves — each refused with a message, with
real parts: loopback HTTP listeners that count every connection, models saved to folders, real tiny pairs."""

from __future__ import annotations

import http.server
import json
import threading
import time
from pathlib import Path

import pytest

import specviz
from pages._serving import config as _server
from specviz.class_policy import FIELDS, ClassPolicy, RefusedError
from specviz.models.remote.http import post
from specviz.server import config
from specviz.server.paircache import PairCache
from specviz.server.turns import Pacer, Slots, Turns
from tests.helpers import save_tiny, table_pair


class Listener(http.server.ThreadingHTTPServer):
    """A loopback HTTP server that counts the connections it accepts; /v1/… answers JSON, /redirect answers
    303 to `self.to` (another listener; urllib follows a POST's 303 with a GET)."""

    def __init__(self) -> None:
        self.connections, self.to = 0, ""
        listener = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.do_GET()

            def do_GET(self) -> None:
                if self.path.startswith("/redirect"):
                    self.send_response(303)
                    self.send_header("Location", listener.to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = json.dumps({"ok": True, "path": self.path}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def verify_request(self, request, client_address) -> bool:
        self.connections += 1
        return True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def listeners():
    made = [Listener(), Listener()]
    yield made
    for server in made:
        server.shutdown()
        server.server_close()


@pytest.fixture
def class_mode(monkeypatch, tmp_path):
    """Class mode on, with a settings file the test writes (a dict of the [class] table)."""

    def switch(**table) -> ClassPolicy:
        lines = ["[class]"]
        for key, value in table.items():
            lines.append(f"{key} = {json.dumps(value)}")
        path = tmp_path / "class.toml"
        path.write_text("\n".join(lines) + "\n")
        monkeypatch.setenv(config.CLASS_MODE_ENV, "1")  # the app's, read at its top (pages/_serving/config.py)
        monkeypatch.setenv(config.CLASS_SETTINGS_ENV, str(path))
        _server.forget()
        return _server.class_policy()

    yield switch
    _server.forget()


# --- 1. sending requests anywhere ----------------------------------------------------------------------


def test_a_refused_address_makes_no_connection_and_an_allowed_one_works(class_mode, listeners):
    allowed, other = listeners
    check = class_mode(urls=[allowed.url + "/v1"]).check_url  # the app hands the class's check to the opener
    with pytest.raises(RefusedError, match="connects only to the serving engines its operator allowed"):
        post(other.url + "/v1/completions", {"prompt": "x"}, timeout=5, check=check)
    with pytest.raises(RefusedError):
        post(allowed.url + "/v2/completions", {}, timeout=5, check=check)  # the same server, outside the allowed path
    assert other.connections == 0 and allowed.connections == 0  # refused before any connection
    answer = post(allowed.url + "/v1/completions", {"prompt": "x"}, timeout=5, check=check)
    assert answer == {"ok": True, "path": "/v1/completions"}
    assert allowed.connections == 1


def test_a_redirect_to_a_refused_address_is_not_followed(class_mode, listeners):
    allowed, other = listeners
    allowed.to = other.url + "/v1/completions"
    check = class_mode(urls=[allowed.url]).check_url
    with pytest.raises(RefusedError, match=other.url.split("//")[1]):
        post(allowed.url + "/redirect", {}, timeout=5, check=check)
    assert allowed.connections == 1 and other.connections == 0


def test_outside_class_mode_the_same_redirect_is_followed(class_mode, listeners):
    """The library reads no class settings: with the environment in class mode but no check handed in, a request goes
    where it is sent (the app hands the check in: test above)."""
    allowed, other = listeners
    allowed.to = other.url + "/v1/completions"
    class_mode(urls=[])
    assert post(allowed.url + "/redirect", {}, timeout=5)["path"] == "/v1/completions"
    assert other.connections == 1


def test_a_served_target_outside_the_list_is_refused_before_anything_loads(class_mode, listeners):
    _, other = listeners
    rules = class_mode(urls=[])
    with pytest.raises(RefusedError, match="none"):
        specviz.load_pair(f"vllm:{other.url}/v1#some-model", "embedded", runtime="torch", guard=rules)
    assert other.connections == 0


# --- 2. loading anything ------------------------------------------------------------------------------


def test_local_models_load_only_from_allowed_folders_and_hub_ids_only_from_the_list(class_mode, tmp_path):
    allowed_dir, outside_dir = tmp_path / "allowed", tmp_path / "outside"
    inside = save_tiny(allowed_dir / "tiny", seed=0)
    outside = save_tiny(outside_dir / "tiny", seed=0)
    rules = class_mode(folders=[str(allowed_dir)], models=["org/allowed-model"])
    with pytest.raises(RefusedError, match="outside them"):
        specviz.load_pair(outside, "self", runtime="torch", guard=rules)
    with pytest.raises(RefusedError, match="outside them"):  # no way around
        specviz.load_pair(str(allowed_dir / ".." / "outside" / "tiny"), "self", runtime="torch", guard=rules)
    with pytest.raises(RefusedError, match="not among the models this server offers"):
        specviz.load_pair("someone/big-model", "self", runtime="torch", guard=rules)
    pair = specviz.load_pair(inside, "self", runtime="torch", guard=rules)
    assert pair.target.vocab_size > 0
    # the library reads no class settings: the same call with no guard handed in loads what it is asked
    assert specviz.load_pair(outside, "self", runtime="torch").target.vocab_size > 0


def test_a_refused_hub_id_is_neither_fetched_nor_cached_as_target_draft_or_beside_a_served_target(tmp_path):
    """A hub id the class does not allow, as a target, as a draft, and as the draft beside an allowed vllm: target:
    sized (planned_parts, what the pair cache budgets memory with), loaded, and asked of the server's pair cache as
    the app wires it, against the stand-in hub (tests/hubserver.py: it serves the refused repository too, so a
    fetch would succeed and be counted) in a process of its own whose HF_ENDPOINT names it. Each is a RefusedError,
    the hub gets no request for it and the hub cache holds no byte of it; an allowed id in the same process is
    fetched (the harness sees a fetch where one happens)."""
    import os
    import subprocess
    import sys

    from tests.hubserver import hub

    config = {"model_type": "llama", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64}
    config |= {"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2}
    repos = {}
    for name in ("refused", "allowed"):
        repos[f"org/{name}"] = tmp_path / name
        repos[f"org/{name}"].mkdir()
        (repos[f"org/{name}"] / "config.json").write_text(json.dumps(config))
        (repos[f"org/{name}"] / "model.safetensors").write_bytes(b"\0" * 30_000)
    code = """
import json, sys
from specviz.server.paircache import PairCache
from specviz.loading import load_pair, planned_parts
from specviz.models.store import ModelStore
from specviz.class_policy import ClassPolicy, RefusedError
served = sys.argv[1] + "/v1"
rules = ClassPolicy(on=True, models=("org/allowed",), urls=(served,))
store = ModelStore()
cache = PairCache(lambda t, d, r: load_pair(t, d, runtime=r, store=store, guard=rules), pinned=lambda key: False,
    store=store, budget_bytes=int(rules.memory_gb * 1e9), estimate=lambda key: planned_parts(*key, guard=rules))
said = []
asked = (("org/refused", "embedded"), ("embedded", "org/refused"), ("vllm:" + served + "#m", "org/refused"))
for target, draft in asked:
    for ask in (lambda: planned_parts(target, draft, "torch", guard=rules),
                lambda: load_pair(target, draft, runtime="torch", guard=rules),
                lambda: cache.get(target, draft, "torch")):
        try:
            ask()
            said.append("not refused")
        except RefusedError as exc:
            said.append(str(exc))
print(json.dumps({"said": said, "allowed": planned_parts("org/allowed", "embedded", "torch", guard=rules)[0][1]}))
"""
    with hub(repos) as (url, requests):
        env = {**os.environ, "HF_ENDPOINT": url, "HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0"}
        env["HF_HOME"] = str(tmp_path / "hf")
        done = subprocess.run([sys.executable, "-c", code, url], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(out["said"]) == 9
    assert all("'org/refused' is not among the models this server offers" in s for s in out["said"]), out["said"]
    assert [r for r in requests if "refused" in r[1] or r[1].startswith("/v1")] == []  # nothing asked of the hub
    cached = [p.relative_to(tmp_path / "hf") for p in (tmp_path / "hf").rglob("*") if p.is_file()]
    assert not [p for p in cached if "refused" in str(p)], cached  # and no byte of it written
    # the control: the allowed id, sized from its config (2 layers of 32 wide, 64 words, tied head off), was fetched
    assert any("org/allowed" in r[1] and r[1].endswith("config.json") for r in requests), requests
    assert any("models--org--allowed" in str(p) for p in cached), cached
    embed, layer = 64 * 32, 4 * 32 * 8 + 32 * 32 * 2 + 3 * 32 * 64 + 2 * 32
    assert out["allowed"] == (2 * embed + 2 * layer + 32) * 4  # float32 bytes


def test_a_gguf_file_outside_the_allowed_folders_is_refused_unread_in_the_same_words_whether_it_exists_or_not(
    class_mode, tmp_path, monkeypatch
):
    """A .gguf path (absolute, relative, bare) or a bare name outside the operator's folders: refused before any file is
    resolved or read, as a target, as a draft and when sized for the memory budget, and the message is the same for a
    file that exists (with its size) and one that does not."""
    from specviz.loading import planned_parts
    from specviz.models import gguf

    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    (outside / "org" / "name").mkdir(parents=True)
    (outside / "big.gguf").write_bytes(b"GGUF" + bytes(4096))
    rules = class_mode(folders=[str(allowed)])
    touched = []
    for name in ("read_info", "resolve", "vocabulary"):
        monkeypatch.setattr(gguf, name, lambda *a, name=name, **k: touched.append(name))
    monkeypatch.chdir(outside)
    pairs = {  # (a file that exists, one that does not), written the same way
        "absolute": (str(outside / "big.gguf"), str(outside / "none.gguf")),
        "relative": ("./big.gguf", "./none.gguf"),
        "bare": ("big.gguf", "none.gguf"),
        "a folder named like a hub id": ("org/name", "org/none"),
    }
    for how, specs in pairs.items():
        said = set()
        for spec in specs:
            for ask in (
                lambda spec=spec: specviz.load_pair(spec, "self", runtime="torch", guard=rules),
                lambda spec=spec: specviz.load_pair("embedded", spec, runtime="torch", guard=rules),
                lambda spec=spec: planned_parts(spec, "self", "torch", guard=rules),
            ):
                with pytest.raises(RefusedError) as info:
                    ask()
                said.add(str(info.value).replace(repr(spec), "SPEC"))
        assert len(said) == 1, (how, said)
        assert ("outside them" if how != "a folder named like a hub id" else "not among the models") in said.pop()
    assert touched == []


def test_the_class_caps_the_size_of_a_model(class_mode, tmp_path):
    from specviz.loading import ModelTooLargeError

    folder = save_tiny(tmp_path / "tiny", seed=0)
    rules = class_mode(folders=[str(tmp_path)], max_model_params=1000)
    with pytest.raises(ModelTooLargeError):
        specviz.load_pair(folder, "self", runtime="torch", guard=rules)


def test_a_students_fourth_pair_never_evicts_the_default_one():
    now = [0.0]
    loads = []

    def load(target, draft, runtime):
        loads.append(target)
        return table_pair([0.5, 0.5], [0.5, 0.5])

    cache = PairCache(load, pinned=lambda key: key[0] == "default", most=3, idle_s=60.0, clock=lambda: now[0])
    default = cache.get("default", "default", "torch")
    for name in ("a", "b", "c"):
        cache.get(name, "self", "torch")
    with pytest.raises(RefusedError, match="holds its most pairs besides the default"):
        cache.get("d", "self", "torch")  # every slot used in the last minute
    assert cache.get("default", "default", "torch") is default
    now[0] = 30.0
    cache.get("b", "self", "torch")  # b is in use again
    now[0] = 70.0
    cache.get("d", "self", "torch")  # a and c idle for 70 s: the older one, a, makes room
    assert {k[0] for k in cache.held()} == {"default", "b", "c", "d"}
    assert cache.get("default", "default", "torch") is default and loads.count("default") == 1


def test_a_pair_asked_for_by_many_sessions_at_once_loads_once():
    loads, started = [], threading.Event()

    def load(target, draft, runtime):
        loads.append(target)
        started.set()
        time.sleep(0.2)
        return table_pair([0.5, 0.5], [0.5, 0.5])

    cache = PairCache(load, pinned=lambda key: True)
    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.get("x", "y", "torch"))) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads == ["x"] and len({id(p) for p in got}) == 1


# --- 3. taking the machine ----------------------------------------------------------------------------


def test_steps_go_before_heavy_units_and_the_lecturer_before_both():
    """A heavy unit holds the turn; a heavy unit, a Step and the lecturer's Step then ask, in that order. When the
    turn is free the lecturer goes first, then the Step, then the heavy unit; the one waiting hears how many are
    ahead of it."""
    turns, order, heard = Turns(), [], []
    holding, release = threading.Event(), threading.Event()

    def hold():
        with turns.take("heavy"):
            holding.set()
            release.wait(5)

    def ask(kind, name, waiting=None):
        with turns.take(kind, waiting):
            order.append(name)

    threading.Thread(target=hold).start()
    holding.wait(5)
    waiters = [
        threading.Thread(target=ask, args=("heavy", "heavy unit", lambda ahead, _eta: heard.append(ahead))),
        threading.Thread(target=ask, args=("step", "student's Step")),
        threading.Thread(target=ask, args=("lecturer", "lecturer's Step")),
    ]
    for thread in waiters:
        thread.start()
        deadline = time.monotonic() + 5
        while turns.waiting < 2 + waiters.index(thread) and time.monotonic() < deadline:
            time.sleep(0.01)
    deadline = time.monotonic() + 5
    while max(heard, default=0) < 3 and time.monotonic() < deadline:  # the heavy unit hears the third arrive
        time.sleep(0.01)
    release.set()
    for thread in waiters:
        thread.join(5)
    assert order == ["lecturer's Step", "student's Step", "heavy unit"]
    assert heard[0] == 1 and max(heard) == 3  # first the holder alone; then the two Steps that came first


def test_a_session_stopped_while_it_waits_gives_up_its_place():
    turns, holding, release = Turns(), threading.Event(), threading.Event()

    def hold():
        with turns.take("heavy"):
            holding.set()
            release.wait(5)

    threading.Thread(target=hold).start()
    holding.wait(5)

    class Stopped(Exception):
        pass

    def stopped(ahead, eta):
        raise Stopped  # what a rerun does to a waiting session: an exception at its next page call

    with pytest.raises(Stopped), turns.take("step", stopped):
        pass
    release.set()
    time.sleep(0.05)
    with turns.take("step"):  # nobody is left waiting ahead: the turn is free at once
        assert turns.waiting == 1


def test_heavy_jobs_past_the_classs_number_wait_their_turn():
    slots, heard, inside = Slots(1), [], threading.Event()
    release = threading.Event()

    def first():
        with slots.hold():
            inside.set()
            release.wait(5)

    threading.Thread(target=first).start()
    inside.wait(5)
    done = []
    second = threading.Thread(target=lambda: done.append(slots.hold(heard.append).__enter__()))
    second.start()
    time.sleep(0.3)
    assert not done and heard == [1]  # one job runs before it
    release.set()
    second.join(5)
    assert done


def test_one_students_tabs_and_a_full_queue_are_refused_with_why_and_the_others_still_queue():
    """Issue 46.4: one heavy job runs at a time; a student (an address) may have 2 running or waiting, so a third tab's
    sweep is refused with why; another student still queues; with 3 waiting in all the next is refused too; and once
    the student's job has finished, they may start another."""
    slots = Slots(1, per_owner=2, waiting_most=3)
    release = {name: threading.Event() for name in ("a1", "a2", "b1", "c1")}
    entered: list[str] = []

    def job(name: str, owner: str) -> threading.Thread:
        def run():
            with slots.hold(owner=owner):
                entered.append(name)
                release[name].wait(10)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        time.sleep(0.2)
        return thread

    threads = [job("a1", "10.0.0.1"), job("a2", "10.0.0.1")]  # one runs, one waits: the same student's tabs
    assert entered == ["a1"]
    third_tab = r"you already have 2 heavy jobs \(a sweep, .*\) running or waiting, maybe in another tab"
    with pytest.raises(RefusedError, match=third_tab), slots.hold(owner="10.0.0.1"):
        pass
    threads += [job("b1", "10.0.0.2"), job("c1", "10.0.0.3")]  # others still queue: 3 waiting now
    with pytest.raises(RefusedError, match="class mode: 3 heavy jobs already wait"), slots.hold(owner="10.0.0.4"):
        pass
    release["a1"].set()
    deadline = time.monotonic() + 10
    while "a2" not in entered and time.monotonic() < deadline:
        time.sleep(0.05)
    release["a3"] = threading.Event()
    threads.append(job("a3", "10.0.0.1"))  # a1 done, a2 running: the student may queue one more
    for name in ("a2", "b1", "c1", "a3"):
        release[name].set()
    for thread in threads:
        thread.join(10)
    assert entered == ["a1", "a2", "b1", "c1", "a3"]


def test_a_students_steps_are_paced():
    now, slept = [0.0], []
    pacer = Pacer(2.0, clock=lambda: now[0], sleep=lambda s: (slept.append(s), now.__setitem__(0, now[0] + s)))
    pacer.wait()
    now[0] += 0.1
    assert pacer.wait() == pytest.approx(0.4) and slept == [pytest.approx(0.4)]  # 2 a second: 0.5 s apart
    now[0] += 1.0
    assert pacer.wait() == 0.0
    assert Pacer(None).wait() == 0.0  # outside class mode: no bound


def test_the_classs_budgets_cap_the_settings_and_the_links(class_mode):
    from specviz.classroom import settings

    rules = class_mode(max_new_tokens=64, lossless_trials=500, prompt_chars=40, sweep_runs=12)
    bounds = settings.allowed(rules)
    assert bounds["decode_max_new"] == (1, 64) and bounds["lossless_trials"] == (100, 500)
    assert settings.defaults(class_policy=rules)["lossless_trials"] == 500  # a default above the cap comes down to it
    link = {"decode_max_new": "1000", "decode_prompt": "x" * 41, "decode_tau": "3"}
    values, problems = settings.from_link(link, rules)
    assert values == {"decode_tau": 3}
    assert "ignored decode_max_new='1000' from the link: allowed values are 1 to 64" in problems
    assert "ignored decode_prompt from the link: 41 characters, the class allows 40" in problems
    with pytest.raises(RefusedError, match="12 runs at most"):
        rules.check_sweep(13)
    rules.check_sweep(12)
    assert settings.allowed()["decode_max_new"][1] > 64 and settings.prompt_chars() is None  # no policy: no caps


def test_oversized_and_deeply_nested_uploads_are_refused_before_parsing(class_mode, monkeypatch):
    from specviz.classroom import replay

    rules = class_mode(upload_bytes=1000, upload_depth=8)
    parsed = []
    real_loads = json.loads
    monkeypatch.setattr(json, "loads", lambda *a, **k: (parsed.append(1), real_loads(*a, **k))[1])
    too_big = b'{"a": "' + b"x" * 2000 + b'"}'
    assert replay.replay_for(too_big, "big.json", None, class_policy=rules)[1].startswith(
        "the file is 0.0 MB; a trace this server"
    )
    nested = b"[" * 100 + b"]" * 100
    assert "nests deeper than 8 levels" in replay.replay_for(nested, "deep.json", None, class_policy=rules)[1]
    assert (
        "[[[" not in replay.replay_for(b'{"s": "[[[[[[[[[[[["}', "s.json", None, class_policy=rules)[1]
    )  # brackets in a string
    assert len(parsed) == 1  # only the last, small and shallow, was parsed


def test_the_policy_file_is_checked():
    with pytest.raises(specviz.SpecvizError, match="unknown class settings"):
        config.class_policy(
            {config.CLASS_MODE_ENV: "1", config.CLASS_SETTINGS_ENV: _write("[class]\nmax_tokens = 3\n")}
        )
    assert not config.class_policy({}).on and config.class_policy({config.CLASS_MODE_ENV: "yes"}).on
    rules = ClassPolicy(on=True, urls=("http://Engine:8000/v1",))
    assert rules.url_allowed("http://engine:8000/v1/completions") and not rules.url_allowed("http://engine:8001/v1")
    assert not rules.url_allowed("http://engine:8000/v10") and not rules.url_allowed("file:///etc/passwd")
    assert ClassPolicy(on=True, urls=("https://e",)).url_allowed("https://e:443/x")


def _write(text: str) -> str:
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(text)
    return f.name


# --- 4. what a student sees -------------------------------------------------------------------------------


def test_the_app_in_class_mode_says_so_and_refuses_a_served_target_with_a_message(class_mode, listeners, monkeypatch):
    """The sidebar names the mode; a student's Custom pair pointing at a served target outside the list gets a
    message on the page (no traceback), and the server made no connection; the default pair still steps."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from specviz.classroom import settings
    from tests.helpers import tiny_text_pair

    root = Path(__file__).resolve().parents[1]

    _, other = listeners
    class_mode(urls=[])
    real = specviz.load_pair

    def load(target, draft, runtime="torch", **kwargs):  # the presets on a tiny pair, the rest for real
        if target == "embedded":
            return tiny_text_pair(chat=True, runtime="torch" if runtime == "auto" else runtime)
        return real(target, draft, runtime=runtime, **kwargs)

    monkeypatch.setattr(specviz, "load_pair", load)
    st.cache_resource.clear()
    try:
        at = AppTest.from_file(str(root / "app.py"), default_timeout=120).run()
        assert any(c.value.startswith(":material/school: Class mode:") for c in at.sidebar.caption)
        at.button(key="decode_step").click().run()
        assert not at.exception and not at.error  # the default pair steps
        at.selectbox(key="decode_preset").set_value(settings.CUSTOM).run()
        at.text_input(key="decode_target").set_value(f"vllm:{other.url}/v1#some-model").run()
        at.button(key="decode_step").click().run()
        assert not at.exception
        shown = " ".join(e.value for e in at.error)
        assert "connects only to the serving engines its operator allowed (none)" in shown, shown
        assert other.connections == 0
    finally:
        st.cache_resource.clear()


def test_the_documented_example_settings_load():
    """docs/class.example.toml, the file docs/class-server.md points an operator to, is read as written."""
    root = Path(__file__).resolve().parents[1]
    example = root / "docs" / "class.example.toml"
    rules = config.class_policy({config.CLASS_MODE_ENV: "1", config.CLASS_SETTINGS_ENV: str(example)})
    assert rules.on and rules.urls == ("http://10.0.0.5:8000/v1",) and rules.folders == ("/srv/specviz/models",)
    assert rules.max_new_tokens == 256 and rules.lecturer_key == "change-me" and rules.steps_per_second == 2.0
    assert rules.url_allowed("http://10.0.0.5:8000/v1/completions") and not rules.url_allowed("http://10.0.0.5:8001/v1")
    documented = (root / "docs" / "class-server.md").read_text()
    for name in FIELDS:  # every setting the code knows is documented
        assert name == "on" or f"| `{name}` |" in documented, name
