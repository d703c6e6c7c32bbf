"""Snapshots for slides, checked whole before use (issue 46, points 2 and 3): every kind's data field by field,
a SnapshotError that names the field, on each page that opens them a message and never a traceback, and a
snapshot's header shown as text; in a real browser, a hostile link fetches nothing."""

import base64
import contextlib
import copy
import http.server
import json
import os
import re
import threading
import zlib
from pathlib import Path
from typing import ClassVar

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import specviz
from specviz.analysis import snapshot
from specviz.analysis.diagnosis import Diagnosis, diagnose
from specviz.analysis.measure import MeasurementError
from specviz.analysis.race import Race, RaceResult
from specviz.analysis.sweep import Sweep, SweepSettings
from specviz.analysis.sweep_summary import SweepSummary
from specviz.errors import SnapshotError, SpecvizError
from specviz.viz import sweep_charts
from specviz.viz.plain import plain
from tests.helpers import tiny_text_pair

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGES = {"sweep": "pages/sweep.py", "race": "pages/race.py", "reading": "pages/decode.py"}
HEADER = {"created": "2026-01-01T09:45", "machine": "m", "runtime": "torch, 1 thread", "load": "l"}
IMAGE = "![t](http://127.0.0.1:9/x.png)"
MARKUP = re.compile(r"(?<!\\)(!\[|\]\(|<img|<a )")  # an image, a link or a tag, unescaped


@pytest.fixture(scope="module")
def data() -> dict[str, dict]:
    """A real measurement of each kind, on the tiny pair, as a snapshot carries it (through JSON)."""
    pair = tiny_text_pair(chat=True)
    settings = SweepSettings(
        taus=(1, 2, 3), prompts=("w1 w2", "w5"), mode="greedy", max_new_tokens=8, chat=None, policies=("heuristic",)
    )
    sweep = Sweep(pair, settings, {})
    for _ in sweep.advance():
        pass
    race = Race(pair, "w1 w2 w3", specviz.SpecConfig(tau=3, mode="greedy", max_new_tokens=12)).run()
    run = specviz.Decoder(pair, "w1 w2", specviz.SpecConfig(tau=3, max_new_tokens=4, top_n=2)).run()  # fits a link
    made = {
        "sweep": sweep.result().summary().to_dict(),
        "race": {"preset": "Prompt lookup", "result": race.to_dict(), "texts": ["w1 w2", "w1 w2"]},
        "reading": {"trace": run.to_dict(), "reading": diagnose(run).to_dict()},
    }
    return json.loads(json.dumps(made))


def packed(kind: str, data: dict, **header: str) -> str:
    """A snapshot as its file's text."""
    return json.dumps({"kind": kind, **HEADER, **header, "data": data})


def link_param(text: str) -> str:
    return base64.urlsafe_b64encode(zlib.compress(text.encode(), 9)).decode()


DELETE = object()


def changed(data: dict, path: str, value) -> dict:
    """`data` with the field at `path` ("taus.0.lengths") set to `value` (a function: of `data`), or removed
    (DELETE)."""
    out = copy.deepcopy(data)
    value = value(copy.deepcopy(data)) if callable(value) else value
    *parents, last = path.split(".")
    node = out
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    key = int(last) if isinstance(node, list) else last
    if value is DELETE:
        del node[key]
    else:
        node[key] = value
    return out


# --- the library: each kind checked field by field -----------------------------------------------------


@pytest.mark.parametrize("kind", ["sweep", "race", "reading"])
def test_a_real_snapshot_of_each_kind_reopens_from_its_file_and_its_link(data, kind):
    text = packed(kind, data[kind])
    assert snapshot.from_json(text).data == data[kind]
    frozen = snapshot.freeze(kind, "torch, 1 thread", data[kind])
    assert snapshot.from_link_param(frozen.link_param()).data == data[kind]


