"""A stream in one dialect said in the other while it arrives.

An agent streaming from a server of the other dialect gets each piece of text and of function
arguments as the server sends it, not the whole answer at the end (Codex gives up on a stream
that stays silent too long). The events and chunks are ``render``'s, said piece by piece; the
end (``response.completed``, or Chat's finish and usage chunks) is made from the answer read
whole (``translate_answer``), so it says exactly what the pieces said.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gym_assets.rollouts.gateway.render import (
    CHAT_DONE,
    AssistantTurn,
    FunctionCall,
    call_item,
    chat_call_delta,
    chat_call_opened,
    chat_chunk,
    chat_closed,
    chat_data,
    error_event,
    item_closed,
    item_delta,
    item_opened,
    message_item,
    reasoning_item,
    response_closed,
    response_opened,
    sse_event,
)
from gym_assets.rollouts.gateway.sse import StreamAssembler


class ResponsesFromChat:
    """Follows a Chat stream (its ``assembler`` is fed the server's bytes) and says the
    Responses events each chunk amounted to; ``end`` closes the stream."""

    def __init__(self) -> None:
        self.assembler = StreamAssembler("chat", self._on_chunk)
        self._events: list[dict[str, Any]] = []
        self._number = 0
        self._head: AssistantTurn | None = None  # id, model and creation of the answer
        self._index = -1  # output index of the open item
        self._kind: str | None = None  # "reasoning" | "message" | "function_call"
        self._call: tuple[Any, str, str] | None = None  # Chat index, id and name of a call
        self._said = ""  # the open item's text or arguments so far

    def say(self, chunk: bytes) -> bytes:
        """The Responses events of ``chunk`` (already fed to the assembler) on the wire."""
        return self._wire()

    def end(self, answer: AssistantTurn | str) -> bytes:
        """The last events: the whole response, or an error event saying why there is none."""
        self._close_item()
        if isinstance(answer, str):
            return self._wire() + error_event("responses", answer, "upstream_error")
        if self._head is None:  # nothing streamed: still a well-formed stream
            self._emit(response_opened(answer))
        self._emit([response_closed(answer)])
        return self._wire()

    def _emit(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            self._events.append({**event, "sequence_number": self._number})
            self._number += 1

    def _wire(self) -> bytes:
        data = b"".join(sse_event(event) for event in self._events)
        self._events.clear()
        return data

    def _on_chunk(self, chunk: dict[str, Any]) -> None:
        if self._head is None:
            if not isinstance(chunk.get("id"), str):
                return  # an error chunk: the end says it
            created = chunk.get("created")
            self._head = AssistantTurn(
                chunk["id"],
                str(chunk.get("model")),
                None,
                created=created if isinstance(created, int) else 0,
            )
            self._emit(response_opened(self._head))
        choices = chunk.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        delta = choice.get("delta") if isinstance(choice, dict) else None
        if not isinstance(delta, dict):
            return
        reasoning = delta.get("reasoning_content", delta.get("reasoning"))
        if isinstance(reasoning, str) and reasoning:
            self._say("reasoning", reasoning)
        if isinstance(delta.get("content"), str) and delta["content"]:
            self._say("message", delta["content"])
        for part in delta.get("tool_calls") or ():
            if isinstance(part, dict):
                self._on_call(part)

    def _on_call(self, part: dict[str, Any]) -> None:
        given = part.get("function")
        function: dict[str, Any] = given if isinstance(given, dict) else {}
        index = part.get("index")
        if self._call is None or self._call[0] != index:
            self._close_item()
            self._call = (index, str(part.get("id")), str(function.get("name")))
        arguments = function.get("arguments")
        self._say("function_call", arguments if isinstance(arguments, str) else "")

    def _say(self, kind: str, piece: str) -> None:
        if self._kind != kind:
            self._close_item()
            self._kind, self._index = kind, self._index + 1
            self._emit(item_opened(self._index, self._item()))
        self._said += piece
        if piece:
            self._emit(item_delta(self._index, self._item(), piece))

    def _item(self) -> dict[str, Any]:
        """The open item, whole as far as it was said."""
        assert self._head is not None
        if self._kind == "function_call":
            assert self._call is not None
            _, call_id, name = self._call
            return call_item(FunctionCall(call_id, name, self._said))
        if self._kind == "reasoning":
            return reasoning_item(replace(self._head, reasoning_item=True), self._said)
        return message_item(self._head, self._said)

    def _close_item(self) -> None:
        if self._kind is None:
            return
        self._emit(item_closed(self._index, self._item()))
        if self._kind == "function_call":
            self._call = None
        self._kind, self._said = None, ""


class ChatFromResponses:
    """Follows a Responses stream (its ``assembler`` is fed the server's bytes) and says the
    Chat chunks each event amounted to; ``end`` closes the stream."""

    def __init__(self, *, include_usage: bool) -> None:
        self.assembler = StreamAssembler("responses", self._on_event)
        self._include_usage = include_usage
        self._chunks: list[dict[str, Any]] = []
        self._head: AssistantTurn | None = None
        self._calls: dict[Any, int] = {}  # a function call's item id → its Chat index

    def say(self, chunk: bytes) -> bytes:
        """The Chat chunks of ``chunk`` (already fed to the assembler) on the wire."""
        data = b"".join(chat_data(c) for c in self._chunks)
        self._chunks.clear()
        return data

    def end(self, answer: AssistantTurn | str) -> bytes:
        """The last chunks: finish (and usage), or an error chunk saying why there is none."""
        if isinstance(answer, str):
            return self.say(b"") + error_event("chat", answer, "upstream_error")
        if self._head is None:
            self._open(answer)
        self._chunks += chat_closed(answer, include_usage=self._include_usage)
        return self.say(b"") + CHAT_DONE

    def _open(self, head: AssistantTurn) -> None:
        self._head = head
        self._delta({"role": "assistant", "content": ""})

    def _delta(self, delta: dict[str, Any]) -> None:
        assert self._head is not None
        self._chunks.append(chat_chunk(self._head, delta, include_usage=self._include_usage))

    def _on_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        response = event.get("response")
        if self._head is None:
            if kind != "response.created" or not isinstance(response, dict):
                return
            created = response.get("created_at")
            head = AssistantTurn(
                str(response.get("id")),
                str(response.get("model")),
                None,
                created=int(created) if isinstance(created, int | float) else 0,
            )
            self._open(head)
        delta = event.get("delta")
        item = event.get("item")
        if kind == "response.output_text.delta" and isinstance(delta, str):
            self._delta({"content": delta})
        elif kind in _REASONING_DELTAS and isinstance(delta, str):
            self._delta({"reasoning_content": delta})
        elif kind == "response.function_call_arguments.delta" and isinstance(delta, str):
            if (index := self._calls.get(event.get("item_id"))) is not None:
                self._delta(chat_call_delta(index, delta))
        elif (
            kind == "response.output_item.added"
            and isinstance(item, dict)
            and item.get("type") == "function_call"
        ):
            index = self._calls[item.get("id")] = len(self._calls)
            self._delta(chat_call_opened(index, str(item.get("call_id")), str(item.get("name"))))


_REASONING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


StreamTranslator = ResponsesFromChat | ChatFromResponses
