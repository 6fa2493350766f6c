"""Fake HTTP servers for the served-engine tests: an aiohttp app on a free local port, its event
loop in a thread of the test process."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable, Iterator

from aiohttp import web


@contextlib.contextmanager
def serving(app: web.Application) -> Iterator[str]:
    """``app`` listening on a free port of 127.0.0.1; yields its ``/v1`` base URL."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.run_until_complete(runner.cleanup())
        loop.close()


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def chat_app(models: Handler, completions: Handler, version: Handler | None = None
             ) -> web.Application:
    """An OpenAI-compatible server's routes: ``GET /v1/models``, ``POST /v1/chat/completions``
    (bodies up to 256 MiB: pages are sent inline) and, given, ``GET /version``."""
    app = web.Application(client_max_size=256 * 1024**2)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", completions)
    if version is not None:
        app.router.add_get("/version", version)
    return app