@pytest.mark.parametrize(
    "kind, path, value, message",
    [
        ("sweep", "settings", DELETE, "data lacks 'settings'"),
        ("sweep", "settings.taus", [], "data.settings do not make a sweep"),
        ("sweep", "settings.mode", "fast", "data.settings do not make a sweep: mode must be one of"),
        ("sweep", "settings.prompts", ["w1", 7], "data.settings.prompts[1] is a whole number, not text"),
        ("sweep", "settings.max_new_tokens", 10**9, "data.settings do not make a sweep: max_new_tokens"),
        ("sweep", "taus", {"1": {}}, "data.taus is an object, not a list"),
        ("sweep", "taus.0.tau", 9, "data.taus[0].tau is 9, not one of the sweep's τ (1, 2, 3)"),
        ("sweep", "taus", lambda d: [d["taus"][0]] * 2, "data.taus holds a τ twice"),
        ("sweep", "taus.0.steps", "16", "data.taus[0].steps is text, not a whole number"),
        ("sweep", "taus.0.lengths", [1], "data.taus[0].lengths has 1 entries; τ = 1 needs 2"),
        ("sweep", "taus.0.lengths.0", 10**12, "data.taus[0].lengths[0] is 1e+12, outside 0 to"),
        ("sweep", "taus.2.per_position_acceptance_rate", [0.5], "per_position_acceptance_rate has 1 entries; τ = 3"),
        ("sweep", "taus.0.draft_acceptance_rate", 1.5, "data.taus[0].draft_acceptance_rate is 1.5, outside 0 to 1"),
        ("sweep", "taus.0.speedup.value", float("nan"), "it holds NaN, not a finite number"),
        ("sweep", "taus.0.speedup", {"value": 1}, "data.taus[0].speedup lacks 'low', 'high', 'n'"),
        ("sweep", "taus.0.evil", 1, "data.taus[0] has 'evil', which a snapshot does not"),
        ("sweep", "taus.0.verify_cost", DELETE, "data.taus[0] lacks 'verify_cost'"),
        ("sweep", "taus.0.verify_cost", None, "data.taus[0].predicted_speedup_v is given without the verify_cost"),
        ("sweep", "alpha", True, "data.alpha is true or false, not a number"),
        ("sweep", "policies.0.policy", "confidence", "data.policies[0].policy is 'confidence', not one of"),
        ("sweep", "runtime", ["r"], "data.runtime is a list, not text"),
        ("race", "preset", DELETE, "data lacks 'preset'"),
        ("race", "texts", ["only one"], "data.texts has 1 entries; one per lane needs 2"),
        ("race", "result.alone.tokens", [], "data.result.alone.tokens is empty"),
        ("race", "result.alone.tokens", list(range(5000)), "data.result.alone.tokens has 5000 entries, more than"),
        ("race", "result.alone.seconds", 0, "data.result.alone.seconds is 0"),
        ("race", "result.speculative.pieces.0.1", 0, "data.result.speculative.pieces[0][1] is 0, outside 1 to"),
        ("race", "result.speculative.pieces.0", [0.1], "pieces[0] has 1 entries; (seconds, tokens) needs 2"),
        ("race", "result.speculative.pieces.0.0", 99.0, "data.result.speculative.pieces add up to"),
        ("race", "result.same_text", False, "data.result.same_text disagrees with the two lanes' tokens"),
        ("race", "result.mode", "fast", "data.result.mode is not one of"),
        ("race", "result.tau", 0, "data.result.tau is 0, outside 1 to 64"),
        ("reading", "trace", DELETE, "data lacks 'trace'"),
        ("reading", "trace", "a run", "data.trace is text, not an object"),
        ("reading", "trace.steps", "x", "data.trace is not a run that can be replayed"),
        ("reading", "reading.tau", 5, "data.reading.tau is 5, not the trace's τ 3"),
        ("reading", "reading.bottleneck", 5, "data.reading.bottleneck is a whole number, not text"),
        ("reading", "reading.run_speedup", DELETE, "data.reading lacks 'run_speedup'"),
        ("reading", "reading.run_speedup", {"value": 1, "low": 2, "high": 1, "n": 1, "how": ""}, "run_speedup.low is"),
    ],
)
def test_a_field_missing_of_the_wrong_type_or_out_of_range_is_named(data, kind, path, value, message):
    with pytest.raises(SnapshotError) as refused:
        snapshot.from_json(packed(kind, changed(data[kind], path, value)))
    assert message in str(refused.value)
    assert isinstance(refused.value, SpecvizError) and isinstance(refused.value, ValueError)


