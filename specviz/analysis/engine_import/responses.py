"""JSON: a response, a list of them or JSON lines, with vLLM's speculative_decoding_stats, SGLang's meta_info or
llama.cpp's timings somewhere inside."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Sequence

from specviz.analysis.engine_import.checks import check_totals, contradiction, is_number_text
from specviz.analysis.engine_import.records import MAX_JSON_DEPTH, Record
from specviz.errors import EngineLogError

META_KEYS = (  # meta_info's counters (tokenizer_manager.py), under both spellings
    "spec_verify_ct",
    "spec_accept_token_num",
    "spec_draft_token_num",
    "spec_num_correct_drafts",
    "spec_num_proposed_drafts",
    "spec_accepted_drafts",
    "spec_proposed_drafts",
    "spec_accept_histogram",
    "spec_correct_drafts_histogram",
    "spec_accept_length",
)
META_FIELD = re.compile(  # a field as Python, JSON, a table or prose quote it: 'key': 3, "key": 3, `key` | 3, key = 3
    r"(?<![A-Za-z0-9_])(" + "|".join(META_KEYS) + r")[`'\"\]]{0,3}\s*[:=|]\s*"
    r"(\[\s*[0-9]+(?:\s*,\s*[0-9]+)*\s*,?\s*\]|[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)(?![0-9.])"
)


def json_records(text: str, lines: Sequence[str], context: dict) -> tuple[list[Record], int]:
    """A JSON document (a response, a list of them) or JSON lines (one object per line); each may also be a Python
    dict as Python prints it (single quotes, `print(meta_info)`)."""
    try:
        documents = [(1, json.loads(text))]
    except RecursionError:
        raise EngineLogError("The JSON nests too deep to be a response.") from None
    except ValueError as exc:
        if (python := _python_literal(text)) is not None:
            documents = [(1, python)]
        elif (quoted := meta_records(text)) and not _readable_lines(lines):  # a dict Python printed with nan, say
            return quoted, 0
        elif not all(line.lstrip().startswith("{") for line in lines if line.strip()):
            raise EngineLogError(
                f"Line {exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno}).", exc.lineno
            ) from None
        else:
            documents = [(n, _json_line(line, n)) for n, line in enumerate(lines, 1) if line.strip()]
    records: list[Record] = []
    for n, doc in documents:
        for path, found in _stats_objects(doc, "", 0, n, context):
            if (record := _json_record(found, path, n)) is not None:
                records.append(record)
    return records, 0


def _readable_lines(lines: Sequence[str]) -> bool:
    """Whether every non-blank line is a JSON object or a Python dict of its own (JSON lines)."""
    for line in lines:
        if not line.strip():
            continue
        try:
            json.loads(line)
        except (ValueError, RecursionError):
            if _python_literal(line) is None:
                return False
    return True


def _python_literal(text: str) -> object | None:
    """A dict or list as Python prints it (repr, pprint), read as a literal only (ast.literal_eval evaluates no
    code); None where the text is not one."""
    try:
        found = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return found if isinstance(found, dict | list) else None


def _json_line(line: str, n: int) -> object:
    try:
        return json.loads(line)
    except RecursionError:
        raise EngineLogError(f"Line {n}: the JSON nests too deep to be a response.", n) from None
    except ValueError as exc:
        if (python := _python_literal(line)) is not None:
            return python
        raise EngineLogError(f"Line {n}: not valid JSON ({exc.msg}, column {exc.colno}).", n) from None


def _stats_objects(doc: object, path: str, depth: int, n: int, context: dict) -> Iterable[tuple[str, tuple[str, dict]]]:
    """(path, (format, the statistics object)) for every statistics object in a document, in order; a llama.cpp
    response's system_fingerprint (bNNNN-hash) goes into `context`."""
    if depth > MAX_JSON_DEPTH:
        raise EngineLogError(f"Line {n}: the JSON nests more than {MAX_JSON_DEPTH} levels.", n)
    if isinstance(doc, list):
        for i, item in enumerate(doc):
            yield from _stats_objects(item, f"{path}[{i}]", depth + 1, n, context)
        return
    if not isinstance(doc, dict):
        return
    fingerprint = doc.get("system_fingerprint")
    if isinstance(fingerprint, str) and (m := re.fullmatch(r"b([0-9]{3,6})-([0-9a-f]{6,40})", fingerprint)):
        context["build"] = (int(m.group(1)), m.group(2))
    if "num_spec_steps" in doc and "acceptance_histogram" in doc:
        yield path or "the object", ("vllm-request", doc)
        return
    if "spec_verify_ct" in doc:
        yield path or "the object", ("sglang-request", doc)
        return
    if "draft_n" in doc and "draft_n_accepted" in doc:
        yield path or "the object", ("llamacpp-json", doc)
        return
    for key, value in doc.items():
        yield from _stats_objects(value, f"{path}.{key}" if path else str(key), depth + 1, n, context)


def _whole(obj: dict, key: str, where: str, n: int, required: bool = True) -> int | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or value != int(value):
        raise EngineLogError(f"Line {n}: {where}.{key} is {json.dumps(value)[:40]}, not a count.", n)
    return int(value)


def _histogram(raw: object, where: str, n: int) -> dict[int, int]:
    """{accepted draft tokens: steps}: a sparse map of strings or a list indexed by the count."""
    items = raw.items() if isinstance(raw, dict) else enumerate(raw) if isinstance(raw, list) else None
    if items is None:
        raise EngineLogError(f"Line {n}: {where} is not a histogram (a map or a list of counts).", n)
    hist = {}
    for key, count in items:
        if not is_number_text(str(key)) or isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise EngineLogError(f"Line {n}: {where} has {json.dumps(key)}: {json.dumps(count)[:20]}, not a count.", n)
        hist[int(key)] = hist.get(int(key), 0) + count
    return hist


