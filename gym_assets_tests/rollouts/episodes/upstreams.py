"""Test upstreams for the real gateway: canned bodies, and delays around another upstream."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from gym_assets.rollouts.gateway import ModelRequest, Upstream, UpstreamReply
from gym_assets.rollouts.gateway.upstreams import json_reply


class CannedUpstream:
    """Answers the n-th request with the n-th Responses body (for shapes no script can make)."""

    def __init__(self, outputs: Sequence[list[dict[str, Any]]]) -> None:
        self.outputs = list(outputs)
        self.requests: list[dict[str, Any]] = []

    async def open(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        index = len(self.requests)
        self.requests.append(request.body)
        body = {
            "id": f"resp_canned_{index}",
            "object": "response",
            "created_at": 1,
            "model": "policy",
            "status": "completed",
            "output": self.outputs[index],
            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2},
        }
        return json_reply(200, body)


class BodyUpstream:
    """Answers every request 200 with ``content`` as is (a body that need not be JSON)."""

    def __init__(self, content: bytes) -> None:
        self.content = content

    async def open(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        return UpstreamReply(200, self.content)


class SlowUpstream:
    """Answers the first ``fast`` requests through ``inner``, then stalls for ``delay`` s."""

    def __init__(self, inner: Upstream, fast: int, delay: float) -> None:
        self.inner = inner
        self.fast = fast
        self.delay = delay
        self.count = 0

    async def open(self) -> None:
        await self.inner.open()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        self.count += 1
        if self.count > self.fast:
            await asyncio.sleep(self.delay)
        return await self.inner.answer(request)