@pytest.mark.parametrize(
    "header, message",
    [
        ({"kind": "lesson"}, "kind is not one of sweep, race, reading"),
        ({"machine": 5}, "machine is not text"),
        ({"load": "x" * 1000}, "load is not text of at most 200 characters"),
        ({"created": "yesterday"}, "created is not a date and time"),
        ({"extra": "x"}, "it has fields besides"),
    ],
)
def test_a_header_field_that_is_wrong_is_named(data, header, message):
    with pytest.raises(SnapshotError, match=message):
        snapshot.from_json(json.dumps({"kind": "sweep", **HEADER, "data": data["sweep"], **header}))
    without = {"kind": "sweep", **HEADER}
    del without["machine"]
    with pytest.raises(SnapshotError, match="it lacks machine, data"):
        snapshot.from_json(json.dumps(without))


def test_whatever_passes_the_check_is_drawn_without_an_error(data):
    """Edge values a check lets through (α = 1, c = 0, no interval, zero speedups) still make a verdict, charts
    and words: the check and the drawing agree."""
    sweep = copy.deepcopy(data["sweep"])
    zero = {"value": 0.0, "low": 0.0, "high": 0.0, "n": 0, "how": ""}
    sweep.update(alpha=1.0, acceptance_probability=1.0, c=zero)
    for row in sweep["taus"]:
        row.update(speedup=zero, verify_cost=None, predicted_speedup_v=None, alpha=1.0)
    draw("sweep", snapshot.from_json(packed("sweep", sweep)).data)
    race = copy.deepcopy(data["race"])
    for lane in ("alone", "speculative"):  # no pieces, no interval: the number
        race["result"][lane]["pieces"] = race["result"][lane]["disturbed"] = []
    draw("race", snapshot.from_json(packed("race", race)).data)
    draw("reading", snapshot.from_json(packed("reading", data["reading"])).data)


def leaves(node, path: str = "", skip: tuple[str, ...] = ()):
    """Every path to a value inside `node` ("taus.0.lengths.1"), containers included; paths under `skip` left out."""
    if path in skip:
        return
    if path:
        yield path
    items = enumerate(node) if isinstance(node, list) else node.items() if isinstance(node, dict) else ()
    for key, value in items:
        yield from leaves(value, f"{path}.{key}" if path else str(key), skip)


def draw(kind: str, data: dict) -> None:
    """What the pages make of a snapshot that passed, short of Streamlit."""
    if kind == "sweep":
        summary = SweepSummary.from_dict(data)
        assert summary.verdict() and len(summary.to_frame()) == len(summary.rows)
        assert len(summary.policy_frame()) == len(summary.policies)
        charts = ("sweep_speedup_chart", "sweep_acceptance_chart", "sweep_length_chart", "sweep_position_chart")
        for chart in charts:
            getattr(sweep_charts, chart)(summary)
    elif kind == "race":
        with contextlib.suppress(MeasurementError):  # timings no runtime could give: the page says it could not measure
            assert RaceResult.from_dict(data["result"]).summary()
    else:
        from specviz.classroom.replay import replay_for

        replay, problem = replay_for(json.dumps(data["trace"]).encode(), "snapshot", None)
        assert problem is None
        assert replay.run().steps
        assert Diagnosis.from_dict(data["reading"]).shares()


BROKEN = (DELETE, None, "x", -1, 10**15, 0.5, [], {}, True)


@pytest.mark.parametrize("kind", ["sweep", "race", "reading"])
def test_every_field_broken_every_way_is_refused_or_drawn(data, kind):
    """Each field deleted or replaced by a value of another type or range: one SnapshotError, or a snapshot
    that the page's own code draws without an error. Never anything else."""
    skip = ("trace.steps",) if kind == "reading" else ()  # a step's own fields: tests/test_trace.py checks them
    undrawn = []
    for path in leaves(data[kind], skip=skip):
        for value in BROKEN:
            text = packed(kind, changed(data[kind], path, value))
            try:
                opened = snapshot.from_json(text)
            except SnapshotError:
                continue
            try:
                draw(kind, opened.data)
            except Exception as exc:  # any error: the check let through what cannot be drawn
                undrawn.append(f"{path} = {value!r}: {exc!r}")
    assert undrawn == [], "\n".join(undrawn)


