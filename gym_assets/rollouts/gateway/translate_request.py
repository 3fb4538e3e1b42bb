"""A request in one OpenAI dialect restated in the other, for a server that speaks only one.

The agent keeps its dialect; the model server gets the same conversation in its own. Function
tools, tool calls (ids kept) and their results, roles, instructions and the sampling settings
both dialects have carry over. What cannot is refused with a message naming it (an input item of
a built-in tool, ``previous_response_id``: the server keeps no conversation to point at), or,
for settings and tools the model could not use on the other side, dropped and logged once.
Reasoning goes to a Chat server as ``reasoning_content``; a Responses server takes back only
reasoning items it issued itself, so Chat reasoning is not sent to one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from gym_assets.rollouts.gateway.script import Dialect

log = logging.getLogger(__name__)

# Settings both dialects spell alike.
_SHARED = ("model", "temperature", "top_p", "parallel_tool_calls", "stream", "user")
_ROLES = ("user", "system", "developer")
_logged: set[str] = set()  # what was dropped, said once per process


class Untranslatable(ValueError):
    """A request with no counterpart in the other dialect; the agent gets a 400 naming it."""


def translate_request(dialect: Dialect, body: Mapping[str, Any]) -> dict[str, Any]:
    """``body``, sent by an agent in ``dialect``, in the other dialect."""
    return chat_request(body) if dialect == "responses" else responses_request(body)


def _drop(what: str) -> None:
    if what not in _logged:
        _logged.add(what)
        log.warning("dialect translation drops %s (no counterpart on the model server)", what)


def _dropped_fields(body: Mapping[str, Any], handled: Iterable[str]) -> None:
    for key in sorted(set(body) - set(handled) - set(_SHARED)):
        if body[key] is not None:
            _drop(f"the request field {key!r}")


def _text_of(content: Any, kinds: tuple[str, ...], where: str) -> str:
    """The text of a content list made of text parts only (tool results, instructions)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise Untranslatable(f"{where}: content must be a string or a list of parts")
    texts = []
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") not in kinds:
            kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
            raise Untranslatable(f"{where}: a {kind!r} part has no counterpart here")
        texts.append(str(part.get("text", part.get("refusal", ""))))
    return "\n".join(texts)


# --------------------------------------------------------------------------- Responses → Chat


def chat_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """A Responses request as a Chat Completions request."""
    if body.get("previous_response_id"):
        raise Untranslatable(
            "previous_response_id needs a server that keeps conversations; this model server "
            "speaks Chat Completions only: send the whole conversation as input"
        )
    out: dict[str, Any] = {k: body[k] for k in _SHARED if k in body}
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise Untranslatable("input must be a string or a list of items")
    _Messages(messages).add_all(items)
    out["messages"] = messages
    tools = [_chat_tool(t) for t in body.get("tools") or () if _is_function(t)]
    if tools:
        out["tools"] = tools
    if (choice := _chat_tool_choice(body.get("tool_choice"))) is not None:
        out["tool_choice"] = choice
    if body.get("max_output_tokens") is not None:
        out["max_tokens"] = body["max_output_tokens"]
    text = body.get("text")
    form = text.get("format") if isinstance(text, Mapping) else None
    if isinstance(form, Mapping) and (response_format := _chat_format(form)) is not None:
        out["response_format"] = response_format
    reasoning = body.get("reasoning")
    if isinstance(reasoning, Mapping) and reasoning.get("effort") is not None:
        out["reasoning_effort"] = reasoning["effort"]
    if body.get("stream") is True:
        out["stream_options"] = {"include_usage": True}  # servers that can, report usage
    handled = ("input", "instructions", "tools", "tool_choice", "max_output_tokens", "text")
    _dropped_fields(body, (*handled, "reasoning", "previous_response_id"))
    return out


def _is_function(tool: Any) -> bool:
    if isinstance(tool, Mapping) and tool.get("type") == "function":
        return True
    _drop(f"the {tool.get('type') if isinstance(tool, Mapping) else tool!r} tool")
    return False


def _chat_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("name", "description", "parameters", "strict")
    function = {k: tool[k] for k in keys if tool.get(k) is not None}
    return {"type": "function", "function": function}


def _chat_tool_choice(choice: Any) -> Any:
    if choice is None or isinstance(choice, str):
        return choice
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    _drop(f"the tool_choice {choice!r}")
    return None


def _chat_format(form: Mapping[str, Any]) -> dict[str, Any] | None:
    if form.get("type") == "json_schema":
        schema = {k: v for k, v in form.items() if k != "type"}
        return {"type": "json_schema", "json_schema": schema}
    return {"type": "json_object"} if form.get("type") == "json_object" else None


