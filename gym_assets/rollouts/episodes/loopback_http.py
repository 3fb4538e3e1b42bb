"""The HTTP transport under the agents' ``openai`` client: plain HTTP/1.1 to the local gateway.

Agents only ever talk to the model gateway, over loopback and without TLS, so the general
transport (``httpcore2`` over ``anyio`` with ``h11``) buys nothing here and costs about half
of each model call's client CPU (0.8 ms of 1.6 ms measured on this machine). The ``openai``
client stays in charge of everything else: building the request, headers, retries and
turning statuses into exceptions.

What it speaks: keep-alive connections reused from an idle pool (one reused connection the
server has closed meanwhile is noticed before sending, and dropped); request bodies sent with
``Content-Length``; responses framed by ``Content-Length``, ``chunked`` or the connection's
end. Failures are the ``httpx2`` exceptions the client maps and retries: ``ConnectError``,
``ConnectTimeout``, ``WriteTimeout``, ``WriteError``, ``ReadTimeout``, ``ReadError``,
``RemoteProtocolError``. Only ``http://`` URLs are accepted. A response is read whole before
the client sees it, a streamed one included: right for the agents, which do not stream, wrong
for a chat UI.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

import httpx2

from gym_assets.rollouts.http1 import read_response

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]
_FRAMING = (b"content-length", b"transfer-encoding", b"connection")


class LoopbackTransport(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport for plain-HTTP servers on this machine (see the module doc)."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[Connection]] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if url.scheme != "http":
            raise httpx2.UnsupportedProtocol(f"the loopback transport speaks http://, not {url}")
        address = (url.host, url.port or 80)
        timeouts = request.extensions.get("timeout", {})
        body = await request.aread()
        connection = self._take(address) or await _connect(address, timeouts.get("connect"))
        reader, writer = connection
        try:
            writer.write(_head(request, len(body)) + body)
            try:
                async with asyncio.timeout(timeouts.get("write")):
                    await writer.drain()
            except TimeoutError as exc:  # before OSError, of which it is a subclass
                raise httpx2.WriteTimeout("timed out sending the request") from exc
            except OSError as exc:
                raise httpx2.WriteError(str(exc) or type(exc).__name__) from exc
            try:
                async with asyncio.timeout(timeouts.get("read")):
                    status, headers, content, reusable = await read_response(reader)
            except TimeoutError as exc:
                raise httpx2.ReadTimeout("timed out waiting for the gateway's answer") from exc
            except asyncio.IncompleteReadError as exc:
                raise httpx2.RemoteProtocolError("the server closed the connection early") from exc
            except (OSError, ValueError, asyncio.LimitOverrunError) as exc:
                raise httpx2.ReadError(str(exc) or type(exc).__name__) from exc
        except BaseException:
            writer.close()
            raise
        if reusable:
            self._idle.setdefault(address, []).append(connection)
        else:
            writer.close()
        return httpx2.Response(
            status,
            headers=headers,
            content=content,
            request=request,
            extensions={"http_version": b"HTTP/1.1"},
        )

    def _take(self, address: tuple[str, int]) -> Connection | None:
        """An idle connection still open; the server may have closed idle ones meanwhile."""
        idle = self._idle.get(address)
        while idle:
            reader, writer = idle.pop()
            if not (reader.at_eof() or writer.is_closing()):
                return reader, writer
            writer.close()
        return None

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for _, writer in connections:
                writer.close()
        self._idle.clear()


async def _connect(address: tuple[str, int], timeout: float | None) -> Connection:
    try:
        async with asyncio.timeout(timeout):
            return await asyncio.open_connection(*address)
    except TimeoutError as exc:
        raise httpx2.ConnectTimeout(f"connecting to {address[0]}:{address[1]} timed out") from exc
    except OSError as exc:
        raise httpx2.ConnectError(str(exc) or type(exc).__name__) from exc


def _head(request: httpx2.Request, length: int) -> bytes:
    target = request.url.raw_path
    lines = [request.method.encode() + b" " + target + b" HTTP/1.1"]
    lines += [name + b": " + value for name, value in _headers(request) if name not in _FRAMING]
    lines.append(b"content-length: " + str(length).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _headers(request: httpx2.Request) -> Iterator[tuple[bytes, bytes]]:
    for name, value in request.headers.raw:
        yield name.lower(), value


@contextlib.asynccontextmanager
async def loopback_client() -> AsyncIterator[httpx2.AsyncClient]:
    """An ``httpx2.AsyncClient`` on the loopback transport, closed on exit."""
    async with httpx2.AsyncClient(transport=LoopbackTransport()) as client:
        yield client
