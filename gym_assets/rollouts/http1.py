"""Reading one HTTP/1.1 response from an asyncio stream: the agents' loopback transport and
the gateway's load generator both speak plain HTTP/1.1 to the local gateway."""

from __future__ import annotations

import asyncio


async def read_response(
    reader: asyncio.StreamReader,
) -> tuple[int, list[tuple[bytes, bytes]], bytes, bool]:
    """``(status, headers, body, reusable)`` of one response; ``reusable`` says whether the
    connection can carry another request. Malformed heads raise ``ValueError``, a connection
    closed early ``asyncio.IncompleteReadError``."""
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head[:-4].split(b"\r\n")
    version, _, rest = status_line.partition(b" ")
    status = rest[:3]
    if not (version.startswith(b"HTTP/1.") and status.isdigit()):
        raise ValueError(f"not an HTTP/1.x answer: {status_line[:40]!r}")
    headers = []
    for line in header_lines:
        name, _, value = line.partition(b":")
        headers.append((name.strip(), value.strip()))
    found = {name.lower(): value.lower() for name, value in headers}
    reusable = found.get(b"connection") != b"close" and version == b"HTTP/1.1"
    if int(status) in (204, 304) or int(status) < 200:
        body = b""
    elif b"chunked" in found.get(b"transfer-encoding", b""):
        body = await read_chunked(reader)
    elif b"content-length" in found:
        body = await reader.readexactly(int(found[b"content-length"]))
    else:
        body, reusable = await reader.read(), False
    headers = [(n, v) for n, v in headers if n.lower() != b"transfer-encoding"]
    return int(status), headers, body, reusable


async def read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers, if any
                pass
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
