"""``evalsuite serve``: serve an engine over OpenAI's chat-completions API (see
:mod:`evalsuite.serving.app`), for the ``openai`` engine or any OpenAI client; :func:`main` is
``python -m evalsuite.serving``."""

from __future__ import annotations

import argparse
import errno
import json
import os
import socket
import sys
from collections.abc import Sequence
from typing import Any

from evalsuite.commands.arguments import whole_number
from evalsuite.images import add_max_image_pixels_argument, set_max_image_pixels
from evalsuite.serving.server import is_loopback, listening_socket, serve
from evalsuite.textformat import echo

DESCRIPTION = "serve an engine over an OpenAI-compatible HTTP API"
API_KEY_ENV = "EVALSUITE_SERVE_API_KEY"
"""The environment variable that gives ``--api-key``'s default (keeps the key off ``ps``)."""
EXIT_BAD_OPTIONS = 2
EXIT_CANNOT_LISTEN = 3
EPILOG = """\
examples:
  evalsuite serve --engine tiny-deepseek-ocr-2 --port 8000
  evalsuite serve --engine replay --engine-option recordings=runs.jsonl --port 0
  evalsuite serve --engine deepseek-ocr-2 --engine-option model_path=DIR --max-batch 16
  evalsuite serve --engine mypackage.engines:make_engine

clients: any OpenAI client, or this project's: create_engine("openai", api_base=URL).
It prints one line when ready: "evalsuite serve: ENGINE on http://HOST:PORT/v1 (max batch B)";
SIGINT or SIGTERM stops it after the requests in flight are answered (exit status 0).
Bodies over --max-body-bytes get 413; with --api-key (or $EVALSUITE_SERVE_API_KEY) the /v1
routes answer 401 without "Authorization: Bearer KEY". A --host other than a loopback address
without a key is served with a warning: anyone who reaches the port can use the engine.
exit status: 0 stopped cleanly, 2 the engine cannot be created or bad options, 3 the address
cannot be listened on (the port is in use, or the host is not an address of this machine)."""


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
    parser.add_argument("--port", type=port_number, default=8000,
                        help="port, 1-65535 (default 8000; 0: a free one)")
    parser.add_argument(
        "--api-key",
        default=os.environ.get(API_KEY_ENV) or None,
        help=f"require 'Authorization: Bearer KEY' on /v1 requests (default ${API_KEY_ENV})",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=whole_number(1),
        default=None,
        help="refuse request bodies over N bytes with 413 (default: 64 MiB at the default "
        "--max-image-pixels, scaled with it)",
    )
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


port_number = whole_number(0, 65535, what="a port number",
                           allowed="1-65535, or 0 for any free port")
"""``--port``'s type."""


def _listen_problem(host: str, port: int, exc: OSError) -> str:
    if isinstance(exc, socket.gaierror):
        return f"cannot listen on {host}:{port}: {host!r} is not a host name or address here"
    if exc.errno == errno.EADDRINUSE:
        return f"cannot listen on {host}:{port}: the port is in use (--port 0 takes a free one)"
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"


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
            max_body_bytes=args.max_body_bytes,
            api_key=args.api_key,
        )
    except (EvalsuiteError, TypeError, ValueError) as exc:
        echo(f"evalsuite serve: {exc}", file=sys.stderr)
        return EXIT_BAD_OPTIONS
    try:
        sock = listening_socket(args.host, args.port)
    except OSError as exc:
        echo(f"evalsuite serve: {_listen_problem(args.host, args.port, exc)}", file=sys.stderr)
        return EXIT_CANNOT_LISTEN
    if args.api_key is None and not is_loopback(args.host):
        echo(f"evalsuite serve: warning: {args.host} is not a loopback address and the server "
             f"has no key: anyone who reaches port {sock.getsockname()[1]} can use the engine "
             f"(--api-key or ${API_KEY_ENV})", file=sys.stderr)
    serve(app, sock, host=args.host, label=f"{args.engine}", max_batch=args.max_batch)
    echo(f"evalsuite serve: {args.engine} stopped", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m evalsuite.serving``: the same command without the other subcommands."""
    parser = argparse.ArgumentParser(prog="evalsuite serve", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))
