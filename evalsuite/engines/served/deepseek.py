"""DeepSeek-OCR's request shape (:class:`DeepSeekShape`): what the ``openai`` and ``vllm``
engines send a server of DeepSeek-OCR or DeepSeek-OCR-2, and how they check its answers.

Each request is one ``POST {api_base}/chat/completions``: a user message holding the page as a
PNG data URL (an ``image_url`` part; none for a text-only request) and the prompt text, with
``temperature=0``, ``max_tokens`` (8192; see below), ``skip_special_tokens=False`` and
DeepSeek-OCR's anti-repetition settings as ``vllm_xargs``: the request's benchmark setting
(:class:`~evalsuite.engines.base.AntiRepetition`; without one the recipe's ``ngram_size=30``,
``window_size=90``) and ``whitelist_token_ids=[128821, 128822]``, the ids of ``<td>`` and
``</td>``, as vLLM's recipes pass them (vllm-project/recipes ``DeepSeek/DeepSeek-OCR.md``). The
server applies them with the n-gram logits processor it was started with (evalsuite's plugin:
:mod:`evalsuite.vllm_plugin.ngram`), which reads them from the request's ``extra_args``.

What vLLM does with the request (read in vLLM 0.33.0's source):

- Prompt. DeepSeek-OCR's chat template is the BOS token followed by the message content
  (``vllm/transformers_utils/chat_templates/template_deepseek_ocr.jinja``), and vLLM puts one
  ``<image>`` per image part in front of the text, joined by a newline
  (``get_full_multimodal_text_prompt``, ``vllm/renderers/chat_utils/chat_message.py``): the
  text "Free OCR." becomes DeepSeek's own ``<image>\\nFree OCR.``. So the prompt is sent without
  DeepSeek's ``<image>`` placeholder (:func:`~evalsuite.engines.served.shapes.chat_text`); a
  placeholder left in the text would be counted against the images sent.
- Resolution mode. A stock vLLM serves DeepSeek-OCR in one mode only (its image-token count
  comes from module constants, ``vllm/transformers_utils/processors/deepseek_ocr.py``), so the
  ``vllm`` engine talks to a vLLM running evalsuite's plugin (:mod:`evalsuite.vllm_plugin`,
  ``make vllm-env``), which takes each request's mode from ``mm_processor_kwargs``
  (``{"mode": NAME}``) and preprocesses it exactly as DeepSeek's ``infer()``. Every answer is
  checked: vLLM reports ``usage.prompt_tokens``, which must equal BOS, the mode's image tokens
  (:func:`evalsuite.engines.deepseek_views.image_token_count`) and the text's tokens; a server
  that preprocessed otherwise (a stock vLLM, another mode) fails the sample with that
  difference instead of being scored. ``openai`` sends no such kwargs: it serves one
  ``mode`` per server, or each request's with ``evalsuite serve`` (``mode="per-request"``).
- Output length. DeepSeek-OCR's context is 8192 positions (vLLM's ``max_model_len``, which
  ``/v1/models`` reports per model), and vLLM's server refuses a request whose prompt plus
  ``max_tokens`` exceeds it. Deliberate deviation from the recipe's ``max_tokens=8192``: when
  ``max_tokens`` does not fit below the server's ``max_model_len``, it is left out, and vLLM
  generates up to the context the prompt leaves (``settings`` records ``max_tokens`` None and
  the ``max_model_len``).

Vision tokens come from the image size and mode (the ``model_family`` option,
:mod:`evalsuite.engines.served.families`). ``output_tokens`` is the response's
``usage.completion_tokens`` (``evalsuite serve`` also says when its engine counted none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalsuite.engines.base import InferenceRequest
from evalsuite.engines.deepseek_views import FAMILY_VIEWS, image_token_count
from evalsuite.engines.served.chat import ChatShape, length_field
from evalsuite.engines.served.discovery import EVALSUITE_SERVER, ServerInfo
from evalsuite.engines.served.families import (
    MODEL_FAMILIES,
    PER_REQUEST,
    ModelFamily,
    check_family_mode,
)
from evalsuite.engines.served.shapes import EncodedPage, chat_text
from evalsuite.tokens import text_token_count

TABLE_CELL_TOKEN_IDS = (128821, 128822)
"""``<td>`` and ``</td>`` in DeepSeek-OCR's tokenizer: the recipe's n-gram whitelist."""


class DeepSeekShape(ChatShape):
    """DeepSeek-OCR's request (module docstring) to ``server``, in ``mode`` (``per-request``:
    each request's) of family ``family``. ``mode_kwarg`` is the ``mm_processor_kwargs`` key
    that carries each request's mode (None: not sent), ``max_tokens`` the length field
    (:func:`~evalsuite.engines.served.chat.length_field`), ``ngram_size`` (None: no
    ``vllm_xargs``), ``window_size`` and ``whitelist_token_ids`` the n-gram rule's defaults."""

    def __init__(
        self,
        server: ServerInfo,
        where: str,
        *,
        mode: str,
        family: str,
        mode_kwarg: str | None,
        max_tokens: int | None,
        ngram_size: int | None,
        window_size: int,
        whitelist_token_ids: Sequence[int],
    ) -> None:
        decoding: dict[str, Any] = {
            "temperature": 0.0,
            "skip_special_tokens": False,
            **length_field(max_tokens, server.max_model_len),
        }
        if ngram_size is not None:
            decoding["vllm_xargs"] = {
                "ngram_size": ngram_size,
                "window_size": window_size,
                "whitelist_token_ids": [int(token) for token in whitelist_token_ids],
            }
        super().__init__(server, where, mode, family, decoding)
        self.mode_kwarg = mode_kwarg

    def modes(self) -> tuple[str, ...] | None:
        """The server's one mode; per request: the modes an ``evalsuite serve`` says its engine
        has (not when the mode travels in ``mm_processor_kwargs``), else the family's."""
        if self.mode != PER_REQUEST:
            return (self.mode,)
        if self.server.modes is not None and self.mode_kwarg is None:
            return self.server.modes
        return MODEL_FAMILIES[self.family].modes

    def check_mode(self, mode: str) -> None:
        """ValueError naming the family's modes if ``mode`` is not one of them (or, behind
        ``evalsuite serve``, not one of its engine's)."""
        if self.server.modes is not None and self.mode_kwarg is None:
            super().check_mode(mode)
        else:
            check_family_mode(self.family, mode)

    def request_decoding(self, request: InferenceRequest) -> dict[str, Any]:
        """The decoding fields of ``request``'s body: the engine's, with the request's
        anti-repetition setting (its benchmark's) in ``vllm_xargs`` when it has one and the
        engine sends the n-gram rule at all (``ngram_size`` not None)."""
        setting = request.anti_repetition
        if setting is None or "vllm_xargs" not in self.decoding:
            return self.decoding
        xargs = {
            **self.decoding["vllm_xargs"],
            "ngram_size": setting.ngram_size,
            "window_size": setting.window_size,
        }
        return {**self.decoding, "vllm_xargs": xargs, "anti_repetition_source": setting.source}

    def processor_fields(
        self, request: InferenceRequest, page: EncodedPage | None
    ) -> dict[str, Any]:
        """``mm_processor_kwargs`` with the request's mode, for a page to a server that takes
        it there."""
        if self.mode_kwarg is None or page is None:
            return {}
        return {"mm_processor_kwargs": {self.mode_kwarg: request.mode}}

    def vision_tokens(self, page: EncodedPage, mode: str) -> Any:
        """The page's vision tokens in ``mode`` by :meth:`counting_family`'s arithmetic (None:
        a family that counts none)."""
        family = self.counting_family(mode)
        if family.count_vision_tokens is None:
            return None
        return family.count_vision_tokens(page.width, page.height, mode)

    def counting_family(self, mode: str) -> ModelFamily:
        """The family whose arithmetic counts a page's vision tokens in ``mode``: the engine's;
        behind an ``evalsuite serve`` whose engine fixes no family (replay: recordings of any
        engine), the family that has ``mode`` (no two share a mode), ``none`` if none has."""
        own = MODEL_FAMILIES[self.family]
        if own.modes is None or mode in own.modes:
            return own
        if self.server.server == EVALSUITE_SERVER and self.server.model_family is None:
            return next((family for family in MODEL_FAMILIES.values()
                         if family.modes is not None and mode in family.modes),
                        MODEL_FAMILIES["none"])
        return own

    def check_usage(
        self, request: InferenceRequest, page: EncodedPage | None, usage: Mapping[str, Any]
    ) -> None:
        """ValueError unless the server's ``usage.prompt_tokens`` is DeepSeek's layout, where
        the mode travels in ``mm_processor_kwargs`` to a vLLM (not ``evalsuite serve``)."""
        if self.mode_kwarg is None or self.server.server == EVALSUITE_SERVER:
            return
        if self.family not in FAMILY_VIEWS:
            return
        reported = usage.get("prompt_tokens")
        expected = self.expected_prompt_tokens(request, page)
        if reported != expected:
            raise ValueError(
                f"the server's prompt for {request.mode!r} mode has {reported} tokens where "
                f"DeepSeek's preprocessing gives {expected}: it did not preprocess the page as "
                "DeepSeek does in that mode (a vLLM without evalsuite's plugin? start it from "
                "`make vllm-env`, see docs/gpu_nightly.md)"
            )

    def expected_prompt_tokens(self, request: InferenceRequest, page: EncodedPage | None) -> int:
        """Prompt tokens of ``request`` as DeepSeek lays it out: BOS, the page's image tokens
        in the request's mode (none without a page), then the chat text, after a newline when
        a page precedes it."""
        text = chat_text(request.prompt)
        if page is None:
            return 1 + text_token_count(text)
        views = FAMILY_VIEWS[self.family][request.mode]
        return 1 + image_token_count(page.width, page.height, views) + text_token_count(
            "\n" + text
        )
