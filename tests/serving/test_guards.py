"""``evalsuite serve`` as a server people can leave running: the body limit (413 before the body
is read whole), short error answers, the API key (401), the port and address checks of the
command, and a request the engine cannot take answered 4xx; plus what was already right (no URL
fetched, ``file://`` refused, a decompression bomb refused from its header, 200 concurrent
requests answered)."""

from __future__ import annotations

import base64
import socket
import struct
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from evalsuite.commands import serve as cli
from evalsuite.images import DEFAULT_MAX_IMAGE_PIXELS
from evalsuite.perf.serving import FIXED_LATENCY_ENGINE
from evalsuite.serving.app import create_app
from evalsuite.serving.guards import DEFAULT_BODY_BYTES, default_body_limit
from tests.serving.test_app import EchoEngine, chat, data_url

COMPLETIONS = "/v1/chat/completions"
PAGE = Image.new("RGB", (64, 48), "white")


def client_of(engine: EchoEngine, **options: object) -> TestClient:
    return TestClient(create_app(engine, engine_name="echo", **options))


def test_the_default_body_limit_is_64_mib_at_the_default_image_limit_and_scales() -> None:
    assert DEFAULT_BODY_BYTES == 64 * 2**20
    assert default_body_limit(DEFAULT_MAX_IMAGE_PIXELS) == 64 * 2**20
    assert default_body_limit(2 * DEFAULT_MAX_IMAGE_PIXELS) == 128 * 2**20
    assert default_body_limit(1) == 2**20  # never below 1 MiB


def test_a_body_over_the_limit_is_refused_unread_declared_or_streamed() -> None:
    engine = EchoEngine()
    limit = 4096
    body = b'{"messages": [{"role": "user", "content": "' + b"x" * 8000 + b'"}]}'
    with client_of(engine, max_body_bytes=limit) as client:
        declared = client.post(COMPLETIONS, content=body,
                               headers={"content-type": "application/json"})
        assert declared.status_code == 413
        assert "limit of 4_096 bytes" in declared.json()["error"]["message"]

        sent = []

        def chunks() -> Iterator[bytes]:  # no Content-Length: the body arrives in pieces
            for start in range(0, len(body), 1000):
                sent.append(start)
                yield body[start:start + 1000]

        streamed = client.post(COMPLETIONS, content=chunks(),
                               headers={"content-type": "application/json"})
        assert streamed.status_code == 413
        assert client.post(COMPLETIONS, json=chat()).status_code == 200  # under the limit
    assert len(engine.seen) == 1


def test_error_answers_quote_only_an_excerpt_of_the_request() -> None:
    with client_of(EchoEngine()) as client:
        malformed = client.post(COMPLETIONS, content=b'{"messages": [' + b"7," * 1_000_000,
                                headers={"content-type": "application/json"})
        assert malformed.status_code == 422
        assert len(malformed.content) < 1000 and "JSON" in malformed.json()["error"]["message"]
        wrong_type = client.post(COMPLETIONS, json={"messages": "y" * 100_000})
        assert wrong_type.status_code == 422 and len(wrong_type.content) < 1000
        assert "messages" in wrong_type.json()["error"]["message"]
        named = client.post(COMPLETIONS, json=chat(model="m" * 100_000))
        assert named.status_code == 404 and len(named.content) < 1500
        assert "more characters" in named.json()["error"]["message"]


