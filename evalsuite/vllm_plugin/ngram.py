"""DeepSeek-OCR's n-gram anti-repetition rule (:mod:`evalsuite.vllm_plugin.ngram_rule`) as a
Model Runner V2 logits processor.

vLLM 0.33.0 runs Model Runner V2 by default on GPUs, whose loader
(``vllm/v1/worker/gpu/sample/logits_processor/loader.py``) refuses any ``--logits-processors``
class that does not subclass ``vllm.v1.worker.gpu.sample.logits_processor.LogitsProcessor``.
DeepSeek's own ``NGramPerReqLogitsProcessor`` is a V1 ``AdapterLogitsProcessor``, so a server
started with it fails before reading a page. This class applies the same rule under V2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor

from evalsuite.vllm_plugin.ngram_rule import NGramRule, parse_rule

if TYPE_CHECKING:
    import torch


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
