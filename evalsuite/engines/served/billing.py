"""Usage and cost of served answers: the tokens an answer is billed for, and several calls'
``usage`` summed (what :mod:`evalsuite.records.metadata` prices with an engine's token
prices)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def billed_tokens(usage: Mapping[str, Any]) -> tuple[int, int]:
    """(prompt, completion) tokens of an answer's ``usage`` as billed: where ``total_tokens``
    exceeds the two (Gemini's OpenAI-compatible endpoint leaves its thinking out of
    ``completion_tokens``), the rest counts as completion, which the providers bill it as.
    Counts that are not whole numbers >= 0 count 0."""
    def count(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
            else 0

    prompt, completion = count("prompt_tokens"), count("completion_tokens")
    return prompt, max(completion, count("total_tokens") - prompt)


def summed_usage(usages: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The token counts of several calls' ``usage``, field by field (integer fields only)."""
    total: dict[str, int] = {}
    for usage in usages:
        for name, value in usage.items():
            if isinstance(value, int) and not isinstance(value, bool):
                total[name] = total.get(name, 0) + value
    return total
