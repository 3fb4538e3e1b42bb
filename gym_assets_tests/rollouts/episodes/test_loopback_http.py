"""The agents' loopback transport: framing, connection reuse and failures, on real sockets."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx2
import openai
import pytest

from gym_assets.rollouts.episodes.loopback_http import LoopbackTransport, loopback_client
from gym_assets.rollouts.gateway import ScriptedUpstream

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
CHUNKED = b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"  # "abc" + "de", then the last chunk
OK = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok"


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return head + await reader.readexactly(length)


def _serve(handler: Handler, *requests: str) -> tuple[list[httpx2.Response | Exception], int]:
    """Run ``requests`` (URL paths) one after another through one transport against a raw
    server; returns the responses (or exceptions) and how many connections the server saw."""
    connections = 0

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            await handler(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> list[httpx2.Response | Exception]:
        server = await asyncio.start_server(accept, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        results: list[httpx2.Response | Exception] = []
        async with (
            server,
            httpx2.AsyncClient(transport=LoopbackTransport(), timeout=2.0) as client,
        ):
            for path in requests:
                try:
                    results.append(await client.post(f"http://127.0.0.1:{port}{path}", json={}))
                except httpx2.HTTPError as exc:
                    results.append(exc)
                await asyncio.sleep(0.05)  # lets a server-side close reach the idle connection
        return results

    results = asyncio.run(main())
    return results, connections


async def _answer_forever(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        await _read_request(reader)
        writer.write(OK)
        await writer.drain()


def test_keep_alive_connections_are_reused() -> None:
    results, connections = _serve(_answer_forever, "/a", "/b", "/c")
    assert [r.text for r in results] == ["ok"] * 3  # type: ignore[union-attr]
    assert connections == 1


def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(OK)
        await writer.drain()

    results, connections = _serve(once, "/a", "/b")
    assert [r.text for r in results] == ["ok", "ok"]  # type: ignore[union-attr]
    assert connections == 2


@pytest.mark.parametrize(
    ("answer", "body", "connections"),
    [
        (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok", b"ok", 2),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + CHUNKED, b"abcde", 1),
        (b"HTTP/1.1 204 No Content\r\n\r\n", b"", 1),
    ],
)
def test_response_framing(answer: bytes, body: bytes, connections: int) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await _read_request(reader)
            writer.write(answer)
            await writer.drain()

    results, seen = _serve(handler, "/a", "/b")
    assert [r.content for r in results] == [body, body]  # type: ignore[union-attr]
    assert seen == connections


def test_a_body_framed_by_the_end_of_the_connection() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\n\r\nuntil the end")
        await writer.drain()

    results, _ = _serve(handler, "/a")
    assert results[0].content == b"until the end"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort", httpx2.RemoteProtocolError),
        (b"SSH-2.0-OpenSSH\r\n\r\n", httpx2.ReadError),
        (None, httpx2.ReadTimeout),
    ],
)
def test_failures_are_httpx_errors(answer: bytes | None, error: type[Exception]) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        if answer is None:
            await asyncio.sleep(5)  # never answers within the client's 2 s
        writer.write(answer or b"")
        await writer.drain()

    results, _ = _serve(handler, "/a")
    assert isinstance(results[0], error)


def test_connect_failures_and_other_schemes() -> None:
    async def main() -> None:
        async with loopback_client() as client:
            with pytest.raises(httpx2.ConnectError):
                await client.get("http://127.0.0.1:9/")  # the discard port: nothing listens
            with pytest.raises(httpx2.UnsupportedProtocol, match="http://"):
                await client.get("https://127.0.0.1:9/")

    asyncio.run(main())


def test_the_openai_client_through_the_gateway(start_gateway, tmp_path: Path) -> None:
    """JSON and a streamed (chunked SSE) answer from the real gateway, via the SDK."""
    gateway = start_gateway(ScriptedUpstream([{"text": "pong"}]))

    async def main() -> tuple[str, list[str]]:
        async with loopback_client() as http:
            client = openai.AsyncOpenAI(
                base_url=gateway.url_for("r"), api_key="unused", http_client=http
            )
            messages = [{"role": "user", "content": "ping"}]
            plain = await client.chat.completions.create(model="policy", messages=messages)
            stream = await client.chat.completions.create(
                model="policy", messages=messages, stream=True
            )
            pieces = [c.choices[0].delta.content async for c in stream if c.choices]
            return plain.choices[0].message.content or "", [p for p in pieces if p]

    text, pieces = asyncio.run(main())
    assert text == "pong" and "".join(pieces) == "pong"


def test_a_request_the_server_does_not_read_is_a_write_timeout() -> None:
    async def main() -> None:
        async def never_read(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await asyncio.sleep(5)
            writer.close()

        server = await asyncio.start_server(never_read, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        timeout = httpx2.Timeout(5.0, write=0.3)
        url = f"http://127.0.0.1:{port}/"
        async with server, httpx2.AsyncClient(transport=LoopbackTransport()) as client:
            with pytest.raises(httpx2.WriteTimeout):  # 64 MB fills both socket buffers
                await client.post(url, content=b"x" * 2**26, timeout=timeout)

    asyncio.run(main())
