"""The contracts between the three parts of a rollout run.

    collection ──(EpisodeRequest / flat row)──► EnvironmentServer ──► Agent ──HTTP──► ModelGateway
         │                                            │                                  │
         │                                            └──► ResourcesServer (tools, verify)│
         └──(reference steps per rollout, capture dir)───────────────────────────────────┘

* The **model gateway** is a real OpenAI-compatible HTTP server on 127.0.0.1. Agents reach it
  only over HTTP, at ``gateway.url_for(rollout_id)`` (``.../ng-rollout/<rollout_id>/v1``), so
  every exchange is captured per rollout.
* **Environment servers, agents and resources servers** are in-process async objects built
  from the config; they speak the episode protocol of ``gym_assets.records.episode``.
* **Scripts** are how offline upstreams answer: a list of ``Step`` mappings. The ``reference``
  upstream answers each rollout from the script its resources server derives from the task
  (``ResourcesServer.reference_script``); the ``scripted`` upstream plays one script for every
  rollout (conformance scenarios).

Step forms (one model turn each, chosen by how many assistant turns the request history holds):

    {"text": "final answer"}                         an assistant message
    {"call": "<tool name>", "args": {...}}           a function call to a named tool
    {"tool": "<shell command>"}                      a call to whichever shell-like tool the
                                                     request offers (bash, shell, terminal, ...)
    {"call": ..., "args": ..., "tool": "<command>"}  the named tool when the request offers it,
                                                     else the equivalent shell command (a
                                                     harness offering only its own shell)
    {"text": "...", "tool": "<command>"}             an assistant message that also makes the
                                                     call (text with ``call`` works alike)
    {"error": 429, "times": 2, "message": "..."}     HTTP errors before the next step
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from gym_assets.records.episode import EpisodeRequest, EpisodeResponse

Step = Mapping[str, Any]
# How long the gateway keeps an idle client connection open. Its clients are the run's own
# agents on loopback, whose shared pool hands out the longest-idle connection first: with a
# thousand rollouts in flight a connection can sit idle for many seconds between calls, and
# a short keep-alive would make nearly every call open a new connection.
GATEWAY_KEEP_ALIVE_S = 120


class GatewayHandle(Protocol):
    """What episodes need from a running model gateway: where to call, and what to record."""

    model_name: str  # the model id agents put in requests; /v1/models lists it
    model_server_name: str  # the config instance name recorded as model_ref.name
    capture_dir: Path

    def url_for(self, rollout_id: str, invocation_id: str | None = None) -> str:
        """Base URL (ending in ``/v1``) whose traffic is captured under ``rollout_id``; with
        ``invocation_id``, each call on it is recorded as made in that invocation's session."""
        ...


class RunGateway(GatewayHandle, Protocol):
    """What collection needs besides: scripting a rollout from the run's event loop. The
    gateway may live in another process, so the call is awaited and never blocks the loop."""

    async def set_reference_script(self, rollout_id: str, steps: Sequence[Step]) -> None:
        """Script the answers for one rollout (``reference`` upstream only); returns once the
        gateway has the script, so the rollout's first model call finds it."""
        ...

    def release_reference_script(self, rollout_id: str) -> None:
        """The scripted rollout is over: the gateway may drop its script (at the latest with
        the next script it is sent, so releasing costs no round trip)."""
        ...


class ResourcesServer(Protocol):
    """Owns task state and tools, and grades."""

    name: str

    async def seed_session(
        self, session_id: str, episode_id: str, task_data: Mapping, *, cookie: str | None = None
    ) -> dict:
        """Bind a session to one episode; returns ``{resources_session_id}``, the id the
        caller's session cookie then names (``cookie``: the one it already holds, if any)."""
        ...

    def tools(self, session_id: str) -> Sequence[Mapping[str, Any]]:
        """Function-tool definitions (Responses shape) the agent may call in this session."""
        ...

    async def call_tool(self, session_id: str, name: str, arguments: Mapping) -> str: ...

    async def verify(
        self, session_id: str, body: Mapping[str, Any], *, cookie: str | None = None
    ) -> dict:
        """The verify response: the body plus ``reward`` and optional ``mask_sample``,
        ``failure_kind``, ``failure_reason`` and benchmark extras. ``cookie``: the session
        cookie the seed set, which must name this session."""
        ...

    async def close_session(self, session_id: str, episode_id: str) -> dict: ...

    def reference_script(self, task_data: Mapping[str, Any]) -> list[Step]:
        """The steps a model that knows the reference solution would take."""
        ...


class EnvironmentServer(Protocol):
    """Runs one episode of one task."""

    name: str
    implementation: str

    async def run(self, request: EpisodeRequest | Mapping[str, Any]) -> EpisodeResponse | dict:
        """An episode request gets an ``EpisodeResponse``; a legacy flat row gets a flat dict."""
        ...

    async def aggregate_metrics(self, verify_responses: Sequence[Mapping[str, Any]]) -> dict: ...
