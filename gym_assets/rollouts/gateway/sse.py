"""Reassemble a Chat or Responses SSE stream into the object a non-streaming call would return.

The capture records one ``response`` per exchange whatever the transport, and it needs to know
how the stream ended: a terminal event (``[DONE]``, ``response.completed``), an error or
incomplete terminal, or nothing at all (truncated). Bytes are fed as they pass through the
gateway, so reassembly never holds the client up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from gym_assets.rollouts.gateway.script import Dialect


class StreamAssembler:
    """Incremental SSE parser plus per-dialect reassembly."""

    def __init__(
        self, dialect: Dialect, on_event: Callable[[dict[str, Any]], None] | None = None
    ) -> None:
        """``on_event`` is told each event as it is parsed (a translation follows the stream)."""
        self.dialect = dialect
        self._on_event = on_event
        self.ended: str | None = None  # "completed" | "error" | "incomplete" once terminal
        self.unparseable = 0
        self._buffer = b""
        self._raw: list[bytes] = []
        # Chat state
        self._head: dict[str, Any] = {}
        self._message: dict[str, Any] = {"role": "assistant", "content": None}
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: str | None = None
        self._usage: Any = None
        # Responses state
        self._snapshot: dict[str, Any] | None = None
        self._items: dict[int, Any] = {}
        self._final: dict[str, Any] | None = None

    @property
    def raw(self) -> str:
        return b"".join(self._raw).decode("utf-8", "replace")

    def feed(self, chunk: bytes) -> bool:
        """Consume bytes; True once the stream's terminal event has been seen."""
        self._raw.append(chunk)
        self._buffer = (self._buffer + chunk).replace(b"\r\n", b"\n")
        while b"\n\n" in self._buffer:
            block, self._buffer = self._buffer.split(b"\n\n", 1)
            self._on_block(block)
        return self.ended is not None

    def close(self) -> bool:
        """The bytes ended: a last event whose blank line never came still counts (a server
        that closes right after ``data: [DONE]``); True when the stream had its terminal."""
        block, self._buffer = self._buffer, b""
        if self.ended is None and block.strip():
            self._on_block(block)
        return self.ended is not None

    def _on_block(self, block: bytes) -> None:
        data = [line[5:].lstrip() for line in block.split(b"\n") if line.startswith(b"data:")]
        if data:
            self._on_data(b"\n".join(data))

    def _on_data(self, data: bytes) -> None:
        if data == b"[DONE]":
            self.ended = self.ended or "completed"
            return
        try:
            event = orjson.loads(data)
        except orjson.JSONDecodeError:
            self.unparseable += 1
            return
        if not isinstance(event, dict):
            self.unparseable += 1
            return
        if self.dialect == "chat":
            self._on_chat(event)
        else:
            self._on_responses(event)
        if self._on_event is not None:
            self._on_event(event)

    def _on_chat(self, chunk: dict[str, Any]) -> None:
        if isinstance(chunk.get("error"), dict):
            self.ended, self._final = "error", chunk
            return
        for key in ("id", "object", "created", "model", "system_fingerprint"):
            if key in chunk and key not in self._head:
                self._head[key] = chunk[key]
        if chunk.get("usage") is not None:
            self._usage = chunk["usage"]
        choices = chunk.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict):
            return
        if choice.get("finish_reason") is not None:
            self._finish = choice["finish_reason"]
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return
        for key in ("content", "reasoning_content", "reasoning"):
            if isinstance(delta.get(key), str) and delta[key]:  # the role chunk's "" is no text
                self._message[key] = (self._message.get(key) or "") + delta[key]
        for part in delta.get("tool_calls") or ():
            if isinstance(part, dict):
                self._on_tool_delta(part)

    def _on_tool_delta(self, part: dict[str, Any]) -> None:
        call = self._calls.setdefault(
            part.get("index", len(self._calls)),
            {"id": None, "type": "function", "function": {"name": None, "arguments": ""}},
        )
        if part.get("id"):
            call["id"] = part["id"]
        fn = part.get("function")
        if isinstance(fn, dict):
            if fn.get("name"):
                call["function"]["name"] = fn["name"]
            if isinstance(fn.get("arguments"), str):
                call["function"]["arguments"] += fn["arguments"]

    def _on_responses(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        response = event.get("response")
        if isinstance(response, dict):
            self._snapshot = response
        if kind == "response.output_item.done" and isinstance(event.get("output_index"), int):
            self._items[event["output_index"]] = event.get("item")
        terminal = {
            "response.completed": "completed",
            "response.failed": "error",
            "error": "error",
            "response.incomplete": "incomplete",
        }.get(kind)  # type: ignore[arg-type]
        if terminal is not None:
            self.ended = terminal
            self._final = response if isinstance(response, dict) else event

    def result(self) -> dict[str, Any] | None:
        """The reassembled response object (partial when the stream was cut short)."""
        if self._final is not None:
            return self._final
        if self.dialect == "responses":
            if self._snapshot is None and not self._items:
                return None
            partial = dict(self._snapshot or {})
            partial["output"] = [self._items[i] for i in sorted(self._items)]
            return partial
        if not self._head and not self._calls and self._message["content"] is None:
            return None
        message = dict(self._message)
        if self._calls:
            message["tool_calls"] = [self._calls[i] for i in sorted(self._calls)]
        return {
            **self._head,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish}],
            "usage": self._usage,
        }
