"""Render one neutral assistant turn in the two OpenAI wire dialects, as JSON and as SSE.

Offline upstreams decide *what* the model says (text and/or function calls plus usage) once,
as an :class:`AssistantTurn`; this module decides *how* it looks on the wire, so Chat and
Responses, JSON and streaming, always agree with each other. The event sequences are the ones
real harnesses were seen to accept (a Responses stream ends with ``response.completed``,
carrying the response id and usage; a Chat stream ends with ``data: [DONE]``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from gym_assets.rollouts.gateway.script import Dialect

# Streams cut text and arguments into fragments of this many characters so clients exercise
# their delta-joining code, as they do against a real server.
FRAGMENT_CHARS = 24


@dataclass(frozen=True)
class FunctionCall:
    call_id: str
    name: str
    arguments: str  # a JSON object, encoded, as both dialects carry it
    namespace: str | None = None  # Responses namespace tools: ``name`` is the bare name


@dataclass(frozen=True)
class Usage:
    """Token counts; a detail that is ``None`` was not reported and is left out, never 0."""

    input_tokens: int
    output_tokens: int
    cached_tokens: int | None = 0
    reasoning_tokens: int | None = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class AssistantTurn:
    """What the model says in one turn, independent of dialect."""

    response_id: str
    model: str
    usage: Usage | None  # None: the reply carries no usage (a provider that omits it)
    text: str | None = None
    calls: tuple[FunctionCall, ...] = ()
    reasoning: str | None = None  # Chat ``reasoning_content``
    created: int = field(default_factory=lambda: int(time.time()))
    # Why the answer was cut short, in Responses' words: "max_output_tokens" or "content_filter".
    incomplete: str | None = None
    # Also say ``reasoning`` as a Responses reasoning item (a translated answer carries what the
    # model said; scripted answers keep their reasoning to Chat, as harnesses were tested).
    reasoning_item: bool = False

    @property
    def finish_reason(self) -> str:
        if self.incomplete is not None:
            return "length" if self.incomplete == "max_output_tokens" else "content_filter"
        return "tool_calls" if self.calls else "stop"


def _fragments(text: str) -> list[str]:
    return [text[i : i + FRAGMENT_CHARS] for i in range(0, len(text), FRAGMENT_CHARS)] or [""]


# --------------------------------------------------------------------------- Chat Completions


def _details(usage: Usage, input_key: str, output_key: str) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if usage.cached_tokens is not None:
        details[input_key] = {"cached_tokens": usage.cached_tokens}
    if usage.reasoning_tokens is not None:
        details[output_key] = {"reasoning_tokens": usage.reasoning_tokens}
    return details


def _chat_usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        **_details(usage, "prompt_tokens_details", "completion_tokens_details"),
    }


def chat_completion(turn: AssistantTurn) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if turn.reasoning is not None:
        message["reasoning_content"] = turn.reasoning
    if turn.calls:
        message["tool_calls"] = [
            {
                "id": c.call_id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in turn.calls
        ]
    body = {
        "id": turn.response_id,
        "object": "chat.completion",
        "created": turn.created,
        "model": turn.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": turn.finish_reason,
                "logprobs": None,
            }
        ],
    }
    if turn.usage is not None:
        body["usage"] = _chat_usage(turn.usage)
    return body


def chat_chunk(
    turn: AssistantTurn, delta: dict[str, Any], finish: str | None = None, *, include_usage: bool
) -> dict[str, Any]:
    """One chunk of ``turn``'s stream (``usage: null`` on each when the client asked for it)."""
    head = {
        "id": turn.response_id,
        "object": "chat.completion.chunk",
        "created": turn.created,
        "model": turn.model,
    }
    out = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if include_usage:
        out["usage"] = None
    return out


def chat_call_opened(index: int, call_id: str, name: str) -> dict[str, Any]:
    """The delta that starts tool call ``index``: its id and name, no arguments yet."""
    function = {"name": name, "arguments": ""}
    return {
        "tool_calls": [{"index": index, "id": call_id, "type": "function", "function": function}]
    }


