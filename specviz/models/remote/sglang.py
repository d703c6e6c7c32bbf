"""SGLang's native /generate as a verify step's target."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specviz.limits import MAX_TAU
from specviz.models.remote.engine import Engine, Row


class SGLang(Engine):
    """SGLang's native /generate: `input_ids`, `return_logprob`, `logprob_start_len`,
    `top_logprobs_num`; meta_info.input_token_logprobs / input_top_logprobs / output_top_logprobs hold
    [logprob, token_id, text] triples."""

    def _generate(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        info = self.post(f"{self.spec.root}/generate", payload, timeout).get("meta_info")
        self._need(isinstance(info, dict), "meta_info")
        return info

    def score(self, ids: Sequence[int], k: int, timeout: float, keep: int | None = None) -> list[Row]:
        start = max(0, len(ids) - 2 - MAX_TAU)  # a verify step reads at most τ + 1 rows
        info = self._generate(
            {
                "input_ids": list(ids),
                "return_logprob": True,
                "logprob_start_len": start,
                "top_logprobs_num": k,
                "sampling_params": {"max_new_tokens": 1, "temperature": 0},
            },
            timeout,
        )
        actual, tops, out = (
            info.get("input_token_logprobs"),
            info.get("input_top_logprobs"),
            info.get("output_top_logprobs"),
        )
        self._need(
            isinstance(actual, list) and isinstance(tops, list) and len(tops) == len(ids) - start,
            "input_token_logprobs and input_top_logprobs from logprob_start_len",
        )
        self._need(isinstance(out, list) and len(out) >= 1 and out[0], "output_top_logprobs")
        rows: list[Row] = [{} for _ in range(start + 1)]  # rows[j] scores ids[j]
        for j in range(start + 1, len(ids)):  # entry j − start scores ids[j]
            row = {int(t): float(lp) for lp, t, *_ in tops[j - start] or []}
            self._check_k(row, k, j)
            lp, t, *_ = actual[j - start]
            self._need(int(t) == ids[j] and lp is not None, f"the log-probability of prompt token {j}")
            row[ids[j]] = float(lp)
            rows.append(row)
        last = {int(t): float(lp) for lp, t, *_ in out[0]}
        self._check_k(last, k, len(ids))
        return [*rows[1:], last] if len(ids) > 1 else [last]

    def tokenize(self, text: str, timeout: float) -> list[int]:
        info = self._generate(
            {
                "text": text,
                "return_logprob": True,
                "logprob_start_len": 0,
                "sampling_params": {"max_new_tokens": 1, "temperature": 0},
            },
            timeout,
        )
        self._need(isinstance(info.get("input_token_logprobs"), list), "input_token_logprobs")
        return [int(entry[1]) for entry in info["input_token_logprobs"]]