def _json_record(found: tuple[str, dict], path: str, n: int) -> Record | None:
    key, obj = found
    if key == "vllm-request":
        return _vllm_request(obj, path, n)
    if key == "sglang-request":
        return _sglang_request(obj, path, n)
    drafted, accepted = _whole(obj, "draft_n", path, n), _whole(obj, "draft_n_accepted", path, n)
    check_totals(accepted, drafted, None, None, n)
    return Record("llamacpp-json", n, drafted=drafted, accepted=accepted)


def _from_histogram(hist: dict[int, int], k: int) -> tuple[int, ...]:
    """counts[i]: steps that accepted at least i + 1 (the sum of the histogram from i + 1 on)."""
    return tuple(sum(c for j, c in hist.items() if j > i) for i in range(k))


def _vllm_request(obj: dict, path: str, n: int) -> Record:
    steps, accepted, drafted, k = (
        _whole(obj, name, path, n)
        for name in ("num_spec_steps", "num_accepted_draft_tokens", "num_draft_tokens", "num_spec_tokens")
    )
    hist = _histogram(obj["acceptance_histogram"], f"{path}.acceptance_histogram", n)
    if sum(hist.values()) != steps:
        raise contradiction(n, f"{path}: the histogram counts {sum(hist.values())} steps, num_spec_steps is {steps}")
    if sum(j * c for j, c in hist.items()) != accepted:
        total = sum(j * c for j, c in hist.items())
        raise contradiction(n, f"{path}: the histogram accepts {total} tokens, num_accepted_draft_tokens is {accepted}")
    if hist and max(hist) > k:
        raise contradiction(n, f"{path}: a step accepted {max(hist)} of at most num_spec_tokens = {k}")
    check_totals(accepted, drafted, steps, k, n)
    mean = obj.get("mean_acceptance_length")
    if isinstance(mean, int | float) and steps and abs(mean - (1 + accepted / steps)) > 1e-6:
        raise contradiction(n, f"{path}: mean_acceptance_length {mean} is not 1 + {accepted} / {steps}")
    return Record("vllm-request", n, steps, drafted, accepted, _from_histogram(hist, k), None, k, given=True)


def _first_key(obj: dict, names: Sequence[str]) -> str | None:
    return next((name for name in names if obj.get(name) is not None), None)


def _sglang_request(obj: dict, path: str, n: int) -> Record | None:
    """meta_info's counters under either spelling (sgl-project/sglang#24081 renamed them; both may be present)."""
    steps = _whole(obj, "spec_verify_ct", path, n)
    if steps == 0:
        return None  # a request that never speculated (too short): nothing to read
    accepted_key = _first_key(obj, ("spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num"))
    drafted_key = _first_key(obj, ("spec_num_proposed_drafts", "spec_proposed_drafts", "spec_draft_token_num"))
    accepted = _whole(obj, accepted_key, path, n) if accepted_key else None
    drafted = _whole(obj, drafted_key, path, n) if drafted_key else None
    counts, k = None, None
    if drafted and steps and drafted % steps == 0:
        k = drafted // steps  # proposed draft tokens = verify steps × τ (a chain)
    hist_key = _first_key(obj, ("spec_correct_drafts_histogram", "spec_accept_histogram"))
    if hist_key is not None:
        raw = obj[hist_key]
        hist = _histogram(raw, f"{path}.{hist_key}", n)
        if sum(hist.values()) != steps:
            raise contradiction(
                n, f"{path}: the histogram counts {sum(hist.values())} steps, spec_verify_ct is {steps}"
            )
        total = sum(j * c for j, c in hist.items())
        if accepted is not None and total != accepted:
            raise contradiction(n, f"{path}: the histogram accepts {total} tokens, {accepted_key} is {accepted}")
        accepted = total
        if isinstance(raw, list) and raw and k is not None and len(raw) - 1 not in (k, max(hist or {0: 0})):
            raise contradiction(n, f"{path}: a histogram of {len(raw)} buckets for drafts of {k} tokens")
        k = k or (len(raw) - 1 if isinstance(raw, list) and len(raw) > 1 else max(hist) if hist else None)
        counts = _from_histogram(hist, k) if k else None
    if accepted is not None and drafted is not None:
        check_totals(accepted, drafted, steps, k, n)
    mean = None
    if accepted is not None:
        mean = 1.0 + accepted / steps  # exact; the engine's spec_accept_length counts the prefill's token too
    elif isinstance(length := obj.get("spec_accept_length"), int | float) and not isinstance(length, bool):
        mean = float(length) if length > 0 else None
    given = accepted is not None
    return Record("sglang-request", n, steps, drafted, accepted, counts, mean, k, given=given, exact=given)


def meta_records(text: str) -> list[Record]:
    """SGLang meta_info counters quoted anywhere in a log or prose (a 'Finish: … out={…}' line, a dict printed inside
    other text, a table): each request's fields in order, a new request where a field comes again; those with
    spec_verify_ct read as a response's meta_info is."""
    requests: list[tuple[int, dict]] = []
    for m in META_FIELD.finditer(text):
        key, raw = m.group(1), m.group(2)
        value: object = json.loads(raw.replace(" ", "").replace(",]", "]")) if raw.startswith("[") else raw
        if isinstance(value, str):
            value = int(value) if value.isdigit() else float(value)
        if not requests or key in requests[-1][1]:
            requests.append((text.count("\n", 0, m.start()) + 1, {}))
        requests[-1][1][key] = value
    found = []
    for n, fields in requests:
        if "spec_verify_ct" in fields and (record := _sglang_request(fields, "meta_info", n)) is not None:
            found.append(record)
    return found
