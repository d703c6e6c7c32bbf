"""benchmarks.probes's own parts: the Sandbox links' table, the check for what a browser would fetch, the loopback
listener's counts and the process tree's memory (the benchmark itself runs a server for minutes: not a test)."""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from streamlit.proto.Element_pb2 import Element

from benchmarks import probe_links, probes

HOST = "127.0.0.1:9"


def test_the_sandbox_table_has_400_words_and_columns_that_sum_to_one_within_a_links_size():
    text = probe_links.sandbox_table(400, tau=8, seed=3)
    table = json.loads(text)
    assert len(table["words"]) == len(set(table["words"])) == 400
    assert len(table["q"]) == 8 and len(table["p"]) == 9  # τ positions of q, τ + 1 of p
    for row in table["q"] + table["p"]:
        assert len(row) == 400
        assert sum(round(x * 100_000) for x in row) == 100_000  # in units of 1e-5: exactly 1
        assert abs(sum(row) - 1.0) < 1e-9 and min(row) > 0
    assert len(text.encode()) < 100_000  # the app reads a link's JSON up to 100 kB
    assert probe_links.sandbox_table(400, seed=3) == text and probe_links.sandbox_table(400, seed=4) != text


def _element(kind: str, **fields) -> Element:
    element = Element()
    getattr(element, kind).MergeFrom(type(getattr(element, kind))(**fields))
    return element


@pytest.mark.parametrize(
    "element, fetched",
    [
        (_element("markdown", body=f"![m](http://{HOST}/md.png)"), True),  # an image
        (_element("markdown", body=f"see http://{HOST}/auto"), True),  # a GFM autolink
        (_element("alert", body=f"[here](http://{HOST}/)"), True),
        (_element("toast", body=f"http://{HOST}"), True),
        (_element("markdown", body=f"!\\[m\\](http:\u2060//{HOST}/md.png)"), False),  # as specviz.viz.plain writes it
        (_element("markdown", body="http://127.0.0.1:90/x"), False),  # another port: another host
        (_element("html", body=f'<div><img src="http://{HOST}/a.png"></div>'), True),
        (_element("html", body=f"<p>&lt;img src=&quot;http://{HOST}/a.png&quot;&gt;</p>"), False),  # escaped: text
        (_element("text_input", label="Target", value=f"vllm:http://{HOST}/v1"), False),  # a value, not markdown
        (_element("text_input", label=f"[x](http://{HOST})", value=""), True),  # a label is markdown
        (_element("code", code_text=f"http://{HOST}/"), False),
    ],
)
def test_fetches_finds_what_a_browser_would_fetch_or_link_and_nothing_shown_as_text(element, fetched):
    assert bool(probe_links.fetches([element], HOST)) is fetched


def test_the_listener_counts_each_connection_and_request_and_answers_404():
    with probes.Listener() as listener:
        t0 = time.perf_counter()
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(f"http://{listener.host}/probe-owner/x/resolve/main/config.json", timeout=5)
        assert answer.value.code == 404
        connections, requests = listener.since(t0)
        assert connections == 1 and requests == ["GET /probe-owner/x/resolve/main/config.json"]
        assert listener.since(time.perf_counter()) == (0, [])


def test_the_process_trees_memory_counts_its_children():
    own = probes.tree_rss_gb(os.getpid())
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; b = bytearray(300_000_000); sys.stdout.write('x\\n'); "
            "sys.stdout.flush(); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout.readline() == b"x\n"  # its 300 MB are written (bytearray zero-fills them)
        assert probes.tree_rss_gb(os.getpid()) - own > 0.28
    finally:
        child.kill()
        child.wait()


def test_the_benchmark_says_how_to_run_it(capsys):
    with pytest.raises(SystemExit) as done:
        probes.main(["--help"])
    assert done.value.code == 0
    shown = capsys.readouterr().out
    assert "--settle" in shown and "--sandbox" in shown and "--auto" in shown


def test_the_lecturers_steps_are_grouped_by_the_kind_of_wave_open_when_they_were_clicked():
    t0 = 100.0
    steps = [(110.0, 0.2, "quiet"), (121.0, 0.9, "probes"), (125.0, 0.5, "probes"), (131.0, 0.3, "probes")]
    steps += [(141.0, 1.1, "probes"), (150.0, 0.4, "after")]
    waves = [("sandbox", 20.0, 30.0), ("auto-steps", 35.0, 45.0), ("sandbox", 50.0, 52.0)]
    got = probes.by_wave(steps, waves, t0)
    assert list(got) == ["sandbox", "auto-steps"]
    assert got["sandbox"]["steps"] == 3 and got["sandbox"]["p50"] == 0.5 and got["sandbox"]["p95"] == 0.9
    assert got["auto-steps"] == {"steps": 1, "p50": 1.1, "p95": 1.1}  # 131 s is in no wave's window
