"""Model calls of the bundled agents, through the gateway.

Every call goes to ``gateway.url_for(capture_key)`` so the gateway captures it under the
episode's rollout. The calls are made on aiohttp directly, retried and failing as the
``openai`` SDK's do (``model_http``): through the SDK, even on its aiohttp transport and with
one client for a whole run, a call cost about 1.0 ms of client CPU against 0.3 ms, and an
SDK client built for each activation as much again. Inside a ``shared_connections()`` scope
(a whole collection run) every client shares one session with a bounded pool; outside one,
each activation's client has its own and closes it.
Both dialects come back as one Responses-shaped dict, so the agent loop and the observations
are dialect-independent: ``api: chat`` converts the Responses input items to Chat messages and
the completion back to Responses output items.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp
from pydantic import BaseModel, ConfigDict, Field

from gym_assets.records.contracts import GATEWAY_KEEP_ALIVE_S, GatewayHandle
from gym_assets.rollouts.episodes.model_http import post_json
from gym_assets.rollouts.episodes.responses import message_text

LOCAL_API_KEY = "gym-assets-local"  # the gateway needs no key; real keys stay upstream
# An idle connection is dropped before the gateway would close it, so a call never goes out on
# a connection the gateway is closing at that moment.
IDLE_CONNECTION_S = GATEWAY_KEEP_ALIVE_S - 5.0
_NOT_FORWARDED = frozenset({"input", "tools", "model", "stream"})
_CHAT_PARAMS = {"temperature": "temperature", "top_p": "top_p", "max_output_tokens": "max_tokens"}


class ModelSettings(BaseModel):
    """How an agent talks to the model (other agent settings are the agent's own)."""

    model_config = ConfigDict(extra="allow")

    api: Literal["responses", "chat"] = "responses"
    request_timeout_seconds: float = Field(default=120.0, gt=0, allow_inf_nan=False, strict=True)
    max_retries: int = Field(default=2, ge=0, strict=True)


_shared: ContextVar[aiohttp.ClientSession | None] = ContextVar("shared_session", default=None)


def _session(max_connections: int | None) -> aiohttp.ClientSession:
    """An aiohttp session with at most ``max_connections`` open (None: no bound), which drops
    a connection idle for ``IDLE_CONNECTION_S``."""
    connector = aiohttp.TCPConnector(
        limit=max_connections or 0, keepalive_timeout=IDLE_CONNECTION_S
    )
    return aiohttp.ClientSession(connector=connector)


@asynccontextmanager
async def shared_connections(max_connections: int | None = None) -> AsyncIterator[None]:
    """One HTTP session for the clients opened in this scope (and the tasks it starts).

    A client of its own costs an activation a new session and new connections. Meant for a
    scope that runs many activations (a collection run), with ``max_connections`` set to how
    many run at once: a call beyond the bound waits for a free connection instead of opening
    one more file descriptor. The session is made and closed on the scope's event loop, and
    the context variable is not seen by another loop's tasks, so it never crosses loops.
    """
    async with _session(max_connections) as session:
        token = _shared.set(session)
        try:
            yield
        finally:
            _shared.reset(token)


@dataclass(frozen=True)
class ModelClient:
    """An agent's model calls in one activation: captured under one rollout (``base_url``,
    the gateway's URL for it), each carrying ``x-session-id``, with the agent's timeout and
    retries (``model_http``)."""

    session: aiohttp.ClientSession
    base_url: str
    headers: Mapping[str, str]
    settings: ModelSettings

    async def post(self, route: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``route`` under ``base_url``; the answer's JSON object."""
        return await post_json(
            self.session,
            f"{self.base_url}/{route}",
            body,
            self.headers,
            timeout_s=self.settings.request_timeout_seconds,
            max_retries=self.settings.max_retries,
        )


@asynccontextmanager
async def open_client(
    gateway: GatewayHandle, capture_key: str, session_header: str, settings: ModelSettings
) -> AsyncIterator[ModelClient]:
    """A client whose calls are captured under ``capture_key`` and carry ``x-session-id``,
    on the scope's shared session when there is one, else on one of its own closed on exit."""
    headers = {
        "authorization": f"Bearer {LOCAL_API_KEY}",
        "content-type": "application/json",
        "accept": "application/json",
        "x-session-id": session_header,
    }
    base_url = gateway.url_for(capture_key)
    shared = _shared.get()
    if shared is not None:
        yield ModelClient(shared, base_url, headers, settings)
        return
    async with _session(None) as session:
        yield ModelClient(session, base_url, headers, settings)


async def create_turn(
    client: ModelClient,
    api: Literal["responses", "chat"],
    model: str,
    params: Mapping[str, Any],
    conversation: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """One model turn as a Responses object dict; API errors propagate to the caller.

    The body goes out as built here: the SDK's typed parameters would walk it against every
    variant of their unions (about 4 ms a call for the conversation) only to give back the
    same JSON. The keys keep the order the typed parameters gave them (``model``, then
    ``input`` or ``messages``, then the rest). The answer is the object the gateway sent, not
    a typed model dumped back to a dict (which cost about 0.9 ms a call and rewrote values,
    e.g. integer timestamps as floats).
    """
    if api == "chat":
        chat_params = {_CHAT_PARAMS[k]: v for k, v in params.items() if k in _CHAT_PARAMS}
        extra: dict[str, Any] = {"tools": [_chat_tool(t) for t in tools]} if tools else {}
        messages = chat_messages(conversation, params.get("instructions"))
        body = {"model": model, "messages": messages, **chat_params, **extra}
        return responses_of_chat(await client.post("chat/completions", body))
    body = {"model": model, "input": list(conversation)}
    body.update((k, v) for k, v in params.items() if k not in _NOT_FORWARDED)
    if tools:
        body["tools"] = list(tools)
    return await client.post("responses", body)


def _chat_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = {k: tool[k] for k in ("name", "description", "parameters", "strict") if k in tool}
    return {"type": "function", "function": function}


def chat_messages(
    conversation: Sequence[Mapping[str, Any]], instructions: str | None = None
) -> list[dict[str, Any]]:
    """Responses input items as Chat messages; consecutive calls share one assistant turn."""
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    for item in conversation:
        kind = item.get("type", "message")
        if kind == "function_call":
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item.get("arguments") or "{}"},
            }
            last = messages[-1] if messages else None
            if last is None or last["role"] != "assistant":
                last = {"role": "assistant", "content": None, "tool_calls": []}
                messages.append(last)
            last.setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            messages.append(
                {"role": "tool", "tool_call_id": item["call_id"], "content": str(item["output"])}
            )
        elif kind == "message":
            role = "system" if item.get("role") == "developer" else item.get("role", "user")
            messages.append({"role": role, "content": message_text(item)})
    return messages


def responses_of_chat(completion: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat completion as a Responses object (output items, usage, status)."""
    choice = (completion.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    output: list[dict[str, Any]] = []
    if message.get("content"):
        part = {"type": "output_text", "text": message["content"], "annotations": []}
        output.append({"type": "message", "role": "assistant", "content": [part]})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        output.append(
            {
                "type": "function_call",
                "call_id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments") or "{}",
            }
        )
    truncated = choice.get("finish_reason") == "length"
    usage = completion.get("usage")
    return {
        "id": completion.get("id"),
        "object": "response",
        "created_at": completion.get("created"),
        "model": completion.get("model"),
        "status": "incomplete" if truncated else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
        "output": output,
        "usage": None
        if usage is None
        else {
            "input_tokens": usage.get("prompt_tokens"),
            "output_tokens": usage.get("completion_tokens"),
            "total_tokens": usage.get("total_tokens"),
        },
    }


def add_usage(total: dict[str, Any] | None, usage: Mapping[str, Any] | None) -> dict | None:
    """Sum two usage objects leaf by leaf; unknown (None) on either side stays unknown."""
    if total is None or usage is None:
        return None
    summed: dict[str, Any] = {}
    for key in total.keys() | usage.keys():
        a, b = total.get(key), usage.get(key)
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            summed[key] = add_usage(dict(a), b)
        elif isinstance(a, int) and isinstance(b, int):
            summed[key] = a + b
        else:
            summed[key] = None
    return summed
