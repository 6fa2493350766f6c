"""One page image through one engine, scored against its ground truth: the reports of
``evalsuite eval`` (:mod:`evalsuite.commands.eval_page`) and their table form.

:func:`dry_run_report` needs no model: it reports the page's vision-token arithmetic for the
mode; :func:`engine_report` runs the engine and scores its output. Bad input (unreadable image or
ground truth, unknown engine, a mode the engine does not have, no recording) raises
:class:`InputError`; an engine failing on the page is the report's ``error``.

Without a mode an engine runs in its default mode (:func:`default_mode`: ``small`` for
DeepSeek-OCR, ``default`` for DeepSeek-OCR-2, ``native`` for tesseract); the dry run describes
``small``, DeepSeek-OCR's default.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from evalsuite.errors import EvalsuiteError
from evalsuite.textformat import format_table, significant

DEFAULT_EXPERIMENT = "compression"
PREFERRED_MODE = "small"
"""The mode an engine runs in without ``--mode`` when it has it (DeepSeek-OCR's usual mode), and
the mode ``--dry-run`` describes."""


class InputError(EvalsuiteError):
    """Bad input from the user: reported as one line, exit status 2."""


def dry_run_report(args: argparse.Namespace) -> dict[str, Any]:
    """Image size, mode settings, tiles and vision tokens; ground-truth counts when given.

    The arithmetic is that of the engine named by ``--engine``, which must support ``--mode``:
    DeepSeek-OCR's with the engine's own tile cap (``deepseek-ocr``: 9, as its ``infer()``
    tiles), or DeepSeek-OCR-2's (``deepseek-ocr-2``, ``tiny-deepseek-ocr-2``).
    """
    from evalsuite.engines.deepseek_ocr2 import DeepseekOcr2Engine

    width, height = _image_size(args.image)
    engine = _dry_run_engine(args.engine)
    mode_name = args.mode or PREFERRED_MODE
    if issubclass(engine, DeepseekOcr2Engine):
        mode, grid, tokens, max_crops = _ocr2_arithmetic(width, height, mode_name)
    else:
        mode, grid, tokens, max_crops = _deepseek_ocr_arithmetic(
            width, height, mode_name, engine.max_crops
        )
    ground_truth = _read_ground_truth(args.ground_truth) if args.ground_truth else None
    report: dict[str, Any] = {
        "image": {"path": str(args.image), "width": width, "height": height},
        "engine": {"name": engine.name, "max_crops": max_crops},
        "mode": mode,
        "tile_grid": grid,
        "vision_tokens": tokens,
        "dry_run": True,
    }
    if ground_truth is not None:
        report["ground_truth"] = _ground_truth_dict(
            args.ground_truth, ground_truth, tokens["valid"], args.model_path
        )
    return report


def _dry_run_engine(name: str) -> Any:
    """The class of the engine ``name``, among those whose vision tokens need no model."""
    from evalsuite.engines.deepseek_ocr import DeepseekOcrEngine
    from evalsuite.engines.deepseek_ocr2 import DeepseekOcr2Engine
    from evalsuite.engines.tiny_deepseek_ocr2 import TinyDeepseekOcr2Engine

    engines = {
        engine.name: engine
        for engine in (DeepseekOcrEngine, DeepseekOcr2Engine, TinyDeepseekOcr2Engine)
    }
    if name not in engines:
        raise InputError(
            f"--dry-run knows the vision-token arithmetic of {', '.join(engines)}, "
            f"not of engine {name!r}"
        )
    return engines[name]


def _deepseek_ocr_arithmetic(
    width: int, height: int, mode: str, max_crops: int
) -> tuple[dict[str, Any], list[int] | None, dict[str, int], int | None]:
    """Mode settings, tile grid, vision tokens and tile cap under DeepSeek-OCR's arithmetic."""
    from evalsuite.tokens import tile_grid, vision_tokens

    settings = _mode(mode)
    grid = None
    if settings.crop_mode:
        grid = list(tile_grid(width, height, max_crops=max_crops, tile=settings.image_size))
    tokens = vision_tokens(width, height, mode, max_crops=max_crops)
    cap = max_crops if settings.crop_mode else None
    return _mode_dict(settings), grid, _tokens_dict(tokens), cap


def _ocr2_arithmetic(
    width: int, height: int, mode: str
) -> tuple[dict[str, Any], list[int] | None, dict[str, int], int | None]:
    """The same under DeepSeek-OCR-2's: its vision tokens are the processor's image tokens."""
    from evalsuite.engines.deepseek_ocr2 import ocr2_image_tokens, ocr2_tile_grid, ocr2_view

    try:
        view = ocr2_view(mode)
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc)) from None
    grid = ocr2_tile_grid(width, height, mode)
    settings = {
        "name": mode,
        "base_size": view.size,
        "image_size": view.tile_size,
        "crop_mode": view.crop_to_patches,
    }
    tokens = {
        "valid": ocr2_image_tokens(width, height, mode),
        "tiles": grid[0] * grid[1] if grid else 0,
    }
    max_crops = view.max_patches if view.crop_to_patches else None
    return settings, list(grid) if grid else None, tokens, max_crops


