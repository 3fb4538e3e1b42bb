"""The agents' model clients (aiohttp, retried as the SDK retries) against the real gateway."""

from __future__ import annotations

import asyncio

import openai
import psutil

from gym_assets.rollouts.episodes.model_calls import (
    LOCAL_API_KEY,
    ModelSettings,
    create_turn,
    open_client,
    shared_connections,
)
from gym_assets.rollouts.gateway import ModelGateway, ScriptedUpstream, read_capture
from gym_assets_tests.rollouts.episodes.upstreams import SlowUpstream

TEXT = [{"text": "pong"}]
PING = [{"role": "user", "content": "ping"}]


def _connections_to(port: int) -> int:
    """Client sockets of this process connected to ``port`` (the gateway runs in a thread of
    this process, so its own sockets are told apart by their local port)."""
    return sum(
        1
        for conn in psutil.Process().net_connections(kind="tcp")
        if conn.raddr and conn.raddr.port == port and conn.laddr.port != port
    )


def test_a_shared_session_bounds_the_connections(start_gateway) -> None:
    """Six calls at once through a session of two connections all succeed, over two
    connections (each call is held 0.1 s at the gateway, so an unbounded pool opens six)."""
    gateway: ModelGateway = start_gateway(SlowUpstream(ScriptedUpstream(TEXT), 0, 0.1))
    settings = ModelSettings()

    async def call(key: str) -> dict:
        async with open_client(gateway, key, "root", settings) as client:
            return await create_turn(client, "responses", "policy", {}, PING, [])

    async def main() -> tuple[list[dict], int]:
        async with shared_connections(max_connections=2):
            answers = await asyncio.gather(*(call(f"r{k}") for k in range(6)))
            return answers, _connections_to(gateway.port)

    answers, connections = asyncio.run(main())
    assert [a["output"][0]["content"][0]["text"] for a in answers] == ["pong"] * 6
    assert connections == 2
    assert all(len(read_capture(gateway.capture_dir, f"r{k}")["calls"]) == 1 for k in range(6))


def test_a_client_of_its_own_closes_its_connections(start_gateway) -> None:
    gateway: ModelGateway = start_gateway(ScriptedUpstream(TEXT))

    async def main() -> tuple[int, int]:
        async with open_client(gateway, "own", "root", ModelSettings()) as client:
            await create_turn(client, "chat", "policy", {}, PING, [])
            during = _connections_to(gateway.port)
        return during, _connections_to(gateway.port)

    assert asyncio.run(main()) == (1, 0)


def test_json_and_streamed_answers_through_the_sdk_transport(start_gateway) -> None:
    """The SDK on its aiohttp transport (what a harness on the ``openai`` package may use)
    reads the gateway's JSON and chunked SSE answers."""
    gateway: ModelGateway = start_gateway(ScriptedUpstream(TEXT))

    async def main() -> tuple[str, str]:
        async with openai.DefaultAioHttpClient() as http:
            client = openai.AsyncOpenAI(
                base_url=gateway.url_for("r"), api_key=LOCAL_API_KEY, http_client=http
            )
            plain = await client.chat.completions.create(model="policy", messages=PING)
            stream = await client.chat.completions.create(
                model="policy", messages=PING, stream=True
            )
            pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
            return plain.choices[0].message.content or "", "".join(pieces)

    assert asyncio.run(main()) == ("pong", "pong")
