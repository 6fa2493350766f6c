"""DeepSeek-OCR's n-gram anti-repetition rule, written once for both of vLLM's model runners
(:mod:`evalsuite.vllm_plugin.ngram` for Model Runner V2, :mod:`evalsuite.vllm_plugin.ngram_v1`
for the V1 runner that vLLM runs on CPU). Imports nothing from vLLM.

The rule (DeepSeek's ``NoRepeatNGramLogitsProcessor``), per request, on its output tokens
``o[0:L]`` only, never the prompt: with ``n = ngram_size`` and ``w = window_size``, once
``L >= n``, for every start ``i`` with ``max(0, L - w) <= i <= L - n`` whose ``o[i:i+n-1]``
equals the last ``n - 1`` outputs, token ``o[i+n-1]`` gets logit ``-inf``, except the
``whitelist_token_ids``. DeepSeek's quirk is kept: it takes the last ``n - 1`` outputs as
``o[-(n-1):]``, which for ``n = 1`` is the whole output, so nothing is banned then. A request
opts in with ``extra_args`` (OpenAI API: ``vllm_xargs``)
``ngram_size`` (int > 0), ``window_size`` (int > 0, default 100, as DeepSeek's) and
``whitelist_token_ids``; without ``ngram_size`` it is left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_WINDOW = 100


@dataclass(frozen=True)
class NGramRule:
    """One request's settings of the rule."""

    ngram_size: int
    window_size: int
    whitelist: frozenset[int]

    def banned(self, output_ids: Sequence[int]) -> set[int]:
        """The tokens that would repeat an n-gram of the window (module docstring)."""
        size, length = self.ngram_size, len(output_ids)
        if length < size:
            return set()
        prefix = tuple(output_ids[-(size - 1) :])  # DeepSeek's slice: all of it when n = 1
        banned = {
            output_ids[start + size - 1]
            for start in range(max(0, length - self.window_size), length - size + 1)
            if tuple(output_ids[start : start + size - 1]) == prefix
        }
        return banned - self.whitelist


def parse_rule(extra_args: dict[str, Any] | None) -> NGramRule | None:
    """The rule a request's ``extra_args`` ask for (None: none); ValueError for bad values."""
    extra_args = extra_args or {}
    size = extra_args.get("ngram_size")
    if size is None:
        return None
    window = extra_args.get("window_size", DEFAULT_WINDOW)
    whitelist = extra_args.get("whitelist_token_ids") or ()
    for name, value in (("ngram_size", size), ("window_size", window)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"`{name}` has to be a strictly positive integer, got {value!r}.")
    if not isinstance(whitelist, Iterable) or not all(
        isinstance(token, int) and not isinstance(token, bool) for token in whitelist
    ):
        raise ValueError(f"`whitelist_token_ids` has to be a list of token ids, got {whitelist!r}.")
    return NGramRule(size, window, frozenset(whitelist))