# --- the pages that open snapshots ---------------------------------------------------------------------


@pytest.fixture
def loads(monkeypatch):
    """Model loading patched to the tiny pair."""
    monkeypatch.setattr(specviz, "load_pair", lambda target, draft, runtime="torch", **_: tiny_text_pair(chat=True))
    st.cache_resource.clear()
    yield
    st.cache_resource.clear()


def opened(kind: str, text: str) -> AppTest:
    """A fresh session opening `text` as a snapshot link on the page of `kind`."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["snapshot"] = link_param(text)
    at.run()
    return at.switch_page(PAGES[kind]).run() if kind != "reading" else at


def live(at: AppTest, kind: str) -> None:
    """The page's own controls are there: the rest of the page still works."""
    key = {"sweep": "sweep_run", "race": "race_start", "reading": "decode_step"}[kind]
    assert at.button(key=key).label


def hostile_race(token: str) -> str:
    """A race snapshot whose first token id is written as `token` (a JSON number), the rest left as nulls: the reader
    or the check stops at the token first."""
    import dataclasses

    from specviz.analysis.race import Lane

    lane = {f.name: None for f in dataclasses.fields(Lane)} | {"tokens": ["TOKEN"]}
    result = {f.name: None for f in dataclasses.fields(RaceResult) if f.name != "mode"} | {"alone": lane}
    return packed("race", {"preset": "p", "texts": ["a", "b"], "result": result}).replace('"TOKEN"', token)


def test_a_400_digit_token_id_is_one_snapshot_error_from_a_file_a_link_or_a_dict():
    """Issue 57.3: an OverflowError before (math.isfinite of a 400-digit int); read, it is refused by the bounded
    reader with its digits named; handed in as a dict (a library user), the check names the field."""
    from specviz.analysis import snapshot_data

    text = hostile_race("9" * 400)
    for reopen in (snapshot.from_json, lambda t: snapshot.from_link_param(link_param(t))):
        with pytest.raises(SnapshotError) as info:
            reopen(text)
        assert str(info.value).startswith("this file cannot be read: it holds a whole number of 400 digits")
    raw = json.loads(hostile_race("1"))["data"]
    raw["result"]["alone"]["tokens"] = [10**400]
    with pytest.raises(SnapshotError, match=r"data.result.alone.tokens\[0\] is a whole number too long to read"):
        snapshot_data.check("race", raw)
    raw["result"]["alone"]["tokens"] = [2**53 + 1]  # past what a float holds exactly: not a token id either
    with pytest.raises(SnapshotError, match="too long to read"):
        snapshot_data.check("race", raw)


def test_a_link_with_a_400_digit_token_id_is_a_message_on_its_page(loads):
    at = opened("race", hostile_race("9" * 400))
    assert not at.exception
    assert at.error[0].value.startswith("**This link's snapshot cannot be opened.** this file cannot be read: ")
    assert "400 digits" in at.error[0].value
    live(at, "race")


@pytest.mark.parametrize("kind", ["sweep", "race", "reading"])
def test_a_link_whose_data_lacks_a_field_is_a_message_on_its_page(loads, kind):
    """The issue's link: a valid header, data {"x": 1}."""
    at = opened(kind, packed(kind, {"x": 1}))
    assert not at.exception
    error = at.error[0].value
    assert error.startswith("**This link's snapshot cannot be opened.** ")
    assert {"sweep": "'settings'", "race": "'preset'", "reading": "'trace'"}[kind] in error
    live(at, kind)


