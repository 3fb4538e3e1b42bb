"""Reading Responses objects and input items (strings, item lists, text parts)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def input_items(params: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's ``input`` as a list of items (a string is one user message)."""
    value = params.get("input")
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    return [dict(item) for item in value]


def message_text(item: Mapping[str, Any]) -> str:
    """The text of one message item (string content or a list of text parts)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, Sequence) else []
    return "".join(
        str(part.get("text", ""))
        for part in parts
        if isinstance(part, Mapping) and part.get("type") in ("output_text", "input_text", "text")
    )


def final_text(response: Mapping[str, Any] | None) -> str:
    """The last assistant message of a Responses object ('' when it has none)."""
    if not response:
        return ""
    for item in reversed(response.get("output") or []):
        if item.get("type") == "message" and item.get("role", "assistant") == "assistant":
            return message_text(item)
    return ""
