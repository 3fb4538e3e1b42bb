"""The agents' aiohttp calls behave as the ``openai`` SDK's: the same bytes on every attempt,
the same retries, the same exceptions and messages (each case run both ways, side by side)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import httpx2
import openai
import pytest
from aiohttp import web

from gym_assets.rollouts.episodes.model_http import post_json

BODY = {"model": "m", "input": [{"role": "user", "content": "héllo"}], "temperature": 0.5}
# What the test server answers for each case, every attempt.
CASES: dict[str, Callable[[], web.Response]] = {
    "ok": lambda: web.json_response({"id": "r1", "output": []}),
    "error_500": lambda: web.json_response({"error": {"message": "boom"}}, status=500),
    "error_400": lambda: web.json_response({"error": {"message": "bad input"}}, status=400),
    "text_404": lambda: web.Response(text="nope", status=404),
    "other_418": lambda: web.json_response({"detail": "teapot"}, status=418),
    "told_not_to": lambda: web.json_response(
        {"error": {"message": "m"}}, status=503, headers={"x-should-retry": "false"}
    ),
    "retry_after": lambda: web.json_response(
        {"error": {"message": "slow"}}, status=429, headers={"retry-after-ms": "20"}
    ),
    "too_long_to_wait": lambda: web.json_response({}, status=429, headers={"retry-after": "999"}),
    "not_an_object": lambda: web.Response(text="[1, 2]"),
}


@asynccontextmanager
async def _server(case: str, bodies: list[bytes]) -> AsyncIterator[str]:
    async def handler(request: web.Request) -> web.Response:
        bodies.append(await request.read())
        return CASES[case]()

    app = web.Application()
    app.router.add_post("/v1/responses", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


def _outcome(call: Callable[[], Any]) -> Any:
    async def main() -> Any:
        try:
            return await call()
        except openai.APIError as exc:
            status = getattr(exc, "status_code", None)
            return type(exc).__name__, str(exc), exc.body, status

    return asyncio.run(main())


async def _ours(base: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session:
        headers = {"content-type": "application/json"}
        url = f"{base}/responses"
        return await post_json(session, url, BODY, headers, timeout_s=5.0, max_retries=2)


async def _sdk(base: str) -> Any:
    async with openai.AsyncOpenAI(base_url=base, api_key="k", max_retries=2, timeout=5.0) as sdk:
        answer = await sdk.post("/responses", cast_to=httpx2.Response, body=BODY)
        value = answer.json()
        if not isinstance(value, dict):
            raise openai.APIResponseValidationError(
                answer, answer.text, message="the model answer is not a JSON object"
            )
        return value


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_same_attempts_and_outcome_as_the_sdk(case: str) -> None:
    seen: dict[str, list[bytes]] = {"ours": [], "sdk": []}

    async def run(side: str) -> Any:
        async with _server(case, seen[side]) as base:
            return await (_ours(base) if side == "ours" else _sdk(base))

    ours = _outcome(lambda: run("ours"))
    assert ours == _outcome(lambda: run("sdk"))
    assert len(seen["ours"]) == len(seen["sdk"]) and len(set(seen["ours"] + seen["sdk"])) == 1
    retried = case in ("error_500", "retry_after")
    assert len(seen["ours"]) == (3 if retried else 1)


def _closed_port() -> int:
    with socket.socket() as probe:  # bound, never listening: connections are refused
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_no_endpoint_fails_as_the_sdk_on_its_aiohttp_transport() -> None:
    """A refused connection ends (after the retries) as the SDK's aiohttp transport, which
    the agents used before, reports it: a timeout."""
    base = f"http://127.0.0.1:{_closed_port()}/v1"

    async def sdk() -> Any:
        async with openai.DefaultAioHttpClient() as http:
            client = openai.AsyncOpenAI(base_url=base, api_key="k", http_client=http)
            return await client.post("/responses", cast_to=httpx2.Response, body=BODY)

    ours = _outcome(lambda: _ours(base))
    assert ours == ("APITimeoutError", "Request timed out.", None, None)
    assert _outcome(sdk) == ours