def chat_call_delta(index: int, piece: str) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}


def chat_closed(turn: AssistantTurn, *, include_usage: bool) -> list[dict[str, Any]]:
    """The finish chunk, and the usage chunk when the client asked for it."""
    chunks = [chat_chunk(turn, {}, turn.finish_reason, include_usage=include_usage)]
    if include_usage and turn.usage is not None:
        usage_chunk = chat_chunk(turn, {}, include_usage=include_usage)
        chunks.append({**usage_chunk, "choices": [], "usage": _chat_usage(turn.usage)})
    return chunks


def chat_chunks(turn: AssistantTurn, *, include_usage: bool) -> Iterator[dict[str, Any]]:
    """Role chunk, content deltas, tool-call deltas (id+name, then argument fragments),
    finish chunk, and the usage chunk when the client asked for it."""
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    if turn.reasoning:
        deltas.append({"reasoning_content": turn.reasoning})
    if turn.text:
        deltas += [{"content": piece} for piece in _fragments(turn.text)]
    for index, call in enumerate(turn.calls):
        deltas.append(chat_call_opened(index, call.call_id, call.name))
        deltas += [chat_call_delta(index, piece) for piece in _fragments(call.arguments)]
    for delta in deltas:
        yield chat_chunk(turn, delta, include_usage=include_usage)
    yield from chat_closed(turn, include_usage=include_usage)


def chat_data(chunk: dict[str, Any]) -> bytes:
    """One Chat chunk on the wire."""
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


CHAT_DONE = b"data: [DONE]\n\n"


def chat_sse(turn: AssistantTurn, *, include_usage: bool) -> Iterator[bytes]:
    for item in chat_chunks(turn, include_usage=include_usage):
        yield chat_data(item)
    yield CHAT_DONE


# --------------------------------------------------------------------------- Responses


def _responses_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        **_details(usage, "input_tokens_details", "output_tokens_details"),
    }


def _message_id(turn: AssistantTurn) -> str:
    return "msg_" + turn.response_id.removeprefix("resp_")


def reasoning_item(turn: AssistantTurn, text: str) -> dict[str, Any]:
    rs_id = "rs_" + turn.response_id.removeprefix("resp_")
    return {"type": "reasoning", "id": rs_id, "summary": [{"type": "summary_text", "text": text}]}


