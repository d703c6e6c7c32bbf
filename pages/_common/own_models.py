"""The sidebar's "Models on this computer": the GGUF files found in the usual places (specviz.models.gguf), a target
and the drafts that fit it, with what each is and what the pair needs. In class mode only the operator's folders
are listed (and only they load: specviz.loading's guard)."""

from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from pages._serving import config as _server
from specviz import specs
from specviz.classroom import across
from specviz.drafts import kinds
from specviz.models import embedded, gguf
from specviz.specs import ModelSpec
from specviz.viz.plain import plain


def places() -> list[gguf.Place]:
    """Where to look: the operator's folders in class mode; otherwise the usual places and specviz's own cache
    (the embedded target's float32 file and the drafts quantized from it)."""
    server = _server.config()
    if server.class_policy.on:
        return [gguf.Place(source=gguf.FOLDER, path=Path(f).expanduser()) for f in server.class_policy.folders]
    return [*server.places, gguf.Place(source=gguf.FOLDER, path=embedded.cache_root())]


@st.cache_data(ttl=30, show_spinner=False)
def _found(where: tuple[tuple[str, str], ...]) -> list[gguf.FoundModel]:
    return gguf.find_models([gguf.Place(source=s, path=Path(p)) for s, p in where])


def found() -> list[gguf.FoundModel]:
    """The GGUF models on this computer (looked for again at most every 30 s)."""
    return _found(tuple((p.source, str(p.path)) for p in places()))


def where(model: gguf.FoundModel) -> str:
    """Where it was found: the place's name, or for a plain folder the folder (~ for the home folder)."""
    if model.source != gguf.FOLDER:
        return model.source
    folder, home = str(model.path.parent), str(Path.home())
    return "~" + folder[len(home) :] if folder.startswith(home + os.sep) else folder


def describe(model: gguf.FoundModel) -> str:
    """ "Q4_0 · 0.13 B · 92 MB · SmolLM2-135M-Instruct.Q4_0.gguf · LM Studio": what tells models apart first, so a
    narrow sidebar that cuts the line keeps it."""
    info = model.info
    if info is None:
        return f"{model.name} (unreadable)"
    size = f"{info.parameters / 1e9:.2f} B · {gguf.format_bytes(info.file_bytes)}"
    return f"{info.quantization} · {size} · {model.name} · {where(model)}"


def keep(key: str, options: list[str]) -> None:
    """A choice from a link or an earlier visit that is not on this computer (any more), or a draft that does not fit a
    new target, becomes the first option, not an error. Set, not dropped: the browser keeps showing its own value of a
    keyed box until the script sets one, so a dropped draft still read as the old one (the new target's own file)."""
    if options and st.session_state.get(key) not in options:
        st.session_state[key] = options[0]


def picker(prefix: str, disabled: bool = False) -> tuple[ModelSpec, ModelSpec] | None:
    """A found target and a draft that fits it: (target spec, draft spec), a found file's spec keeping its path and
    header (specviz.specs.found: loading neither looks for it nor reads it again); None when none is found."""
    models = found()
    readable = [m for m in models if m.info is not None]
    if not readable:
        where = ", ".join(str(p.path) for p in places()) or "none (the operator listed no folders)"
        st.info(
            f"No GGUF model found. Looked in: {plain(where)}. Put `.gguf` files in one of them, or name a folder "
            f"with `{gguf.MODELS_DIR_ENV}`.",
            icon=":material/folder_open:",
        )
        return None
    by_spec = {m.spec: m for m in readable}
    keep(f"{prefix}_local_target", list(by_spec))
    target_spec = st.selectbox(
        "Target (p), found on this computer",
        list(by_spec),
        format_func=lambda spec: describe(by_spec[spec]),
        key=f"{prefix}_local_target",
        disabled=disabled,
    )
    target = by_spec[target_spec]
    st.caption(plain(describe(target)))
    fitting = {m.spec: m for m in gguf.compatible_drafts(target, readable)}
    words = {kind.offer: kind.label for kind in kinds.offered()}  # self, prompt lookup: the registry's
    choices = [*fitting, *words]
    keep(f"{prefix}_local_draft", choices)
    draft_spec = st.selectbox(
        "Draft (q): the files whose vocabulary matches, smaller than the target",
        choices,
        format_func=lambda spec: words.get(spec) or describe(fitting[spec]),
        key=f"{prefix}_local_draft",
        disabled=disabled,
    )
    if draft_spec in fitting:  # the whole name under the box, which cuts a long one at 1280 and 1920 px
        st.caption(plain(describe(fitting[draft_spec])))
    draft_info = fitting[draft_spec].info if draft_spec in fitting else target.info
    needed = gguf.memory_needed(target.info, draft_info)
    free = gguf.free_memory()
    room = f"; {gguf.format_bytes(free)} free" if free is not None else ""
    st.caption(
        f"{len(fitting)} of the other {len(readable) - 1} files fit this target as drafts. The pair needs about "
        f"{gguf.format_bytes(needed)}{room}."
    )
    others = across.unfit_files(target, readable)
    if others:
        with st.expander(f"{len(others)} do{'es' if len(others) == 1 else ''} not fit as drafts, each with why"):
            for unfit in others:
                st.caption(plain(f"{unfit.label}: {unfit.reason}"))
    unreadable = [m for m in models if m.info is None]
    if unreadable:
        with st.expander(f"{len(unreadable)} file{'s' if len(unreadable) != 1 else ''} could not be read"):
            for m in unreadable:
                st.caption(plain(f"{m.name}: {m.error}"))
    draft = specs.found(fitting[draft_spec]) if draft_spec in fitting else specs.parse(draft_spec)
    return specs.found(target), draft
