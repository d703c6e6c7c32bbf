"""What a Streamlit 1.67 page sent, as the browser-less client reads it (benchmarks.stclient): the elements of its
delta messages and their queries (text, markdown, exceptions, widgets by key), a run's result, and a widget's value
as the WidgetState the frontend would send back."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.Element_pb2 import Element
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.NumberInput_pb2 import NumberInput
from streamlit.proto.Slider_pb2 import Slider
from streamlit.proto.WidgetStates_pb2 import WidgetState

FINISHED_SUCCESSFULLY = ForwardMsg.FINISHED_SUCCESSFULLY
FINISHED_WITH_COMPILE_ERROR = ForwardMsg.FINISHED_WITH_COMPILE_ERROR
FINISHED_EARLY_FOR_RERUN = ForwardMsg.FINISHED_EARLY_FOR_RERUN
FINISHED_FRAGMENT_RUN_SUCCESSFULLY = ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY
STATUS_NAMES = {v: k for k, v in ForwardMsg.ScriptFinishedStatus.items()}


class StreamlitClientError(RuntimeError):
    pass


# --------------------------------------------------------------------------------------
# Element helpers (work on Element protos, so they serve both RunResult and the client)
# --------------------------------------------------------------------------------------


def element_type(el: Element) -> str | None:
    return el.WhichOneof("type")


def element_text(el: Element) -> str | None:
    """The visible text of an element, for the common text-bearing element types."""
    t = element_type(el)
    if t in ("markdown", "text", "heading", "html", "json", "toast"):
        return getattr(el, t).body
    if t == "alert":
        return el.alert.body
    if t == "code":
        return el.code.code_text
    if t == "metric":
        return f"{el.metric.label}: {el.metric.body}"
    if t == "exception":
        return f"{el.exception.type}: {el.exception.message}"
    if t is not None:
        sub = getattr(el, t)
        if hasattr(sub, "label"):
            return sub.label
    return None


def has_field(msg: Any, name: str) -> bool:
    try:
        return msg.HasField(name)
    except ValueError:  # a field without presence: treat "non-default" as present
        return bool(getattr(msg, name))


def user_key_of(element_id: str) -> str | None:
    """The user key of a widget id ``$$ID-<hash>-<user_key>`` (as streamlit.runtime.state.common)."""
    if not element_id.startswith("$$ID-"):
        return None
    key = element_id.split("-", maxsplit=2)[-1]
    return None if key == "None" else key


@dataclass
class Node:
    """One node of the app's element tree, as the frontend keeps it."""

    path: tuple[int, ...]
    msg: ForwardMsg  # the ForwardMsg whose delta created this node
    run_id: str  # script_run_id of the run that last wrote it
    active_script_hash: str

    @property
    def element(self) -> Element | None:
        d = self.msg.delta
        return d.new_element if d.WhichOneof("type") == "new_element" else None


class ElementQueries:
    """Accessors shared by StreamlitClient (current tree) and RunResult (one run's deltas)."""

    def _elements(self) -> list[Element]:  # pragma: no cover - overridden
        raise NotImplementedError

    def elements(self, kind: str | None = None) -> list[Element]:
        els = self._elements()
        return [e for e in els if kind is None or element_type(e) == kind]

    def markdown(self) -> list[str]:
        return [e.markdown.body for e in self.elements("markdown")]

    def texts(self) -> list[str]:
        return [t for t in (element_text(e) for e in self.elements()) if t]

    def metrics(self) -> dict[str, str]:
        return {e.metric.label: e.metric.body for e in self.elements("metric")}

    def exceptions(self) -> list[tuple[str, str]]:
        """(type, message) of every exception element (st.exception and uncaught errors)."""
        return [(e.exception.type, e.exception.message) for e in self.elements("exception")]

    def alerts(self, fmt: str | None = None) -> list[str]:
        """Bodies of st.error/st.warning/st.info/st.success; fmt = 'ERROR', 'WARNING', ..."""
        want = None if fmt is None else Alert.Format.Value(fmt.upper())
        return [e.alert.body for e in self.elements("alert") if want is None or e.alert.format == want]

    def errors(self) -> list[str]:
        return self.alerts("ERROR")

    def contains(self, needle: str) -> bool:
        return any(needle in t for t in self.texts())