def engine_report(args: argparse.Namespace) -> dict[str, Any]:
    """Run the engine on the page and score its output."""
    from evalsuite.engines.base import InferenceRequest
    from evalsuite.engines.grounding import strip_grounding
    from evalsuite.engines.recording import check_key

    width, height = _image_size(args.image)
    mode = engine_mode(args.engine, args.mode)
    ground_truth = _read_ground_truth(args.ground_truth) if args.ground_truth else None
    key = {"experiment": DEFAULT_EXPERIMENT, "document": args.image.stem}
    key.update(parse_key(args.replay_key))
    request = InferenceRequest(
        image=args.image, prompt=args.prompt, mode=mode, sample_id=args.image.stem, key=key
    )
    if args.record is not None:
        try:
            check_key(request.key)
        except (TypeError, ValueError) as exc:
            raise InputError(f"--record: {exc}") from None
    engine = _create_engine(args)
    _require_recording(engine, request)
    if args.record is not None:
        engine = _recorder(engine, args.record)
    result = engine.infer(request)

    scored_text = strip_grounding(result.text)
    valid = result.valid_vision_tokens
    output_tokens, method = _output_tokens(result.output_tokens, scored_text)
    report: dict[str, Any] = {
        "image": {"path": str(args.image), "width": width, "height": height},
        "mode": mode,
        "engine": args.engine,
        "key": request.replay_key(),
        "output": result.text,
        "grounding_removed": scored_text != result.text,
        "vision_tokens": _engine_tokens_dict(result.vision_tokens),
        "output_tokens": output_tokens,
        "output_tokens_method": method,
        "compression_ratio": output_tokens / valid if valid else None,
        "latency_s": result.latency_s,
        "settings": result.settings,
        "error": result.error,
    }
    if args.record is not None:
        report["recorded_to"] = str(args.record)
    if ground_truth is not None:
        report["ground_truth"] = _ground_truth_dict(
            args.ground_truth, ground_truth, valid, args.model_path
        )
        report["metrics"] = _metrics(scored_text, ground_truth)
    return report


def default_mode(engine: str) -> str:
    """The mode ``engine`` runs in without ``--mode``: its class's ``default_mode`` if it has
    one, else :data:`PREFERRED_MODE` if it supports it, else its first supported mode."""
    from evalsuite.engines import supported_modes
    from evalsuite.engines.base import resolve_engine

    modes = _supported_modes(engine, supported_modes)
    declared = getattr(resolve_engine(engine), "default_mode", None)
    if isinstance(declared, str) and declared in modes:
        return declared
    return PREFERRED_MODE if PREFERRED_MODE in modes else modes[0]


def engine_mode(engine: str, mode: str | None) -> str:
    """``mode``, checked against the modes ``engine`` supports; its default mode when None."""
    from evalsuite.engines import supported_modes

    if mode is None:
        return default_mode(engine)
    modes = _supported_modes(engine, supported_modes)
    if mode not in modes:
        raise InputError(
            f"unknown mode {mode!r} for engine {engine!r}; choose one of: {', '.join(modes)}"
        )
    return mode


def _supported_modes(engine: str, supported_modes: Any) -> tuple[str, ...]:
    from evalsuite.errors import EvalsuiteError

    try:
        modes = tuple(supported_modes(engine))
    except EvalsuiteError as exc:
        raise InputError(str(exc)) from None
    if not modes:
        raise InputError(f"engine {engine!r} lists no modes")
    return modes


