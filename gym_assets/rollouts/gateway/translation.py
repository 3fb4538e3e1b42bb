"""An OpenAI-compatible server reached in the API it speaks, whatever the agent speaks.

Many servers people run speak Chat Completions only (llama.cpp's, LM Studio, TGI, older vLLM
and Ollama) and answer ``/v1/responses`` with 404, while ``simple_agent`` and Codex speak only
Responses; a few speak only Responses. A call in the server's own dialect is forwarded as it is;
any other is restated (``translate_request``), and the server's answer, whole or streamed, is
read into a neutral turn (``translate_answer``) and said in the agent's dialect and transport by
``render`` — the code that says the offline upstreams' answers, so a translated answer looks
exactly like a scripted one; a stream is said piece by piece as it arrives
(``translate_stream``).

Every translated reply carries its :class:`UpstreamLeg` (what went to the server, what came
back) for the capture. Errors keep their HTTP status; both dialects shape an error body alike.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

import orjson

from gym_assets.modes import UpstreamApi
from gym_assets.rollouts.gateway.capture import stream_category
from gym_assets.rollouts.gateway.render import AssistantTurn
from gym_assets.rollouts.gateway.script import Dialect
from gym_assets.rollouts.gateway.sse import StreamAssembler
from gym_assets.rollouts.gateway.translate_answer import NotAnAnswer, turn_of
from gym_assets.rollouts.gateway.translate_request import Untranslatable, translate_request
from gym_assets.rollouts.gateway.translate_stream import (
    ChatFromResponses,
    ResponsesFromChat,
    StreamTranslator,
)
from gym_assets.rollouts.gateway.upstreams import (
    ROUTES,
    ModelRequest,
    OpenAIUpstream,
    StreamBroken,
    UpstreamFailure,
    UpstreamLeg,
    UpstreamReply,
    close_stream,
    error_reply,
    render_reply,
)

log = logging.getLogger(__name__)

# A server without the Responses API answers its route so (405: a route matched, not for POST).
_ABSENT = (404, 405)


class TranslatingUpstream:
    """An ``OpenAIUpstream`` that speaks ``api``, translating calls made in the other dialect."""

    def __init__(self, server: OpenAIUpstream, api: UpstreamApi = "auto") -> None:
        self.server = server
        self.api = api  # "auto" until open() has asked the server

    async def open(self) -> None:
        await self.server.open()
        if self.api == "auto":
            self.api = await self._probe()

    async def aclose(self) -> None:
        await self.server.aclose()

    async def _probe(self) -> Dialect:
        """Which API the server speaks, from how it answers an empty Responses request. A server
        that gives no answer is taken to speak the Responses API, and its calls then fail as
        they would with the API set: each is recorded with how it failed."""
        where = f"{self.server.base_url}{ROUTES['responses']}"
        try:
            status = await self.server.status_of(ROUTES["responses"])
        except Exception as exc:
            log.warning(
                "upstream API auto: POST %s got no answer (%s: %s); taking the Responses API",
                where,
                type(exc).__name__,
                exc,
            )
            return "responses"
        found: Dialect = "chat" if status in _ABSENT else "responses"
        log.warning(
            "upstream API auto: POST %s answered %d, so the server speaks %s; %s calls are "
            "translated (--upstream-api skips this question)",
            where,
            status,
            "Chat Completions only" if found == "chat" else "the Responses API",
            "responses" if found == "chat" else "chat",
        )
        return found

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        speaks: Dialect = "chat" if self.api == "chat" else "responses"
        if speaks == request.dialect:
            return await self.server.answer(request)
        try:
            body = translate_request(request.dialect, request.body)
        except Untranslatable as exc:
            return error_reply(400, f"dialect translation: {exc}", "invalid_request_error")
        leg = UpstreamLeg(speaks, body)
        try:
            reply = await self.server.answer(ModelRequest(speaks, body, request.rollout_id))
            leg.status = reply.status
            if reply.stream is not None:
                said = _said_as_it_comes(reply.stream, leg, _translator(request))
                return UpstreamReply(
                    reply.status, stream=said, media_type="text/event-stream", upstream=leg
                )
            leg.response = reply.parsed if reply.parsed is not None else _object(reply.content)
            if leg.response is None:
                leg.response_raw = reply.content.decode("utf-8", "replace")
        except UpstreamFailure as exc:
            exc.upstream = leg
            raise
        if reply.status >= 400:
            translated = reply
        else:
            answer = _answer(leg)
            translated = (
                _failed(answer) if isinstance(answer, str) else render_reply(answer, request)
            )
        translated.upstream = leg
        return translated


async def _follow(
    stream: AsyncIterator[bytes], assembler: StreamAssembler, leg: UpstreamLeg
) -> AsyncGenerator[bytes, None]:
    """The server's stream fed to ``assembler`` up to its terminal event (or its end), each
    chunk passed on as it comes; at the end, what it amounted to goes on ``leg``."""
    try:
        async for chunk in stream:
            ended = assembler.feed(chunk)
            yield chunk
            if ended:
                break
    except StreamBroken as exc:
        if not assembler.close():
            log.warning("model server stream broke before its end: %s", exc)
    finally:
        await close_stream(stream)
    assembler.close()
    leg.response, leg.response_raw = assembler.result(), assembler.raw
    leg.category = stream_category(assembler)


def _translator(request: ModelRequest) -> StreamTranslator:
    if request.dialect == "responses":
        return ResponsesFromChat()
    options = request.body.get("stream_options")
    asked = isinstance(options, dict) and options.get("include_usage") is True
    return ChatFromResponses(include_usage=asked)


async def _said_as_it_comes(
    stream: AsyncIterator[bytes],
    leg: UpstreamLeg,
    translator: ResponsesFromChat | ChatFromResponses,
) -> AsyncIterator[bytes]:
    """The server's stream in the agent's dialect, each piece as soon as it arrives."""
    async with aclosing(_follow(stream, translator.assembler, leg)) as chunks:  # agent gone
        async for chunk in chunks:
            if said := translator.say(chunk):
                yield said
    yield translator.end(_answer(leg))


def _answer(leg: UpstreamLeg) -> AssistantTurn | str:
    """The turn the server's 2xx answer on ``leg`` says, or why it says none."""
    body = leg.response
    error = body.get("error") if body is not None else None
    failed = body is not None and body.get("status") == "failed"
    if isinstance(error, dict) and (leg.category is not None or failed):
        return f"the model server failed: {error.get('message')}"
    if leg.category not in (None, "incomplete"):
        return f"the model server's stream ended badly ({leg.category})"
    try:
        if body is None:
            raise NotAnAnswer("not a JSON object")
        return turn_of(leg.dialect, body)
    except NotAnAnswer as exc:
        leg.category = "capture_parse_error"
        return f"the model server's answer is {exc}"


def _failed(message: str) -> UpstreamReply:
    return error_reply(502, message, "upstream_error")


def _object(content: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
