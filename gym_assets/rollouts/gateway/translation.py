"""An OpenAI-compatible server reached in the API it speaks, whatever the agent speaks.

Many servers people run speak Chat Completions only (llama.cpp's, LM Studio, TGI, older vLLM
and Ollama) and answer ``/v1/responses`` with 404, while ``simple_agent`` and Codex speak only
Responses; a few speak only Responses. A call in the server's own dialect is forwarded as it is;
any other is restated (``translate_request``), and the server's answer, whole or streamed, is
read into a neutral turn (``translate_answer``) and said in the agent's dialect and transport by
``render`` — the code that says the offline upstreams' answers, so a translated answer looks
exactly like a scripted one. A streamed answer is read to its end before the agent's stream is
rendered: the agent gets every event, but all at once.

Every translated reply carries its :class:`UpstreamLeg` (what went to the server, what came
back) for the capture. Errors keep their HTTP status; both dialects shape an error body alike.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson

from gym_assets.modes import UpstreamApi
from gym_assets.rollouts.gateway.capture import stream_category
from gym_assets.rollouts.gateway.script import Dialect
from gym_assets.rollouts.gateway.sse import StreamAssembler
from gym_assets.rollouts.gateway.translate_answer import NotAnAnswer, turn_of
from gym_assets.rollouts.gateway.translate_request import Untranslatable, translate_request
from gym_assets.rollouts.gateway.upstreams import (
    ROUTES,
    ModelRequest,
    OpenAIUpstream,
    StreamBroken,
    UpstreamFailure,
    UpstreamLeg,
    UpstreamReply,
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
                stream = await _read(reply.stream, speaks)
                leg.response, leg.response_raw = stream.result(), stream.raw
                leg.category = stream_category(stream)
            else:
                leg.response = reply.parsed if reply.parsed is not None else _object(reply.content)
                if leg.response is None:
                    leg.response_raw = reply.content.decode("utf-8", "replace")
        except UpstreamFailure as exc:
            exc.upstream = leg
            raise
        translated = reply if reply.status >= 400 else _translated(leg, request)
        translated.upstream = leg
        return translated


async def _read(stream: AsyncIterator[bytes], dialect: Dialect) -> StreamAssembler:
    """The server's stream read to its terminal event (or its end)."""
    assembler = StreamAssembler(dialect)
    try:
        async for chunk in stream:
            if assembler.feed(chunk):
                break
    except StreamBroken as exc:
        if not assembler.close():
            log.warning("model server stream broke before its end: %s", exc)
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    assembler.close()
    return assembler


def _translated(leg: UpstreamLeg, request: ModelRequest) -> UpstreamReply:
    """The server's 2xx answer in the agent's dialect and transport, or a 502 saying why it
    cannot be (an HTTP error keeps its status and body: both dialects shape errors alike)."""
    body = leg.response
    error = body.get("error") if body is not None else None
    if isinstance(error, dict) and (leg.category is not None or body.get("status") == "failed"):
        return _failed(f"the model server failed: {error.get('message')}")
    if leg.category not in (None, "incomplete"):
        return _failed(f"the model server's stream ended badly ({leg.category})")
    try:
        if body is None:
            raise NotAnAnswer("not a JSON object")
        turn = turn_of(leg.dialect, body)
    except NotAnAnswer as exc:
        leg.category = "capture_parse_error"
        return _failed(f"the model server's answer is {exc}")
    return render_reply(turn, request)


def _failed(message: str) -> UpstreamReply:
    return error_reply(502, message, "upstream_error")


def _object(content: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
