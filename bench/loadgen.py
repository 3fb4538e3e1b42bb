"""A load generator for the gateway's model routes: what a model call costs the gateway alone.

It sends one pre-encoded request body over keep-alive connections with ``aiohttp`` (the client
the agents' transport is built on, without the SDK on top), so most of the time measured is
the gateway's; the benches print it next to what the agents' own client reaches.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

import aiohttp
import orjson

Route = Literal["chat/completions", "responses"]
DEFAULT_BODY = {"model": "policy", "messages": [{"role": "user", "content": "ping"}]}
HEADERS = {"content-type": "application/json"}


@dataclass(frozen=True)
class LoadResult:
    requests: int
    errors: int  # answers with a status other than 200
    seconds: float

    @property
    def requests_per_second(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0


def _endpoint(base_url: str, route: Route) -> str:
    url = urlsplit(base_url)
    if url.scheme != "http" or not url.hostname:
        raise ValueError(f"load generation needs an http:// base URL, got {base_url!r}")
    return f"{base_url.rstrip('/')}/{route}"


async def run_load(
    base_url: str | Sequence[str],
    *,
    concurrency: int = 32,
    requests: int = 2000,
    body: dict | None = None,
    route: Route = "chat/completions",
) -> LoadResult:
    """Send ``requests`` copies of one request, ``concurrency`` at a time.

    ``base_url`` is a gateway base ending in ``/v1`` (``url_for(...)`` to include capture in
    the measurement, the unprefixed base to leave it out), or several: sender ``k`` uses the
    ``k``-th (cyclically), so captures can be spread over as many files as a run in flight
    writes. ``body`` goes to ``route`` (a Chat ping by default).
    """
    urls = [base_url] if isinstance(base_url, str) else list(base_url)
    endpoints = [_endpoint(url, route) for url in urls]
    payload = orjson.dumps(body or DEFAULT_BODY)
    senders = min(concurrency, requests)
    remaining = requests
    errors = 0

    async def sender(session: aiohttp.ClientSession, k: int) -> None:
        nonlocal remaining, errors
        endpoint = endpoints[k % len(endpoints)]
        while remaining > 0:
            remaining -= 1
            async with session.post(endpoint, data=payload, headers=HEADERS) as answer:
                await answer.read()
                errors += answer.status != 200

    connector = aiohttp.TCPConnector(limit=senders)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        await asyncio.gather(*(sender(session, k) for k in range(senders)))
        seconds = time.perf_counter() - started
    return LoadResult(requests, errors, seconds)