def parse_key(text: str) -> dict[str, Any]:
    """``"a=1,b=x,c=null"`` as ``{"a": 1, "b": "x", "c": None}`` (see ``--replay-key``)."""
    key: dict[str, Any] = {}
    for pair in (part.strip() for part in text.split(",")):
        if not pair:
            continue
        name, sep, value = (item.strip() for item in pair.partition("="))
        if not sep or not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise InputError(f"--replay-key: expected FIELD=VALUE pairs, got {pair!r}")
        if value.lower() in ("", "null", "none"):
            key[name] = None
        elif re.fullmatch(r"-?\d+", value):
            key[name] = int(value)
        else:
            key[name] = value
    return key


def format_report(report: dict[str, Any]) -> str:
    """The report as an aligned two-column table, the engine output last."""
    image = report["image"]
    rows = [("image", f"{image['path']} ({image['width']} x {image['height']} px)")]
    rows += _dry_run_rows(report) if report.get("dry_run") else _engine_rows(report)
    truth = report.get("ground_truth")
    if truth:
        counts = f"{truth['chars']} chars, {truth['tokens']} tokens ({truth['tokens_method']})"
        rows.append(("ground truth", f"{truth['path']}: {counts}"))
        rows.append(("gt compression", _number(truth["compression_ratio"], "n/a")))
    rows += [
        (name.replace("_", " "), _number(value))
        for name, value in report.get("metrics", {}).items()
    ]
    # The first row stands in for format_table's header: every row is aligned alike.
    lines = format_table(rows[0], rows[1:], align="ll").splitlines()
    if "output" in report:
        cleaned = " (grounding markup removed for scoring)" if report["grounding_removed"] else ""
        lines += ["", f"--- output{cleaned} ---", report["output"]]
    return "\n".join(lines)


def _dry_run_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    engine, mode = report["engine"], report["mode"]
    tokens, grid = report["vision_tokens"], report["tile_grid"]
    if mode["crop_mode"]:
        crops = f"crop mode, {mode['image_size']}-px tiles, at most {engine['max_crops']}"
    else:
        crops = "no crops"
    if grid:
        tiles = f"{tokens['tiles']} (grid {grid[0]} x {grid[1]})"
    else:
        tiles = "0 (the page fits one tile)" if mode["crop_mode"] else "0 (no crop mode)"
    settings = f"base {mode['base_size']}, image {mode['image_size']}, {crops}"
    return [
        ("mode", f"{mode['name']} on {engine['name']} ({settings})"),
        ("tiles", tiles),
        ("vision tokens", _format_tokens(tokens)),
    ]


def _engine_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    key = ", ".join(f"{k}={v!r}" for k, v in report["key"].items() if k != "prompt")
    rows = [
        ("engine", report["engine"]),
        ("mode", report["mode"]),
        ("key", key),
        ("vision tokens", _format_tokens(report["vision_tokens"])),
        ("output tokens", f"{report['output_tokens']} ({report['output_tokens_method']})"),
        ("compression ratio", _number(report["compression_ratio"], "n/a (no vision tokens)")),
        ("latency", f"{report['latency_s']:.3f} s"),
    ]
    if report.get("recorded_to"):
        rows.append(("recorded to", report["recorded_to"]))
    return rows


def _create_engine(args: argparse.Namespace) -> Any:
    """The engine ``--engine`` names, with ``--model-path`` and ``--recordings``."""
    from evalsuite.engines import create_engine
    from evalsuite.errors import EngineUnavailableError, EvalsuiteError

    options: dict[str, Any] = {}
    if args.model_path:
        options["model_path"] = args.model_path
    if args.recordings:
        options["recordings"] = args.recordings
    try:
        engine = create_engine(args.engine, **options)
    except TypeError as exc:
        flags = ", ".join("--" + name.replace("_", "-") for name in options)
        raise InputError(f"engine {args.engine!r} does not take {flags}: {exc}") from None
    except (EngineUnavailableError, EvalsuiteError, ValueError) as exc:
        raise InputError(str(exc)) from None
    return engine


