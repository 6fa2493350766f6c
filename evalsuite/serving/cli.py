"""``evalsuite serve``: serve an engine over OpenAI's chat-completions API (see
:mod:`evalsuite.serving.app`), for the ``openai`` engine or any OpenAI client."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Sequence
from typing import Any

from evalsuite.images import add_max_image_pixels_argument, set_max_image_pixels

DESCRIPTION = "serve an engine over an OpenAI-compatible HTTP API"
EPILOG = """\
examples:
  evalsuite serve --engine tiny-deepseek-ocr-2 --port 8000
  evalsuite serve --engine replay --engine-option recordings=runs.jsonl --port 0
  evalsuite serve --engine deepseek-ocr-2 --engine-option model_path=DIR --max-batch 16
  evalsuite serve --engine mypackage.engines:make_engine

clients: any OpenAI client, or this project's: create_engine("openai", api_base=URL).
It prints one line when ready: "evalsuite serve: ENGINE on http://HOST:PORT/v1 (max batch B)";
SIGINT or SIGTERM stops it after the requests in flight are answered (exit status 0).
exit status: 0 stopped cleanly, 2 the engine cannot be created or bad options."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument(
        "--engine",
        required=True,
        help="engine name (tiny-deepseek-ocr-2, replay, tesseract, deepseek-ocr, "
        "deepseek-ocr-2, ...) or package.module:factory",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: a free one)")
    parser.add_argument(
        "--max-batch",
        type=int,
        default=32,
        help="most concurrent requests per engine.infer_batch call (default 32)",
    )
    parser.add_argument(
        "--batch-wait-ms",
        type=float,
        default=20.0,
        help="a batch not yet full closes after this long without a new request while the "
        "server is idle (default 20 ms)",
    )
    parser.add_argument(
        "--mode",
        help="resolution mode of requests that name none (default: gundam, or the engine's "
        "first mode if it has no gundam)",
    )
    add_max_image_pixels_argument(parser)
    parser.add_argument(
        "--engine-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        type=engine_option,
        help="an engine option (repeatable); VALUE is read as JSON when it parses "
        "(16, true, null, [1, 2]), else as a string",
    )


def engine_option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` as ``(key, value)``; VALUE is JSON when it parses, else the string."""
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.strip(), json.loads(value)
    except json.JSONDecodeError:
        return key.strip(), value


def run(args: argparse.Namespace) -> int:
    from evalsuite.engines import create_engine
    from evalsuite.errors import EvalsuiteError
    from evalsuite.serving.app import create_app

    set_max_image_pixels(args.max_image_pixels)
    try:
        engine = create_engine(args.engine, **dict(args.engine_option))
        app = create_app(
            engine,
            engine_name=getattr(engine, "name", "") or args.engine,
            max_batch=args.max_batch,
            batch_wait_s=args.batch_wait_ms / 1000,
            default_mode=args.mode,
        )
    except (EvalsuiteError, TypeError, ValueError) as exc:
        print(f"evalsuite serve: {exc}", file=sys.stderr)
        return 2
    serve(app, host=args.host, port=args.port, label=f"{args.engine}", max_batch=args.max_batch)
    print(f"evalsuite serve: {args.engine} stopped", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m evalsuite.serving``: the same command without the other subcommands."""
    parser = argparse.ArgumentParser(prog="evalsuite serve", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))


def serve(app: Any, *, host: str, port: int, label: str, max_batch: int) -> None:
    """Run ``app`` with uvicorn until SIGINT or SIGTERM; print the ready line once listening."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                bound_port = self.servers[0].sockets[0].getsockname()[1]
                print(
                    f"evalsuite serve: {label} on http://{host}:{bound_port}/v1 "
                    f"(max batch {max_batch})",
                    flush=True,
                )

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    # uvicorn re-raises the signal that stopped it once it has shut down; a no-op handler
    # underneath turns that into a normal return (exit status 0).
    handled = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in handled}
    try:
        Server(config).run()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