@dataclass
class RunResult(ElementQueries):
    """What one rerun request produced: every ForwardMsg until the run chain finished."""

    sent_at: float
    elapsed: float | None = None  # seconds from sending the BackMsg to the final script_finished
    first_delta_s: float | None = None  # seconds from sending to the first delta
    status: int | None = None  # final script_finished status (ForwardMsg.ScriptFinishedStatus)
    statuses: list[int] = field(default_factory=list)  # every script_finished in the chain
    messages: list[ForwardMsg] = field(default_factory=list)
    compile_errors: list[tuple[str, str]] = field(default_factory=list)
    page_not_found: list[str] = field(default_factory=list)
    bytes_received: int = 0

    @property
    def deltas(self) -> list[ForwardMsg]:
        return [m for m in self.messages if m.WhichOneof("type") == "delta"]

    @property
    def status_name(self) -> str | None:
        return None if self.status is None else STATUS_NAMES.get(self.status)

    @property
    def ok(self) -> bool:
        """Finished, with no compile error and no exception element."""
        return (
            self.status in (FINISHED_SUCCESSFULLY, FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
            and not self.compile_errors
            and not self.exceptions()
        )

    def _elements(self) -> list[Element]:
        return [m.delta.new_element for m in self.deltas if m.delta.WhichOneof("type") == "new_element"]


# --------------------------------------------------------------------------------------
# Widget value <-> WidgetState
# --------------------------------------------------------------------------------------


def state_from_proto(t: str, sub: Any, pushed: bool) -> WidgetState | None:
    """The WidgetState the frontend would hold for a widget just drawn (None: don't know)."""
    ws = WidgetState()
    if t == "number_input":
        if pushed:
            if not has_field(sub, "value"):
                return None
            v = sub.value
        elif has_field(sub, "default"):
            v = sub.default
        else:
            return None
        if sub.data_type == NumberInput.INT:
            ws.int_value = int(v)
        else:
            ws.double_value = float(v)
    elif t == "slider":
        if sub.type == Slider.SELECT_SLIDER:
            return None
        vals = list(sub.value) if pushed else list(sub.default)
        ws.double_array_value.data.extend(vals)
    elif t == "checkbox":
        ws.bool_value = sub.value if pushed else sub.default
    elif t in ("text_input", "text_area"):
        if pushed:
            if not has_field(sub, "value"):
                return None
            ws.string_value = sub.value
        elif has_field(sub, "default"):
            ws.string_value = sub.default
        else:
            return None
    elif t in ("selectbox", "radio"):
        if pushed:
            if not has_field(sub, "raw_value"):
                return None
            ws.string_value = sub.raw_value
        elif has_field(sub, "default") and 0 <= sub.default < len(sub.options):
            ws.string_value = sub.options[sub.default]
        else:
            return None
    else:
        return None
    return ws


def state_for_value(t: str, sub: Any, value: Any) -> WidgetState:
    """A WidgetState carrying a user-chosen value for a widget of type t."""
    ws = WidgetState()
    if t == "number_input":
        if sub.data_type == NumberInput.INT:
            ws.int_value = int(value)
        else:
            ws.double_value = float(value)
    elif t == "slider":
        vals = list(value) if isinstance(value, (list, tuple)) else [value]
        if sub.type == Slider.SELECT_SLIDER:
            ws.string_array_value.data.extend(str(v) for v in vals)
        else:
            ws.double_array_value.data.extend(float(v) for v in vals)
    elif t in ("checkbox",):
        ws.bool_value = bool(value)
    elif t in (
        "text_input",
        "text_area",
        "selectbox",
        "radio",
        "color_picker",
        "date_input",
        "time_input",
        "date_time_input",
        "feedback",
    ):
        ws.string_value = str(value)
    elif t in ("multiselect", "button_group"):
        vals = list(value) if isinstance(value, (list, tuple, set)) else [value]
        ws.string_array_value.data.extend(str(v) for v in vals)
    elif t == "dataframe":  # st.data_editor: {"edited_rows": {...}, "added_rows": [...], "deleted_rows": [...]}
        ws.string_value = value if isinstance(value, str) else json.dumps(value)
    elif t == "chat_input":
        ws.chat_input_value.data = str(value)
    elif t in ("pagination",):
        ws.int_value = int(value)
    else:
        raise StreamlitClientError(f"set_value does not know {t}; use set_widget_state()")
    return ws