def test_with_a_key_the_v1_routes_answer_401_without_it() -> None:
    engine = EchoEngine()
    with client_of(engine, api_key="s3cret") as client:
        assert client.post(COMPLETIONS, json=chat()).status_code == 401
        wrong = client.post(COMPLETIONS, json=chat(), headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"] == "Bearer"
        assert client.get("/v1/models").status_code == 401
        assert client.get("/health").status_code == 200  # liveness stays open, as in vLLM
        right = {"Authorization": "Bearer s3cret"}
        assert client.post(COMPLETIONS, json=chat(), headers=right).status_code == 200
        assert client.get("/v1/models", headers=right).status_code == 200
    assert len(engine.seen) == 1


def test_a_request_the_engine_cannot_take_is_a_4xx_never_a_500() -> None:
    class PagesOnly(EchoEngine):
        needs_image = True

    engine = PagesOnly()
    with client_of(engine) as client:
        textual = client.post(COMPLETIONS, json=chat())
        assert textual.status_code == 400 and "reads page images only" in textual.text
        two = client.post(COMPLETIONS, json=chat(images=[data_url(PAGE)] * 2))
        assert two.status_code == 400 and "at most one image_url" in two.text
        assert client.post(COMPLETIONS, json=chat(images=[data_url(PAGE)])).status_code == 200
    assert len(engine.seen) == 1


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_bomb(width: int, height: int) -> bytes:
    """A valid PNG header of an 8-bit RGB ``width`` x ``height`` image with a few bytes of pixel
    data: small on the wire, huge once decoded."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr)
            + png_chunk(b"IDAT", zlib.compress(b"\0" * 1024)) + png_chunk(b"IEND", b""))


@pytest.mark.parametrize(("url", "message"), [
    ("https://example.com/page.png", "the server fetches nothing"),
    ("file:///etc/passwd", "the server fetches nothing"),
    ("data:image/png;base64," + base64.b64encode(png_bomb(20_000, 20_000)).decode(),
     "20000×20000 = 400 MP exceeds the limit"),
])
def test_no_url_is_fetched_and_a_bomb_is_refused_from_its_header(url: str, message: str) -> None:
    engine = EchoEngine()
    with client_of(engine) as client:
        answer = client.post(COMPLETIONS, json=chat(images=[url]))
    assert answer.status_code == 400 and message in answer.json()["error"]["message"]
    assert engine.seen == []


def test_200_concurrent_requests_are_all_answered() -> None:
    engine = EchoEngine()
    with client_of(engine, max_batch=32) as client, ThreadPoolExecutor(32) as pool:
        answers = list(pool.map(
            lambda n: client.post(COMPLETIONS, json=chat(f"page {n}", evalsuite={
                "sample_id": f"s{n}"})), range(200)))
    assert [a.status_code for a in answers] == [200] * 200
    assert sorted(a.json()["choices"][0]["message"]["content"].split("|")[2]
                  for a in answers) == sorted(f"s{n}" for n in range(200))


@pytest.mark.parametrize("port", ["99999", "65536", "-1", "http"])
def test_a_port_out_of_range_is_a_usage_error(
    port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--engine", FIXED_LATENCY_ENGINE, "--port", port])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert "--port" in error and ("out of range" in error or "port number" in error)


def test_a_busy_port_is_one_line_and_exit_3_and_help_says_so(
    capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert cli.main(["--engine", FIXED_LATENCY_ENGINE, "--port", str(port)]) == 3
    [line] = capsys.readouterr().err.splitlines()
    assert line == f"evalsuite serve: cannot listen on 127.0.0.1:{port}: the port is in use " \
                   "(--port 0 takes a free one)"
    assert cli.main(["--engine", FIXED_LATENCY_ENGINE, "--host", "no-such-host.invalid",
                     "--port", "0"]) == 3
    assert "is not a host name or address here" in capsys.readouterr().err
    assert "3 the address\ncannot be listened on" in cli.EPILOG


def test_a_public_address_without_a_key_warns_and_a_key_silences_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    served = []
    monkeypatch.setattr(cli, "serve", lambda app, sock, **_: (served.append(sock), sock.close()))
    monkeypatch.delenv(cli.API_KEY_ENV, raising=False)
    assert cli.main(["--engine", FIXED_LATENCY_ENGINE, "--host", "0.0.0.0", "--port", "0"]) == 0
    assert "0.0.0.0 is not a loopback address and the server has no key" in capsys.readouterr().err
    monkeypatch.setenv(cli.API_KEY_ENV, "k")
    assert cli.main(["--engine", FIXED_LATENCY_ENGINE, "--host", "0.0.0.0", "--port", "0"]) == 0
    assert cli.main(["--engine", FIXED_LATENCY_ENGINE, "--port", "0"]) == 0
    assert capsys.readouterr().err == ""
    assert len(served) == 3


def test_the_key_from_the_environment_guards_the_served_app(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    apps = []
    monkeypatch.setattr(cli, "serve", lambda app, sock, **_: (apps.append(app), sock.close()))
    monkeypatch.setenv(cli.API_KEY_ENV, "from-env")
    assert cli.main(["--engine", FIXED_LATENCY_ENGINE, "--port", "0",
                     "--max-body-bytes", "2048"]) == 0
    with TestClient(apps[0]) as client:
        assert client.get("/v1/models").status_code == 401
        headers = {"Authorization": "Bearer from-env"}
        assert client.get("/v1/models", headers=headers).status_code == 200
        big = client.post(COMPLETIONS, json=chat("x" * 4000), headers=headers)
        assert big.status_code == 413

