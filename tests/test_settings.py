"""The one settings registry: every widget of every page is in it, its defaults come from SpecConfig
where SpecConfig has them, every default lies in its allowed values, and links carry what it says."""

from __future__ import annotations

import re
from pathlib import Path

from specviz import SpecConfig
from specviz.classroom import links, settings

PAGES = Path(__file__).resolve().parents[1] / "pages"
# widgets whose value is an action or a view, not a setting to keep or share
ACTIONS = {
    "run",
    "step",
    "back",
    "reset",
    "reveal",
    "clear",
    "upload",
    "show",
    "position",
    "chart",
    "table",
    "answer",
    "draw",
    "stop",
    "verify",
    "start",
    "measure",
    "download",
    "recommend",
}
# widgets that show a registered setting in another place and write it (presentation view's τ box: decode_tau)
MIRRORS = {"decode_tau_present": "decode_tau"}


def widget_keys() -> set[str]:
    keys = set()
    for path in PAGES.glob("*.py"):
        keys |= set(re.findall(r'key="([a-z]+_[a-z0-9_]+)"', path.read_text()))
        keys |= {f"{p}_{k}" for p in ("decode", "sweep", "lossless") for k in ("preset", "target", "draft")}
    return {k for k in keys if not ACTIONS & set(k.split("_")[1:]) and k not in MIRRORS}


def test_every_setting_a_page_draws_is_registered():
    missing = sorted(widget_keys() - set(settings.SETTINGS))
    assert missing == []
    assert set(MIRRORS.values()) <= set(settings.SETTINGS)  # what a mirror writes is kept and shared
    assert {"lossless_prompt", "lossless_trials_real", "lossless_preset"} <= set(settings.defaults())


def test_decoding_defaults_come_from_spec_config():
    spec = SpecConfig()
    assert settings.defaults()["decode_tau"] == spec.tau == 4
    assert settings.defaults()["decode_max_new"] == spec.max_new_tokens
    for key in ("temperature", "top_k", "top_p"):
        assert settings.defaults()[f"decode_{key}"] == getattr(spec, key)
    assert settings.defaults()["sweep_mode"] == "greedy"  # the sweep's own choice, stated once


def test_every_default_lies_in_its_allowed_values():
    for key, s in settings.SETTINGS.items():
        if s.allowed is None:
            continue
        if isinstance(s.default, str):
            assert s.default in s.allowed, key
        else:
            lo, hi = s.allowed
            values = s.default if isinstance(s.default, tuple) else (s.default,)
            assert all(lo <= v <= hi for v in values), key


def test_a_link_round_trips_through_the_registry():
    chosen = {"lossless_prompt": "Once upon a time", "lossless_trials_real": 300, "decode_tau": 7}
    back, problems = settings.from_link(links.encode(chosen))
    assert back == chosen and problems == []
    _, problems = settings.from_link({"lossless_trials_real": "5000"})
    assert problems == ["ignored lossless_trials_real='5000' from the link: allowed values are 10 to 1000"]


def test_a_page_link_holds_only_that_pages_linkable_settings():
    kept = {"decode_tau": 3, "sweep_taus": (1, 4), "lossless_tau": 2, "decode_unknown": 1}
    assert settings.for_link("decode", kept) == {"decode_tau": 3}


def test_a_link_made_before_the_custom_pair_named_servers_still_opens_it():
    old = "Custom: hub id or local folder"
    back, problems = settings.from_link({"decode_preset": old, "sweep_preset": old, "decode_prompt": old})
    assert problems == []
    assert back == {
        "decode_preset": "Custom: hub id, folder or server",
        "sweep_preset": settings.CUSTOM,
        "decode_prompt": old,
    }
    _, problems = settings.from_link({"decode_preset": "Custom: something else"})
    assert len(problems) == 1 and "'Custom: hub id, folder or server'" in problems[0]
