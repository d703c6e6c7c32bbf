"""vLLM's OpenAI-compatible server as a verify step's target."""

from __future__ import annotations

from collections.abc import Sequence

from specviz.models.remote.engine import Engine, Row


class VLLM(Engine):
    """vLLM's OpenAI-compatible /completions: token-id prompt, `prompt_logprobs` (an extension:
    {id: {logprob, rank, decoded_token}} per prompt position, the actual token always included) and
    `logprobs` with `return_tokens_as_token_ids` for the generated token ("token_id:123" keys)."""

    def score(self, ids: Sequence[int], k: int, timeout: float, keep: int | None = None) -> list[Row]:
        payload = {
            "prompt": list(ids),
            "max_tokens": 1,
            "temperature": 0,
            "logprobs": k,
            "prompt_logprobs": k,
            "return_tokens_as_token_ids": True,
            "add_special_tokens": False,
        }
        if self.spec.model:
            payload["model"] = self.spec.model
        choice = (self.post(f"{self.spec.url}/completions", payload, timeout).get("choices") or [{}])[0]
        prompt_rows, out = choice.get("prompt_logprobs"), choice.get("logprobs") or {}
        self._need(
            isinstance(prompt_rows, list) and len(prompt_rows) == len(ids), "prompt_logprobs for every prompt token"
        )
        tops = out.get("top_logprobs") or []
        self._need(len(tops) >= 1 and isinstance(tops[0], dict), "top logprobs for the generated token")
        rows: list[Row] = [{}]
        for j, entry in enumerate(prompt_rows[1:], start=1):
            row = {int(t): float(v["logprob"] if isinstance(v, dict) else v) for t, v in (entry or {}).items()}
            self._need(ids[j] in row, f"the log-probability of prompt token {j}")
            self._check_k(row, k, j)
            rows.append(row)
        last = {int(str(t).rsplit(":", 1)[-1]): float(v) for t, v in tops[0].items()}
        self._check_k(last, k, len(ids))
        # prompt row j scores ids[j] (after ids[:j]); ours are shifted by one: row j is after ids[: j + 1]
        return [*rows[1:], last] if len(ids) > 1 else [last]

    def tokenize(self, text: str, timeout: float) -> list[int]:
        payload = {"prompt": text, "add_special_tokens": False}
        if self.spec.model:
            payload["model"] = self.spec.model
        out = self.post(f"{self.spec.root}/tokenize", payload, timeout)
        self._need(isinstance(out.get("tokens"), list), "token ids from /tokenize")
        return [int(t) for t in out["tokens"]]