class _Messages:
    """Responses input items folded into Chat messages: consecutive assistant output (text,
    function calls, reasoning) becomes one assistant message, as a Chat server expects it."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.messages = messages
        self.reasoning: str | None = None  # said before the assistant message it belongs to

    def add_all(self, items: list[Any]) -> None:
        for index, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise Untranslatable(f"input[{index}] must be an object")
            self.add(item, f"input[{index}]")

    def add(self, item: Mapping[str, Any], where: str) -> None:
        kind = item.get("type", "message")
        role = item.get("role")
        if kind == "message" and role in _ROLES:
            role = "system" if role == "developer" else role  # Chat-only servers know system
            self.messages.append(
                {"role": role, "content": _chat_content(item.get("content"), where)}
            )
        elif kind == "message" and role == "assistant":
            text = _text_of(item.get("content"), ("output_text", "refusal", "input_text"), where)
            message = self._assistant(open_for_text=True)
            message["content"] = (message.get("content") or "") + text
        elif kind == "function_call":
            call = {"name": item.get("name"), "arguments": item.get("arguments")}
            tool_call = {"id": item.get("call_id"), "type": "function", "function": call}
            self._assistant(open_for_text=False).setdefault("tool_calls", []).append(tool_call)
        elif kind == "function_call_output":
            output = _text_of(item.get("output"), ("input_text", "output_text"), where)
            self.messages.append(
                {"role": "tool", "tool_call_id": item.get("call_id"), "content": output}
            )
        elif kind == "reasoning":
            texts = [
                part.get("text", "")
                for key in ("summary", "content")
                for part in item.get(key) or ()
                if isinstance(part, Mapping)
            ]
            self.reasoning = "\n".join(texts) or None
        else:
            raise Untranslatable(
                f"{where}: a {kind!r} item (role {role!r}) has no Chat Completions counterpart"
            )

    def _assistant(self, *, open_for_text: bool) -> dict[str, Any]:
        """The assistant message to add to: the last one, unless text would follow its calls."""
        last = self.messages[-1] if self.messages else None
        reusable = (
            last is not None
            and last["role"] == "assistant"
            and self.reasoning is None
            and not (open_for_text and last.get("tool_calls"))
        )
        if reusable:
            assert last is not None
            return last
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if self.reasoning is not None:
            message["reasoning_content"], self.reasoning = self.reasoning, None
        self.messages.append(message)
        return message


def _chat_content(content: Any, where: str) -> Any:
    """User, system or developer content: text as a string, images as Chat image parts."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise Untranslatable(f"{where}: content must be a string or a list of parts")
    if all(isinstance(p, Mapping) and p.get("type") == "input_text" for p in content):
        return _text_of(content, ("input_text",), where)
    parts = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "input_text":
            parts.append({"type": "text", "text": part.get("text", "")})
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            image = {"url": part["image_url"], "detail": part.get("detail", "auto")}
            parts.append({"type": "image_url", "image_url": image})
        else:
            raise Untranslatable(f"{where}: a {kind!r} part has no Chat Completions counterpart")
    return parts


# --------------------------------------------------------------------------- Chat → Responses


def responses_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """A Chat Completions request as a Responses request."""
    if isinstance(body.get("n"), int) and body["n"] > 1:
        raise Untranslatable("n > 1 has no Responses counterpart: ask for one answer a call")
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise Untranslatable("messages must be a list")
    out: dict[str, Any] = {k: body[k] for k in _SHARED if k in body}
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise Untranslatable(f"messages[{index}] must be an object")
        items.extend(_responses_items(message, f"messages[{index}]"))
    out["input"] = items
    tools = [_responses_tool(t) for t in body.get("tools") or () if _is_function(t)]
    if tools:
        out["tools"] = tools
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        out["tool_choice"] = {"type": "function", "name": choice["function"].get("name")}
    elif isinstance(choice, str):
        out["tool_choice"] = choice
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if limit is not None:
        out["max_output_tokens"] = limit
    form = body.get("response_format")
    if isinstance(form, Mapping) and form.get("type") in ("json_schema", "json_object"):
        schema = form.get("json_schema") if form["type"] == "json_schema" else None
        out["text"] = {"format": {"type": form["type"], **(schema or {})}}
    if body.get("reasoning_effort") is not None:
        out["reasoning"] = {"effort": body["reasoning_effort"]}
    handled = ("messages", "tools", "tool_choice", "max_completion_tokens", "max_tokens")
    # stream_options: a Responses stream always ends with its usage
    _dropped_fields(body, (*handled, "response_format", "reasoning_effort", "n", "stream_options"))
    return out


def _responses_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = tool.get("function")
    if not isinstance(function, Mapping):
        raise Untranslatable("a function tool needs its function object")
    # Responses makes a function strict unless told otherwise; Chat does not.
    return {
        "type": "function",
        "name": function.get("name"),
        "description": function.get("description"),
        "parameters": function.get("parameters"),
        "strict": function.get("strict", False),
    }


def _responses_items(message: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    role = message.get("role")
    content = message.get("content")
    if role in _ROLES:
        return [{"type": "message", "role": role, "content": _responses_content(content, where)}]
    if role == "tool":
        output = _text_of(content, ("text",), where)
        return [
            {
                "type": "function_call_output",
                "call_id": message.get("tool_call_id"),
                "output": output,
            }
        ]
    if role != "assistant":
        raise Untranslatable(f"{where}: a {role!r} message has no Responses counterpart")
    items: list[dict[str, Any]] = []
    if message.get("reasoning_content") or message.get("reasoning"):
        _drop("reasoning sent back in assistant messages (a Responses server takes only its own)")
    if content:
        text = _text_of(content, ("text", "refusal"), where)
        items.append({"type": "message", "role": "assistant", "content": text})
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise Untranslatable(f"{where}: a tool call needs its function object")
        items.append(
            {
                "type": "function_call",
                "call_id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    return items


def _responses_content(content: Any, where: str) -> Any:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise Untranslatable(f"{where}: content must be a string or a list of parts")
    parts = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            parts.append({"type": "input_text", "text": part.get("text", "")})
        elif kind == "image_url" and isinstance(part.get("image_url"), Mapping):
            image = part["image_url"]
            parts.append(
                {
                    "type": "input_image",
                    "image_url": image.get("url"),
                    "detail": image.get("detail", "auto"),
                }
            )
        else:
            raise Untranslatable(f"{where}: a {kind!r} part has no Responses counterpart")
    return parts
