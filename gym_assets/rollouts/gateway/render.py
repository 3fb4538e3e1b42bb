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


def chat_chunks(turn: AssistantTurn, *, include_usage: bool) -> Iterator[dict[str, Any]]:
    """Role chunk, content deltas, tool-call deltas (id+name, then argument fragments),
    finish chunk, and the usage chunk when the client asked for it."""
    head = {
        "id": turn.response_id,
        "object": "chat.completion.chunk",
        "created": turn.created,
        "model": turn.model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        out = {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if include_usage:
            out["usage"] = None
        return out

    yield chunk({"role": "assistant", "content": ""})
    if turn.reasoning:
        yield chunk({"reasoning_content": turn.reasoning})
    if turn.text:
        for piece in _fragments(turn.text):
            yield chunk({"content": piece})
    for index, call in enumerate(turn.calls):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call.call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        for piece in _fragments(call.arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, turn.finish_reason)
    if include_usage and turn.usage is not None:
        yield {**head, "choices": [], "usage": _chat_usage(turn.usage)}


def chat_sse(turn: AssistantTurn, *, include_usage: bool) -> Iterator[bytes]:
    for item in chat_chunks(turn, include_usage=include_usage):
        yield b"data: " + orjson.dumps(item) + b"\n\n"
    yield b"data: [DONE]\n\n"


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


def _output_items(turn: AssistantTurn) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.reasoning_item and turn.reasoning is not None:
        summary = [{"type": "summary_text", "text": turn.reasoning}]
        rs_id = "rs_" + turn.response_id.removeprefix("resp_")
        items.append({"type": "reasoning", "id": rs_id, "summary": summary})
    if turn.text is not None:
        items.append(
            {
                "type": "message",
                "id": _message_id(turn),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for c in turn.calls:
        item = {
            "type": "function_call",
            "id": c.call_id,
            "call_id": c.call_id,
            "name": c.name,
            "arguments": c.arguments,
            "status": "completed",
        }
        if c.namespace is not None:
            item["namespace"] = c.namespace
        items.append(item)
    return items


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


def _item_events(index: int, item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """added → deltas/done → output_item.done for one output item."""
    base = {"output_index": index, "item_id": item["id"]}
    if item["type"] == "reasoning":
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "summary": []},
        }
    elif item["type"] == "message":
        text = item["content"][0]["text"]
        empty_part = {"type": "output_text", "text": "", "annotations": []}
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "status": "in_progress", "content": []},
        }
        part = {**base, "content_index": 0}
        yield {"type": "response.content_part.added", **part, "part": empty_part}
        for piece in _fragments(text):
            yield {"type": "response.output_text.delta", **part, "delta": piece, "logprobs": []}
        yield {"type": "response.output_text.done", **part, "text": text, "logprobs": []}
        yield {"type": "response.content_part.done", **part, "part": item["content"][0]}
    else:
        yield {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {**item, "status": "in_progress", "arguments": ""},
        }
        for piece in _fragments(item["arguments"]):
            yield {"type": "response.function_call_arguments.delta", **base, "delta": piece}
        yield {
            "type": "response.function_call_arguments.done",
            **base,
            "name": item["name"],
            "arguments": item["arguments"],
        }
    yield {"type": "response.output_item.done", "output_index": index, "item": item}


def response_events(turn: AssistantTurn) -> Iterator[dict[str, Any]]:
    """created → in_progress → per-item events → response.completed (or .incomplete),
    numbered in order."""
    pending = _response(turn, status="in_progress", output=[], usage=None)
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": pending},
        {"type": "response.in_progress", "response": pending},
    ]
    for index, item in enumerate(_output_items(turn)):
        events.extend(_item_events(index, item))
    final = response_object(turn)
    events.append({"type": f"response.{final['status']}", "response": final})
    for number, event in enumerate(events):
        yield {**event, "sequence_number": number}


def responses_sse(turn: AssistantTurn) -> Iterator[bytes]:
    for event in response_events(turn):
        yield b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"


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