@pytest.mark.parametrize(
    "kind, path, value, field",
    [
        ("sweep", "taus.0.lengths", [1], "data.taus[0].lengths"),
        ("race", "result.alone", {"tokens": [1]}, "data.result.alone lacks"),
        ("reading", "reading.tau", 5, "data.reading.tau"),
    ],
)
def test_a_link_with_a_field_wrong_is_a_message_naming_it(loads, data, kind, path, value, field):
    at = opened(kind, packed(kind, changed(data[kind], path, value)))
    assert not at.exception
    assert plain(field) in at.error[0].value
    live(at, kind)


@pytest.mark.parametrize("kind", ["sweep", "race"])
def test_a_snapshot_file_with_a_field_wrong_is_a_message_naming_it(loads, data, kind):
    at = opened(kind, packed(kind, data[kind]))  # a frozen one open: its panel opens another
    bad = packed(kind, changed(data[kind], "texts" if kind == "race" else "pending", "x"))
    at.file_uploader(key=f"{kind}_snapshot_upload").set_value(("s.json", bad.encode(), "application/json")).run()
    assert not at.exception
    assert any(e.value.startswith("**This file cannot be opened.**") for e in at.error)
    assert any(plain("data.texts" if kind == "race" else "data.pending") in e.value for e in at.error)
    assert next(i.value for i in at.info).startswith("Frozen measurement")  # the one open is kept


@pytest.mark.parametrize("kind", ["sweep", "race", "reading"])
def test_a_snapshot_header_is_shown_as_text(loads, data, kind):
    hostile = {"machine": IMAGE, "runtime": "<img src=http://127.0.0.1:9/y.png>", "load": "# [load](http://x)"}
    at = opened(kind, packed(kind, data[kind], **hostile))
    assert not at.exception and not at.error, [e.value for e in at.error]
    banner = next(i.value for i in at.info if i.value.startswith("Frozen measurement"))
    assert f"on {plain(IMAGE)}, runtime {plain(hostile['runtime'])}, {plain(hostile['load'])}." in banner
    assert not MARKUP.search(banner) and "\\# \\[load\\]" in banner
    if kind != "reading":  # the snapshot panel's caption says the same
        caption = next(c.value for c in at.caption if c.value.startswith("Frozen measurement"))
        assert plain(IMAGE) in caption and not MARKUP.search(caption)


# --- a real browser ------------------------------------------------------------------------------------


class Counting(http.server.BaseHTTPRequestHandler):
    requests: ClassVar[list[str]] = []  # every path asked for, by any browser

    def do_GET(self) -> None:
        Counting.requests.append(self.path)
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


@pytest.mark.browser
@pytest.mark.slow
def test_a_hostile_snapshot_link_fetches_nothing_in_a_real_browser(data, tmp_path):
    """Chromium opens a sweep snapshot whose header holds an image, a tag and links to a local server: the banner
    reads as those characters, and the server sees no request, the page no <img> or <a> of it."""
    from benchmarks.appserver import CHROMIUM, CHROMIUM_ARGS, IDLE, serve

    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    from playwright.sync_api import sync_playwright

    server = http.server.HTTPServer(("127.0.0.1", 0), Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host = f"127.0.0.1:{server.server_port}"
    header = {
        "machine": f"![t](http://{host}/x.png)",
        "runtime": f'<img src="http://{host}/y.png">',
        "load": f"[a](http://{host}/a) http://{host}/bare",
    }
    try:
        with serve(tmp_path / "streamlit.log") as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1600})
            page.goto(f"{url}/sweep?snapshot={link_param(packed('sweep', data['sweep'], **header))}")
            banner = page.locator('[data-testid="stAlertContentInfo"]', has_text="Frozen measurement").first
            banner.wait_for(timeout=180_000)
            page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)  # the frozen sweep is drawn
            page.locator(IDLE).wait_for(timeout=60_000)
            page.wait_for_timeout(2000)
            text = banner.inner_text().replace("\u2060", "")
            assert all(value in text for value in header.values())  # the characters, not what they would make
            assert page.locator(f'img[src*="{host}"]').count() == 0
            assert page.locator(f'a[href*="{host}"]').count() == 0
            assert page.locator('[data-testid="stException"]').count() == 0
            browser.close()
    finally:
        server.shutdown()
    assert Counting.requests == []
