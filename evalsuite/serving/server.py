"""The HTTP side of ``evalsuite serve``: a socket on the address to listen on, and uvicorn
running the application (:mod:`evalsuite.serving.app`) on it until SIGINT or SIGTERM."""

from __future__ import annotations

import ipaddress
import signal
import socket
from typing import Any

from evalsuite.textformat import echo


def is_loopback(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` (IPv6 where ``host`` is), for uvicorn to listen
    on. OSError (``socket.gaierror`` for a host that does not resolve) when it cannot be."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def serve(app: Any, sock: socket.socket, *, host: str, label: str, max_batch: int) -> None:
    """Run ``app`` with uvicorn on ``sock`` (bound to ``host``) until SIGINT or SIGTERM; print
    the ready line once listening."""
    import uvicorn

    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                bound_port = self.servers[0].sockets[0].getsockname()[1]
                echo(
                    f"evalsuite serve: {label} on http://{shown}:{bound_port}/v1 "
                    f"(max batch {max_batch})",
                    flush=True,
                )

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    # uvicorn re-raises the signal that stopped it once it has shut down; a no-op handler
    # underneath turns that into a normal return (exit status 0).
    handled = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in handled}
    try:
        Server(config).run(sockets=[sock])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