def message_item(turn: AssistantTurn, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": _message_id(turn),
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call_item(call: FunctionCall) -> dict[str, Any]:
    item = {
        "type": "function_call",
        "id": call.call_id,
        "call_id": call.call_id,
        "name": call.name,
        "arguments": call.arguments,
        "status": "completed",
    }
    if call.namespace is not None:
        item["namespace"] = call.namespace
    return item


def _output_items(turn: AssistantTurn) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.reasoning_item and turn.reasoning is not None:
        items.append(reasoning_item(turn, turn.reasoning))
    if turn.text is not None:
        items.append(message_item(turn, turn.text))
    return items + [call_item(c) for c in turn.calls]


def _response(turn: AssistantTurn, *, status: str, output: list, usage: dict | None) -> dict:
    incomplete = None if status != "incomplete" else {"reason": turn.incomplete}
    return {
        "id": turn.response_id,
        "object": "response",
        "created_at": turn.created,
        "status": status,
        "error": None,
        "incomplete_details": incomplete,
        "instructions": None,
        "metadata": {},
        "model": turn.model,
        "output": output,
        "parallel_tool_calls": True,
        "temperature": None,
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "usage": usage,
    }


def response_object(turn: AssistantTurn) -> dict[str, Any]:
    usage = None if turn.usage is None else _responses_usage(turn.usage)
    status = "completed" if turn.incomplete is None else "incomplete"
    return _response(turn, status=status, output=_output_items(turn), usage=usage)


def item_opened(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    """The events that open output item ``index`` (``item`` needs only its type and ids)."""
    added = {"type": "response.output_item.added", "output_index": index}
    if item["type"] == "reasoning":
        return [{**added, "item": {**item, "summary": []}}]
    if item["type"] == "function_call":
        return [{**added, "item": {**item, "status": "in_progress", "arguments": ""}}]
    empty_part = {"type": "output_text", "text": "", "annotations": []}
    part = {"output_index": index, "item_id": item["id"], "content_index": 0}
    return [
        {**added, "item": {**item, "status": "in_progress", "content": []}},
        {"type": "response.content_part.added", **part, "part": empty_part},
    ]


def item_delta(index: int, item: dict[str, Any], piece: str) -> list[dict[str, Any]]:
    """A piece of an open item's text or arguments (a reasoning item is said whole at its end)."""
    base = {"output_index": index, "item_id": item["id"]}
    if item["type"] == "message":
        part = {**base, "content_index": 0}
        return [{"type": "response.output_text.delta", **part, "delta": piece, "logprobs": []}]
    if item["type"] == "function_call":
        return [{"type": "response.function_call_arguments.delta", **base, "delta": piece}]
    return []


def item_closed(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    """The events that close output item ``index``, whole as ``item``."""
    base = {"output_index": index, "item_id": item["id"]}
    events: list[dict[str, Any]] = []
    if item["type"] == "message":
        part = {**base, "content_index": 0}
        text = item["content"][0]["text"]
        events += [
            {"type": "response.output_text.done", **part, "text": text, "logprobs": []},
            {"type": "response.content_part.done", **part, "part": item["content"][0]},
        ]
    elif item["type"] == "function_call":
        done = {"type": "response.function_call_arguments.done", **base, "name": item["name"]}
        events.append({**done, "arguments": item["arguments"]})
    events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


def _item_events(index: int, item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """added → deltas/done → output_item.done for one output item."""
    yield from item_opened(index, item)
    whole = item["content"][0]["text"] if item["type"] == "message" else item.get("arguments")
    for piece in _fragments(whole) if whole is not None else ():
        yield from item_delta(index, item, piece)
    yield from item_closed(index, item)


def response_opened(turn: AssistantTurn) -> list[dict[str, Any]]:
    """response.created and response.in_progress, of a response with no output yet."""
    pending = _response(turn, status="in_progress", output=[], usage=None)
    return [
        {"type": "response.created", "response": pending},
        {"type": "response.in_progress", "response": pending},
    ]


def response_closed(turn: AssistantTurn) -> dict[str, Any]:
    """response.completed (or .incomplete), carrying the whole response."""
    final = response_object(turn)
    return {"type": f"response.{final['status']}", "response": final}


def response_events(turn: AssistantTurn) -> Iterator[dict[str, Any]]:
    """created → in_progress → per-item events → response.completed (or .incomplete),
    numbered in order."""
    events = response_opened(turn)
    for index, item in enumerate(_output_items(turn)):
        events.extend(_item_events(index, item))
    events.append(response_closed(turn))
    for number, event in enumerate(events):
        yield {**event, "sequence_number": number}


def sse_event(event: dict[str, Any]) -> bytes:
    """One Responses event on the wire."""
    return b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


def responses_sse(turn: AssistantTurn) -> Iterator[bytes]:
    for event in response_events(turn):
        yield sse_event(event)


def error_event(dialect: Dialect, message: str, code: str) -> bytes:
    """An SSE error event ending a stream the gateway cut short; the blank line first ends
    whatever event the cut left half-sent."""
    if dialect == "chat":
        event: dict[str, Any] = {
            "error": {"message": message, "type": "server_error", "code": code}
        }
        return b"\n\ndata: " + orjson.dumps(event) + b"\n\n"
    event = {"type": "error", "code": code, "message": message, "param": None}
    return b"\n\nevent: error\ndata: " + orjson.dumps(event) + b"\n\n"
