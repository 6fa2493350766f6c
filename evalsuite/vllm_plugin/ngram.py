"""DeepSeek-OCR's n-gram anti-repetition rule as a Model Runner V2 logits processor.

vLLM 0.33.0 runs Model Runner V2 by default, whose loader
(``vllm/v1/worker/gpu/sample/logits_processor/loader.py``) refuses any ``--logits-processors``
class that does not subclass ``vllm.v1.worker.gpu.sample.logits_processor.LogitsProcessor``.
DeepSeek's own ``NGramPerReqLogitsProcessor`` is a V1 ``AdapterLogitsProcessor``, so a server
started with it fails before reading a page. This class applies the same rule under V2.

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
from typing import TYPE_CHECKING, Any

from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor

if TYPE_CHECKING:
    import torch

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


class NoRepeatNGramLogitsProcessor(LogitsProcessor):
    """The rule above for every request that asks for it (``--logits-processors
    evalsuite.vllm_plugin.ngram:NoRepeatNGramLogitsProcessor``)."""

    def __init__(self, vllm_config: Any, req_states: Any) -> None:
        self._states = req_states
        self._rules: dict[int, NGramRule] = {}

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        parse_rule(sampling_params.extra_args)

    def add_request(self, req_idx: int, sampling_params: Any) -> bool:
        rule = parse_rule(sampling_params.extra_args)
        if rule is None:
            self._rules.pop(req_idx, None)
            return False
        self._rules[req_idx] = rule
        return True

    def apply(self, logits: torch.Tensor, ctx: Any) -> torch.Tensor:
        if not self._rules:
            return logits
        slots = ctx.expanded_idx_mapping.tolist()
        positions = ctx.pos.tolist()
        fed = ctx.input_ids.tolist()
        for row, slot in enumerate(slots):
            rule = self._rules.get(slot)
            if rule is None:
                continue
            banned = rule.banned(self.output_ids(slot, positions[row], fed[row]))
            if banned:
                logits[row, sorted(banned)] = float("-inf")
        return logits

    def output_ids(self, slot: int, position: int, fed_token: int) -> list[int]:
        """The request's output tokens up to and including the one fed at ``position``."""
        prompt_len = int(self._states.prompt_len.np[slot])
        if position < prompt_len:
            return []  # still in the prompt: nothing generated yet
        history = self._states.all_token_ids.gpu[slot, prompt_len:position].tolist()
        return [*history, fed_token]
