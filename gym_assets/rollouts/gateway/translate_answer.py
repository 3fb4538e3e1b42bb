"""A model server's answer in one dialect, read into the neutral turn ``render`` says in either.

The answer is checked against the ``openai`` package's models of it (``ChatCompletion``,
``Response``) before anything is read, so a server that answers something else is named as such
rather than half-translated. Usage is read by the capture's own reader: counts the server did not
report stay unknown (``None``), never 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from gym_assets.rollouts.gateway.capture import normalise_usage
from gym_assets.rollouts.gateway.render import AssistantTurn, FunctionCall, Usage
from gym_assets.rollouts.gateway.script import Dialect

# Chat finish reasons of a cut answer, as Responses says them (``incomplete_details.reason``).
_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


class NotAnAnswer(ValueError):
    """The server's 2xx body is not an answer in its dialect."""


def turn_of(dialect: Dialect, body: Mapping[str, Any]) -> AssistantTurn:
    """The turn a server speaking ``dialect`` answered with ``body``."""
    try:
        return chat_turn(body) if dialect == "chat" else responses_turn(body)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise NotAnAnswer(f"not a {dialect} answer: {where}: {error['msg']}") from None


def _usage(body: Mapping[str, Any]) -> Usage | None:
    tokens = normalise_usage(body.get("usage"))
    if tokens["tokens_in"] is None or tokens["tokens_out"] is None:
        return None
    return Usage(
        tokens["tokens_in"],
        tokens["tokens_out"],
        cached_tokens=tokens["cached_tokens"],
        reasoning_tokens=tokens["tokens_reasoning"],
    )


def _said_why(choices: Any) -> Any:
    """Choices whose first one says why it stopped: a stream that ended with ``[DONE]`` but no
    finish reason (some servers leave it out) stopped of its own accord."""
    first = choices[0] if isinstance(choices, list) and choices else None
    if isinstance(first, Mapping) and first.get("finish_reason") is None:
        return [{**first, "finish_reason": "stop"}, *choices[1:]]
    return choices


def chat_turn(body: Mapping[str, Any]) -> AssistantTurn:
    # Deferred (also below): only a translated answer needs openai, ~0.5 s of gateway start-up.
    from openai.types.chat import ChatCompletion

    said = {**body, "choices": _said_why(body.get("choices")), "usage": None}
    completion = ChatCompletion.model_validate(said)
    if not completion.choices:
        raise NotAnAnswer("not a chat answer: it has no choices")
    choice = completion.choices[0]
    message = choice.message
    extra = message.model_extra or {}
    reasoning = extra.get("reasoning_content", extra.get("reasoning"))
    calls = tuple(
        FunctionCall(call.id, call.function.name, call.function.arguments)
        for call in message.tool_calls or ()
        if call.type == "function"
    )
    return AssistantTurn(
        completion.id,
        completion.model,
        _usage(body),
        text=message.content if message.content is not None else message.refusal,
        calls=calls,
        reasoning=reasoning if isinstance(reasoning, str) else None,
        created=completion.created,
        incomplete=_INCOMPLETE.get(choice.finish_reason),
        reasoning_item=True,
    )


def responses_turn(body: Mapping[str, Any]) -> AssistantTurn:
    from openai.types.responses import Response

    response = Response.model_validate({**body, "usage": None})
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[FunctionCall] = []
    for item in response.output:
        if item.type == "message":
            texts += [p.text if p.type == "output_text" else p.refusal for p in item.content]
        elif item.type == "function_call":
            calls.append(FunctionCall(item.call_id, item.name, item.arguments))
        elif item.type == "reasoning":
            reasoning += [part.text for part in item.summary]
            reasoning += [part.text for part in item.content or ()]
    details = response.incomplete_details
    incomplete = None
    if response.status == "incomplete":
        incomplete = (details.reason if details else None) or "max_output_tokens"
    return AssistantTurn(
        response.id,
        response.model,
        _usage(body),
        text="".join(texts) if texts else None,
        calls=tuple(calls),
        reasoning="\n".join(reasoning) if reasoning else None,
        created=int(response.created_at),
        incomplete=incomplete,
    )
