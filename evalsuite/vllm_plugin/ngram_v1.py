"""DeepSeek-OCR's n-gram anti-repetition rule (:mod:`evalsuite.vllm_plugin.ngram_rule`) as a V1
``AdapterLogitsProcessor``: the form vLLM's V1 runner loads, which is the runner of vLLM's CPU
build (Model Runner V2 needs Triton there). The V1 loader refuses a V2 processor ("must be a
subclass of LogitsProcessor"), so a CPU server gets this one, with the same rule and the same
request arguments (``vllm_xargs``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from vllm.v1.sample.logits_processor import AdapterLogitsProcessor

from evalsuite.vllm_plugin.ngram_rule import parse_rule


class NoRepeatNGramAdapterProcessor(AdapterLogitsProcessor):
    """The rule for every request whose ``extra_args`` ask for it (``--logits-processors
    evalsuite.vllm_plugin.ngram_v1:NoRepeatNGramAdapterProcessor``)."""

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        parse_rule(sampling_params.extra_args)

    def is_argmax_invariant(self) -> bool:
        return False  # it bans tokens, so it can change the greedy choice

    def new_req_logits_processor(
        self, params: Any
    ) -> Callable[[list[int], torch.Tensor], torch.Tensor] | None:
        rule = parse_rule(params.extra_args)
        if rule is None:
            return None

        def ban(output_ids: list[int], logits: torch.Tensor) -> torch.Tensor:
            banned = rule.banned(output_ids)
            if banned:
                logits[sorted(banned)] = float("-inf")
            return logits

        return ban
