"""A peer model profile's request shape (:class:`ProfileShape`, ``model_profile``,
:mod:`evalsuite.models`): the served engine sends what the model's authors' runner sends, its
prompt for the request's task kind in its message layout, its decoding fields and nothing else
(no ``vllm_xargs``, no ``mm_processor_kwargs``), the page at its size (:func:`prepared_page`);
its pipeline turns the answer (or several calls) into the page the scorers read."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from PIL import Image

from evalsuite.datasets.pages import render_pdf_page
from evalsuite.engines.base import OCR_MODE, InferenceRequest, InferenceResult
from evalsuite.engines.deepseek_inputs import load_page_image
from evalsuite.engines.served.billing import summed_usage
from evalsuite.engines.served.discovery import ServerInfo
from evalsuite.engines.served.shapes import (
    cannot_send,
    completion_message,
    encode_page,
    output_tokens,
    served_label,
    served_settings,
)
from evalsuite.engines.served.transport import Exchange
from evalsuite.errors import EngineUnavailableError, EvalsuiteError
from evalsuite.models import (
    CallError,
    Completion,
    ModelProfile,
    TaskPrompt,
    UnsupportedTaskError,
    model_profile,
    single_call,
)
from evalsuite.models.convert import ConversionError


def peer_profile(name: str | None) -> ModelProfile | None:
    """The profile ``name`` when it is a peer's (DeepSeek's keep the engine's own ways: None);
    EngineUnavailableError for a model no served engine can run."""
    if name is None:
        return None
    profile = model_profile(name)
    if profile.unavailable is not None:
        raise EngineUnavailableError(f"{profile.name}: {profile.unavailable}")
    return profile if profile.family is None else None


def prepared_page(
    profile: ModelProfile, request: InferenceRequest
) -> tuple[Image.Image, Image.Image]:
    """The page of ``request`` upright in RGB (as every engine loads it), and as ``profile``'s
    image rule prepares it; a PDF page (``request.pdf_page``) rendered as the profile's runner
    renders one, where it has a rule of its own, and then prepared by that rule's step.
    ValueError for a request without a page image, and naming the rule, file and page when the
    PDF page cannot be rendered."""
    if request.image is None:
        raise ValueError(f"{profile.name} needs a page image; sample has none")
    rendering = profile.pdf_rendering
    if request.pdf_page is not None and rendering is not None:
        source = request.pdf_page
        try:
            page = render_pdf_page(source.path, source.index, rendering.dpi)
        except (EvalsuiteError, OSError, ValueError, RuntimeError) as exc:  # PdfiumError
            raise ValueError(f"{profile.name}'s PDF rendering ({rendering.rule}) of "
                             f"{source.path} page {source.index + 1}: {exc}") from exc
        prepare = rendering.prepare
    else:
        page = load_page_image(request.image)
        prepare = profile.prepare_image
    return page, prepare(page) if prepare is not None else page


class ProfileShape:
    """``profile``'s requests to ``server``, in one mode (``native``): the profile's decoding
    with ``max_tokens`` in its length field, ``decoding``'s fields over them, and ``prompt`` in
    place of its prompt text."""

    family = "none"
    mode = OCR_MODE

    def __init__(
        self,
        profile: ModelProfile,
        server: ServerInfo,
        *,
        max_tokens: int | None,
        prompt: str | None,
        decoding: Mapping[str, Any] | None,
    ) -> None:
        self.profile = profile
        self.server = server
        self.decoding = dict(profile.decoding)
        if max_tokens is not None:
            self.decoding[profile.max_tokens_field] = max_tokens
        self.decoding.update(decoding or {})
        self.prompt_override = prompt
        self.overridden = prompt is not None or bool(decoding)
        self.settings = served_settings(
            server, self.mode, self.decoding.get(profile.max_tokens_field), self.decoding)

    def modes(self) -> tuple[str, ...] | None:
        """The one mode, ``native``."""
        return (self.mode,)

    def label(self) -> str:
        """The profile's name when the server runs one of its checkpoints (its model id or,
        under another served name, the ``root`` vLLM loaded), else the served model's name;
        with ``-v<version>`` after version 1 and ``+<hash>`` of the prompt and decoding
        overrides."""
        checkpoints = self.profile.hf_ids
        ours = self.server.model in checkpoints or self.server.root in checkpoints
        label = self.profile.name.lower() if ours else served_label(self.server)
        if self.profile.version != 1:
            label += f"-v{self.profile.version}"
        if self.overridden:
            overrides = json.dumps([self.prompt_override, self.decoding], sort_keys=True)
            label += "+" + hashlib.sha256(overrides.encode()).hexdigest()[:8]
        return label

    def details(self) -> dict[str, Any]:
        """The profile's settings (:meth:`ModelProfile.settings`)."""
        return {"model_profile": self.profile.settings()}

    def task_prompt(self, request: InferenceRequest) -> TaskPrompt:
        """The profile's message for ``request``'s task (the ``prompt`` override in place of
        its text); UnsupportedTaskError for a task it has no prompt for."""
        prompt = self.profile.task(request.task)
        if self.prompt_override is not None:
            prompt = replace(prompt, text=self.prompt_override)
        return prompt

    def profile_body(
        self, prompt: TaskPrompt, page: Image.Image, decoding: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A chat completion: an optional system message, then one user message with the page
        (a PNG data URL) and the text in the profile's order, and ``decoding`` (the profile's,
        this call's changes, the overrides) as the body's own fields."""
        image_part = {"type": "image_url", "image_url": {"url": encode_page(page).data_url}}
        text_part = {"type": "text", "text": prompt.user_text}
        content = [image_part, text_part] if prompt.image_first else [text_part, image_part]
        messages: list[dict[str, Any]] = []
        if prompt.system is not None:
            messages.append({"role": "system", "content": prompt.system})
        messages.append({"role": "user", "content": content})
        return {"model": self.server.model, "messages": messages,
                **decoding, **self.decoding_overrides()}

    def decoding_overrides(self) -> dict[str, Any]:
        """What the engine's decoding changes of the profile's (--decoding, --max-new-tokens):
        applied to every call, after a pipeline's own changes (olmOCR's temperatures)."""
        return {k: v for k, v in self.decoding.items() if self.profile.decoding.get(k) != v
                or k not in self.profile.decoding}

    async def send(self, request: InferenceRequest, exchange: Exchange) -> InferenceResult:
        """The profile's pipeline for ``request``: the page prepared by its image rule, each
        call POSTed through ``exchange``, the answer converted; a sample the profile cannot
        answer (no prompt for its task, no page, every call failed, an answer its converter
        refuses) fails with the reason."""
        profile = self.profile
        calls: list[InferenceResult] = []
        try:
            task_message = self.task_prompt(request)
            original, page = await asyncio.to_thread(prepared_page, profile, request)
        except (UnsupportedTaskError, OSError, ValueError, TypeError) as exc:
            return cannot_send(request, exc)

        async def complete(image: Image.Image, decoding: Mapping[str, Any],
                           prompt: TaskPrompt | None = None) -> Completion:
            body = await asyncio.to_thread(self.profile_body, prompt or task_message, image,
                                           decoding)
            result = await exchange(body, _parse_call)
            result.settings["decoding"] = {k: v for k, v in body.items()
                                           if k not in ("model", "messages")}
            calls.append(result)
            if result.error is not None:
                raise CallError(result.error)
            return Completion(result.text, result.settings.get("finish_reason"),
                              result.settings.get("usage") or {})

        pipeline = profile.pipeline or single_call
        settings: dict[str, Any] = {
            **self.settings, "mode": request.mode,
            "model_profile": profile.settings(request.task),
            "page": list(original.size),
            "prepared_page": list(page.size),
        }
        if self.overridden:
            settings["model_profile"]["overrides"] = {
                "prompt": self.prompt_override, "decoding": self.decoding_overrides()}
        try:
            answer = await pipeline(profile, request.task or "", original, page, complete)
        except (CallError, ConversionError) as exc:
            last = calls[-1].settings if calls else {}
            return InferenceResult(text="", error=f"{type(exc).__name__}: {exc}", settings={
                **settings, **{k: last[k] for k in ("api_base", "decoding") if k in last},
                "calls": len(calls)})
        last = calls[-1].settings
        tokens = [call.output_tokens for call in calls]
        settings.update({
            "api_base": last.get("api_base"),
            "decoding": last.get("decoding"),
            "finish_reason": last.get("finish_reason"),
            "calls": len(calls),
            "usage": summed_usage(call.settings.get("usage") or {} for call in calls),
            **answer.details,
        })
        if answer.raw != answer.text:
            settings["raw_answer"] = answer.raw
        return InferenceResult(
            text=answer.text,
            output_tokens=sum(tokens) if all(isinstance(t, int) for t in tokens) else None,
            settings=settings,
        )


def _parse_call(payload: Any) -> InferenceResult:
    """One call's completion: its text, finish reason and usage."""
    text, choice, usage = completion_message(payload)
    return InferenceResult(
        text=text,
        output_tokens=output_tokens(usage.get("completion_tokens")),
        settings={"finish_reason": choice.get("finish_reason"), "usage": dict(usage)},
    )
