"""Model calls of the bundled agents, through the official ``openai`` client and the gateway.

Every call goes to ``gateway.url_for(capture_key)`` so the gateway captures it under the
episode's rollout. The client speaks through the SDK's aiohttp transport
(``openai.DefaultAioHttpClient``): measured on this machine against the gateway, it costs
about two thirds of the client CPU of the default ``httpx2`` transport per call (1.0–1.5 ms
against 1.8–2.9 ms), and its connection pool stays cheap with a thousand connections open.
Inside a ``shared_connections()`` scope (a whole collection run) every client shares one
session with a bounded pool; outside one, each activation's client has its own and closes it.
Both dialects come back as one Responses-shaped dict, so the agent loop and the observations
are dialect-independent: ``api: chat`` converts the Responses input items to Chat messages and
the completion back to Responses output items.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx2
import orjson
from openai import APIResponseValidationError, AsyncOpenAI, DefaultAioHttpClient, RequestOptions
from pydantic import BaseModel, ConfigDict, Field

from gym_assets.records.contracts import GATEWAY_KEEP_ALIVE_S, GatewayHandle
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


_shared: ContextVar[_Shared | None] = ContextVar("shared_http", default=None)


def _http_client(max_connections: int | None) -> httpx2.AsyncClient:
    """The SDK's aiohttp client with at most ``max_connections`` open (None: no bound)."""
    limits = httpx2.Limits(
        max_connections=max_connections,
        max_keepalive_connections=max_connections,
        keepalive_expiry=IDLE_CONNECTION_S,
    )
    return DefaultAioHttpClient(limits=limits)


def _sdk_client(base_url: str, http: httpx2.AsyncClient) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=base_url, api_key=LOCAL_API_KEY, http_client=http)


@dataclass
class _Shared:
    """A scope's session and its SDK clients, one per gateway origin (made on first use)."""

    http: httpx2.AsyncClient
    clients: dict[str, AsyncOpenAI] = field(default_factory=dict)

    def client_for(self, url: str) -> AsyncOpenAI:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        client = self.clients.get(origin)
        if client is None:
            client = self.clients[origin] = _sdk_client(f"{origin}/v1", self.http)
        return client


@asynccontextmanager
async def shared_connections(max_connections: int | None = None) -> AsyncIterator[None]:
    """One HTTP session, and one SDK client on it, for the clients opened in this scope (and
    the tasks it starts).

    A client of its own costs an activation a new session and new connections, and building
    an SDK client costs more CPU than a call. Meant for a scope that runs many activations (a
    collection run), with ``max_connections`` set to how many run at once: a call beyond the
    bound waits for a free connection instead of opening one more file descriptor. The
    session is made and closed on the scope's event loop, and the context variable is not
    seen by another loop's tasks, so it never crosses loops.
    """
    async with _http_client(max_connections) as http:
        token = _shared.set(_Shared(http))
        try:
            yield
        finally:
            _shared.reset(token)


@dataclass(frozen=True)
class ModelClient:
    """An agent's model calls for one activation: captured under one rollout (``base_url``,
    the gateway's URL for it), each carrying ``x-session-id``, with the agent's timeout and
    retries. The SDK client underneath is the scope's (shared) or one of its own."""

    sdk: AsyncOpenAI
    base_url: str
    options: RequestOptions

    async def post(self, route: str, body: dict[str, Any]) -> httpx2.Response:
        """POST ``body`` to ``route`` under ``base_url``: the SDK sends, retries and raises on
        error statuses exactly as its typed methods do; the answer is the raw response."""
        return await self.sdk.post(
            f"{self.base_url}/{route}", cast_to=httpx2.Response, body=body, options=self.options
        )


@asynccontextmanager
async def open_client(
    gateway: GatewayHandle, capture_key: str, session_header: str, settings: ModelSettings
) -> AsyncIterator[ModelClient]:
    """A client whose calls are captured under ``capture_key`` and carry ``x-session-id``,
    on the scope's shared session and SDK client when there is one, else on ones of its own
    closed on exit."""
    base_url = gateway.url_for(capture_key)
    options: RequestOptions = {
        "headers": {"x-session-id": session_header},
        "timeout": settings.request_timeout_seconds,
        "max_retries": settings.max_retries,
    }
    shared = _shared.get()
    if shared is not None:
        yield ModelClient(shared.client_for(base_url), base_url, options)
        return
    async with _http_client(None) as http:
        yield ModelClient(_sdk_client(base_url, http), base_url, options)


async def create_turn(
    client: ModelClient,
    api: Literal["responses", "chat"],
    model: str,
    params: Mapping[str, Any],
    conversation: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """One model turn as a Responses object dict; API errors propagate to the caller.

    The body goes out as built here, through the SDK's ``post`` (its documented way to call
    a route with an untyped body): typed parameters would be walked against every variant of
    their unions (about 4 ms a call for the conversation) only to give back the same JSON,
    and each typed resource costs a client wrappers of its own. The keys keep the order the
    typed parameters gave them (``model``, then ``input`` or ``messages``, then the rest).

    The answer is the object the gateway sent, not a typed model dumped back to a dict (which
    cost about 0.9 ms a call and rewrote values, e.g. integer timestamps as floats).
    """
    if api == "chat":
        chat_params = {_CHAT_PARAMS[k]: v for k, v in params.items() if k in _CHAT_PARAMS}
        extra: dict[str, Any] = {"tools": [_chat_tool(t) for t in tools]} if tools else {}
        messages = chat_messages(conversation, params.get("instructions"))
        body = {"model": model, "messages": messages, **chat_params, **extra}
        completion = await client.post("chat/completions", body)
        return responses_of_chat(_object_of(completion))
    body = {"model": model, "input": list(conversation)}
    body.update((k, v) for k, v in params.items() if k not in _NOT_FORWARDED)
    if tools:
        body["tools"] = list(tools)
    return _object_of(await client.post("responses", body))


def _object_of(response: httpx2.Response) -> dict[str, Any]:
    """A successful answer's JSON object; anything else is the SDK's validation error."""
    try:
        value = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise APIResponseValidationError(
            response, response.text, message="the model answer is not a JSON object"
        )
    return value


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