def _require_recording(engine: Any, request: Any) -> None:
    """For the replay engine: a page it has no recording of is bad input (exit 2), not a
    failure of the engine on the page."""
    from evalsuite.engines.replay import ReplayEngine
    from evalsuite.errors import MissingRecordingError

    if not isinstance(engine, ReplayEngine):
        return
    try:
        engine.find(request)
    except MissingRecordingError as exc:
        raise InputError(f"{exc}; pass --replay-key to name the recorded page") from None


def _recorder(engine: Any, path: Path) -> Any:
    from evalsuite.engines.recording import RecordingEngine

    try:
        return RecordingEngine(engine, path)
    except (OSError, ValueError) as exc:
        raise InputError(f"--record {path}: {exc}") from None


def _image_size(path: Path) -> tuple[int, int]:
    """The page's size; every pixel is decoded (within the process's pixel limit), so a
    truncated file fails here, not in the engine."""
    from evalsuite.errors import ImageInputError
    from evalsuite.images import open_image

    try:
        with open_image(path) as image:
            return image.size
    except ImageInputError as exc:
        raise InputError(str(exc)) from None


def _mode(name: str) -> Any:
    from evalsuite.tokens import mode_settings

    try:
        return mode_settings(name)
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc)) from None


def _read_ground_truth(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"ground truth {str(path)!r} does not exist") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"ground truth {str(path)!r} is not UTF-8 text: {exc.reason}") from None
    except OSError as exc:
        raise InputError(f"cannot read ground truth {str(path)!r}: {exc.strerror}") from None


def _ground_truth_dict(
    path: Path, text: str, valid_vision_tokens: int | None, model_path: str | None
) -> dict[str, Any]:
    """Size of the ground truth; its compression is ground-truth tokens / valid vision tokens.

    Tokens are counted with the tokenizer of the ``--model-path`` weights when given, else with
    DeepSeek-OCR's packaged tokenizer.
    """
    from evalsuite.tokenizer import TokenizerUnavailableError
    from evalsuite.tokens import text_token_count

    try:
        tokens = text_token_count(text, model_path=model_path)
    except TokenizerUnavailableError as exc:
        raise InputError(str(exc)) from None
    return {
        "path": str(path),
        "chars": len(text),
        "tokens": int(tokens),
        "tokens_method": tokens.method,
        "compression_ratio": tokens / valid_vision_tokens if valid_vision_tokens else None,
    }


def _metrics(prediction: str, ground_truth: str) -> dict[str, Any]:
    from evalsuite.metrics import (
        edit_distance,
        edit_precision,
        normalized_edit_distance,
        word_metrics,
    )

    words = word_metrics(prediction, ground_truth)
    return {
        "edit_distance": edit_distance(prediction, ground_truth),
        "normalized_edit_distance": normalized_edit_distance(prediction, ground_truth),
        "edit_precision": edit_precision(prediction, ground_truth),
        "word_precision": words["precision"],
        "word_recall": words["recall"],
        "word_f1": words["f1"],
        "cer": words["cer"],
    }


def _output_tokens(engine_count: int | None, text: str) -> tuple[int, str]:
    """The engine's own output-token count, else DeepSeek-OCR's count of the text; with method."""
    if engine_count is not None:
        return engine_count, "engine tokenizer"
    from evalsuite.tokens import text_token_count

    count = text_token_count(text)
    return int(count), count.method


def _mode_dict(settings: Any) -> dict[str, Any]:
    return {
        "name": settings.name,
        "base_size": settings.base_size,
        "image_size": settings.image_size,
        "crop_mode": settings.crop_mode,
    }


def _tokens_dict(tokens: Any) -> dict[str, int]:
    return {
        "nominal": tokens.nominal,
        "valid": tokens.valid,
        "raw": tokens.raw,
        "tiles": tokens.tiles,
    }


def _engine_tokens_dict(value: Any) -> dict[str, int] | None:
    if value is None:
        return None
    if isinstance(value, int):
        return {"valid": value}
    return _tokens_dict(value)


def _format_tokens(tokens: dict[str, int] | None) -> str:
    if tokens is None:
        return "n/a (the engine reports none)"
    return " · ".join(f"{name} {count}" for name, count in tokens.items() if name != "tiles")


def _number(value: Any, missing: str = "n/a") -> str:
    if value is None:
        return missing
    return significant(value) if isinstance(value, float) else str(value)

