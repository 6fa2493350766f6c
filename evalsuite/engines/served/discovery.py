"""Who serves: each server's identity as its ``/v1/models`` and ``/version`` say it
(:class:`ServerInfo`), the same for every server of an engine, and the family and modes an
``evalsuite serve`` reports for its engine."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from evalsuite.engines.served.families import MODEL_FAMILIES
from evalsuite.engines.served.transport import run_coroutine
from evalsuite.errors import EngineUnavailableError

EVALSUITE_SERVER = "evalsuite serve"
"""What ``evalsuite serve`` answers as ``server`` on ``/version``."""
DISCOVERY_TIMEOUT_S = 30.0
"""The longest wait for a server's ``/models`` and ``/version`` answers, in seconds."""


@dataclass(frozen=True)
class ServerInfo:
    """What the server said about itself when the engine was created.

    ``server`` is ``"evalsuite serve"`` or ``"openai-compatible"``; ``version`` is ``/version``'s
    answer (None where the server has none); ``per_request_mode`` and ``keyed_outputs`` are
    ``evalsuite serve``'s: whether it takes each request's mode, and whether its engine's output
    depends on the sample's identity (replay).
    """

    api_base: str
    model: str
    server: str
    version: str | None
    per_request_mode: bool
    keyed_outputs: bool
    max_model_len: int | None = None
    root: str | None = None
    """The model card's ``root``: what vLLM loaded (a hub id or a folder)."""
    modes: tuple[str, ...] | None = None
    """``evalsuite serve``'s engine's modes (None: not said)."""
    model_family: str | None = None
    """``evalsuite serve``'s engine's family, one of :data:`MODEL_FAMILIES` (None: not said)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


SERVER_IDENTITY_FIELDS = tuple(f.name for f in fields(ServerInfo) if f.name != "api_base")
"""The fields of :class:`ServerInfo` that several servers of one engine must share."""


def query_servers(
    api_bases: Sequence[str],
    model: str | Sequence[str] | None,
    *,
    headers: Mapping[str, str],
    timeout_s: float,
    profile_name: str | None = None,
) -> list[ServerInfo]:
    """Each server's :class:`ServerInfo`, the first server choosing the model when none is
    given (or the first it serves of several); EngineUnavailableError if they differ in
    anything but their URL. ``timeout_s`` bounds each server's answers (at most
    :data:`DISCOVERY_TIMEOUT_S`); ``profile_name``, the peer profile whose checkpoints
    ``model`` lists, is named in the error when the server serves none of them."""
    first = _query_server(api_bases[0], model, headers, timeout_s, profile_name)
    infos = [first, *(_query_server(base, first.model, headers, timeout_s, profile_name)
                      for base in api_bases[1:])]
    for info in infos[1:]:
        differ = [
            f"{name} {getattr(first, name)!r} vs {getattr(info, name)!r}"
            for name in SERVER_IDENTITY_FIELDS
            if getattr(first, name) != getattr(info, name)
        ]
        if differ:
            raise EngineUnavailableError(
                f"the servers at {first.api_base} and {info.api_base} do not serve the same "
                f"model the same way ({'; '.join(differ)}; None: not reported); "
                "serve one checkpoint with one server version behind every --api-base of "
                "a run"
            )
    return infos


def _query_server(
    api_base: str, model: str | Sequence[str] | None, headers: Mapping[str, str],
    timeout_s: float, profile_name: str | None,
) -> ServerInfo:
    """Ask ``/models`` (and ``/version``) who is serving; unreachable -> EngineUnavailable.
    ``model``: the id to use, or several (a profile's checkpoints), the first served."""
    import aiohttp

    try:
        (status, models), (version_status, version) = run_coroutine(
            _get_json_all(
                [f"{api_base}/models", f"{api_base.removesuffix('/v1')}/version"],
                headers=headers,
                timeout_s=min(timeout_s, DISCOVERY_TIMEOUT_S),
            )
        )
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise EngineUnavailableError(
            f"no OpenAI-compatible server answers at {api_base} "
            f"({type(exc).__name__}: {exc}); start one (`evalsuite serve --engine NAME`, or "
            "vLLM with evalsuite's plugin: docs/gpu_nightly.md) or pass the right --api-base"
        ) from None
    try:
        if status != 200:
            raise ValueError(f"HTTP {status}")
        served = [str(entry["id"]) for entry in models["data"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise EngineUnavailableError(
            f"{api_base}/models did not answer with an OpenAI model list ({exc!r}); "
            "is --api-base the server's /v1 URL?"
        ) from None
    if not served:
        raise EngineUnavailableError(f"the server at {api_base} serves no model")
    candidates = (model,) if isinstance(model, str) else tuple(model or served[:1])
    chosen = next((name for name in candidates if name in served), None)
    if chosen is None:
        wanted = " or ".join(repr(name) for name in candidates)
        hint = (f"; pass --served-model-name NAME if it serves {profile_name} under "
                "another name") if profile_name is not None and model is not None and \
            not isinstance(model, str) else ""
        raise EngineUnavailableError(
            f"the server at {api_base} does not serve {wanted}; it serves: "
            f"{', '.join(served)}{hint}"
        )
    card = next(entry for entry in models["data"] if str(entry["id"]) == chosen)
    context = card.get("max_model_len") if isinstance(card, Mapping) else None
    root = card.get("root") if isinstance(card, Mapping) else None
    if version_status != 200 or not isinstance(version, Mapping):
        version = {}
    return ServerInfo(
        api_base=api_base,
        model=chosen,
        server=str(version.get("server", "openai-compatible")),
        version=None if version.get("version") is None else str(version["version"]),
        per_request_mode=version.get("per_request_mode") is True,
        keyed_outputs=version.get("keyed_outputs") is True,
        max_model_len=context if isinstance(context, int) and context > 0 else None,
        root=None if root is None else str(root),
        modes=_reported_modes(card) or _reported_modes(version),
        model_family=_reported_family(card) or _reported_family(version),
    )


def engine_family(server: ServerInfo, family: str, given: bool, where: str) -> str:
    """The family whose arithmetic the engine follows: ``family``, or the one an ``evalsuite
    serve`` says its engine counts by when none was ``given``; EngineUnavailableError when it
    says another than the one given. ``where`` names the servers in the message."""
    reported = server.model_family
    if reported is None:
        return family
    if given and reported != family:
        raise EngineUnavailableError(
            f"{where} runs a {reported} engine, not {family}: drop "
            f"model_family (--served-model) or pass {reported}")
    return reported


def served_modes(api_base: str, timeout_s: float = 10.0) -> tuple[str, ...] | None:
    """The modes an ``evalsuite serve`` at ``api_base`` runs (its ``/version``; empty: any
    mode); None for another server or none answering (the engine then says why when it is
    created)."""
    import aiohttp

    try:
        ((status, version),) = run_coroutine(_get_json_all(
            [f"{api_base.rstrip('/').removesuffix('/v1')}/version"], headers={},
            timeout_s=timeout_s))
    except (aiohttp.ClientError, TimeoutError):
        return None
    if status != 200 or not isinstance(version, Mapping):
        return None
    if version.get("server") != EVALSUITE_SERVER:
        return None
    return _reported_modes(version) or ()


def _reported_family(answer: Any) -> str | None:
    """The ``model_family`` of an ``evalsuite serve`` model card or ``/version`` answer, when it
    is one of :data:`MODEL_FAMILIES` (None otherwise)."""
    family = answer.get("model_family") if isinstance(answer, Mapping) else None
    return family if isinstance(family, str) and family in MODEL_FAMILIES else None


def _reported_modes(answer: Any) -> tuple[str, ...] | None:
    """The ``modes`` list of an ``evalsuite serve`` model card or ``/version`` answer (None:
    none given)."""
    modes = answer.get("modes") if isinstance(answer, Mapping) else None
    if isinstance(modes, list) and modes and all(isinstance(m, str) for m in modes):
        return tuple(modes)
    return None


async def _get_json_all(
    urls: Sequence[str], *, headers: Mapping[str, str], timeout_s: float
) -> list[tuple[int, Any]]:
    """``(status, parsed JSON or None)`` of a GET of each URL, in turn."""
    import aiohttp

    answers = []
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(headers=dict(headers), timeout=timeout) as session:
        for url in urls:
            async with session.get(url) as response:
                status, raw = response.status, await response.read()
            try:
                answers.append((status, json.loads(raw)))
            except ValueError:
                answers.append((status, None))
    return answers
