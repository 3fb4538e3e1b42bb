"""Recording participants for lifecycle tests: every call is logged; any can fail or stall."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from gym_assets.records.episode import EpisodeId, TaskId
from gym_assets.rollouts.episodes.agents import ToolGrant

OBSERVATIONS = {"source": "fake_agent", "records": [], "gaps": []}
RESPONSE = {"id": "resp_1", "status": "completed", "output": [], "metadata": {}}


class Participant:
    """``fail[name]`` is raised by that call; ``delay[name]`` seconds are slept first (a slow
    participant); ``hold[name]`` is an event the call waits for. ``entered[name]`` is set once
    the call has started, for a test to wait on."""

    def __init__(self, calls: list[str], prefix: str = "", **behaviour: Any) -> None:
        self.calls = calls
        self.prefix = prefix
        self.fail: dict[str, BaseException] = behaviour.get("fail", {})
        self.delay: dict[str, float] = behaviour.get("delay", {})
        self.hold: dict[str, asyncio.Event] = behaviour.get("hold", {})
        self.entered: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.args: dict[str, list[tuple]] = {}

    async def _step(self, name: str, *args: Any) -> None:
        self.calls.append(self.prefix + name)
        self.args.setdefault(name, []).append(args)
        self.entered[name].set()
        if name in self.delay:
            await asyncio.sleep(self.delay[name])
        if name in self.hold:
            await self.hold[name].wait()
        if name in self.fail:
            raise self.fail[name]


class FakeResources(Participant):
    name = "resources"

    def __init__(self, calls: list[str], verify_extra: Mapping[str, Any] = {}, **kw: Any):
        super().__init__(calls, **kw)
        self.verify_extra = dict(verify_extra)

    async def seed_session(
        self, session_id: str, episode_id: str, task_data: Mapping, *, cookie: str | None = None
    ) -> dict:
        assert cookie is None  # a fresh session: the caller holds no cookie for it yet
        await self._step("/seed_session", session_id, episode_id, dict(task_data))
        return {"resources_session_id": session_id}

    def tools(self, session_id: str) -> list:
        return []

    async def call_tool(self, session_id: str, name: str, arguments: Mapping) -> str:
        await self._step(f"/{name}", session_id, dict(arguments))
        return "tool output"

    async def verify(
        self, session_id: str, body: Mapping[str, Any], *, cookie: str | None = None
    ) -> dict:
        assert cookie == session_id  # the caller echoes the cookie its seed set
        await self._step("/verify", session_id, dict(body))
        return {**body, "reward": 1.0, "benchmark_field": "kept", **self.verify_extra}

    async def close_session(self, session_id: str, episode_id: str) -> dict:
        await self._step("/close_session", session_id, episode_id)
        return {"resources_session_id": session_id}

    def reference_script(self, task_data: Mapping[str, Any]) -> list:
        return []


class FakeAgent(Participant):
    name = "agent"

    def __init__(self, calls: list[str], response: Mapping[str, Any] = RESPONSE, **kw: Any):
        super().__init__(calls, **kw)
        self.response = dict(response)

    async def seed_session(
        self,
        session_id: str,
        episode_id: EpisodeId,
        task_id: TaskId,
        *,
        grant: ToolGrant | None = None,
        task_data: Mapping[str, Any] | None = None,
        cookie: str | None = None,
    ) -> dict:
        assert cookie is None  # a fresh session: the caller holds no cookie for it yet
        await self._step("/v1/agent_sessions", session_id, episode_id, grant)
        return {"agent_session_id": session_id}

    async def activate(
        self, session_id: str, params: Mapping[str, Any], *, cookie: str | None = None
    ) -> dict:
        assert cookie == session_id  # the caller echoes the cookie its seed set
        await self._step("/v1/responses", session_id, dict(params))
        return dict(self.response)

    async def close_session(
        self, session_id: str, episode_id: EpisodeId, *, cookie: str | None = None
    ) -> dict:
        assert cookie == session_id
        await self._step("/v1/agent_sessions/close", session_id, episode_id)
        partial = {**RESPONSE, "id": "partial", "status": "incomplete"}
        return {
            "agent_session_id": session_id,
            "agent_observations": OBSERVATIONS,
            "partial_response": partial,
        }
