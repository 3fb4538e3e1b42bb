"""A raw load generator for the gateway's model routes: the floor a rollout bench compares to.

It speaks HTTP/1.1 over ``asyncio.open_connection`` with keep-alive and a pre-encoded request,
so nearly all of the time measured is the server's; an SDK client would measure itself
(rollouts reference §9: the openai client tops out near 700 requests/s on its own CPU).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

import orjson

from gym_assets.rollouts.http1 import read_response

Route = Literal["chat/completions", "responses"]
DEFAULT_BODY = {"model": "policy", "messages": [{"role": "user", "content": "ping"}]}


@dataclass(frozen=True)
class LoadResult:
    requests: int
    errors: int  # answers with a status other than 200
    seconds: float

    @property
    def requests_per_second(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0


def _request(base_url: str, route: Route, body: dict) -> tuple[str, int, bytes]:
    url = urlsplit(base_url)
    if url.scheme != "http" or not url.hostname:
        raise ValueError(f"load generation needs an http:// base URL, got {base_url!r}")
    payload = orjson.dumps(body)
    port = url.port or 80
    head = (
        f"POST {url.path.rstrip('/')}/{route} HTTP/1.1\r\n"
        f"Host: {url.hostname}:{port}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    )
    return url.hostname, port, head.encode() + payload


async def run_load(
    base_url: str | Sequence[str],
    *,
    concurrency: int = 32,
    requests: int = 2000,
    body: dict | None = None,
    route: Route = "chat/completions",
) -> LoadResult:
    """Send ``requests`` copies of one request over ``concurrency`` keep-alive connections.

    ``base_url`` is a gateway base ending in ``/v1`` (``url_for(...)`` to include capture in
    the measurement, the unprefixed base to leave it out), or several: connection ``k`` uses
    the ``k``-th (cyclically), so captures can be spread over as many files as a run in
    flight writes. ``body`` goes to ``route`` (a Chat ping by default).
    """
    urls = [base_url] if isinstance(base_url, str) else list(base_url)
    wires = [_request(url, route, body or DEFAULT_BODY) for url in urls]
    remaining = requests
    errors = 0

    async def worker(k: int) -> None:
        nonlocal remaining, errors
        host, port, wire = wires[k % len(wires)]
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while remaining > 0:
                remaining -= 1
                writer.write(wire)
                status, _, _, _ = await read_response(reader)
                if status != 200:
                    errors += 1
        finally:
            writer.close()
            await writer.wait_closed()

    started = time.perf_counter()
    await asyncio.gather(*(worker(k) for k in range(min(concurrency, requests))))
    return LoadResult(requests, errors, time.perf_counter() - started)


def measure_rps(base_url: str, **kwargs: object) -> float:
    """Requests per second from a fresh event loop (for synchronous callers)."""
    return asyncio.run(run_load(base_url, **kwargs)).requests_per_second  # type: ignore[arg-type]
