"""A Chat stream said as a Responses stream: event for event what ``render`` says for the same
turn, and each piece passed on before the server sends the next."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from gym_assets.rollouts.gateway import ModelRequest, UpstreamReply
from gym_assets.rollouts.gateway.render import (
    AssistantTurn,
    FunctionCall,
    Usage,
    chat_sse,
    responses_sse,
)
from gym_assets.rollouts.gateway.sse import StreamAssembler
from gym_assets.rollouts.gateway.translate_answer import turn_of
from gym_assets.rollouts.gateway.translate_stream import ChatFromResponses, ResponsesFromChat
from gym_assets.rollouts.gateway.translation import TranslatingUpstream

TURNS = [
    AssistantTurn("resp_1", "m", Usage(20, 8, 3, 2), text="a longer answer " * 4, reasoning="r"),
    AssistantTurn(
        "resp_2",
        "m",
        None,
        text="Let me look.",
        calls=(
            FunctionCall("call_a", "exec", '{"cmd": "' + "x" * 50 + '"}'),
            FunctionCall("call_b", "y", "{}"),
        ),
    ),
    AssistantTurn("resp_3", "m", Usage(5, 64), text="cut", incomplete="max_output_tokens"),
]


@pytest.mark.parametrize("turn", TURNS)
def test_a_chat_stream_is_said_as_render_says_the_same_turn(turn: AssistantTurn) -> None:
    translator = ResponsesFromChat()
    said = b""
    for chunk in chat_sse(turn, include_usage=turn.usage is not None):
        translator.assembler.feed(chunk)
        said += translator.say(chunk)
    answer = turn_of("chat", translator.assembler.result() or {})
    said += translator.end(answer)
    assert said == b"".join(responses_sse(replace(turn, reasoning_item=True)))


@pytest.mark.parametrize("usage", [True, False], ids=["usage", "no-usage-asked"])
@pytest.mark.parametrize("turn", TURNS)
def test_a_responses_stream_is_said_as_render_says_the_same_turn(
    turn: AssistantTurn, usage: bool
) -> None:
    translator = ChatFromResponses(include_usage=usage)
    said = b""
    for chunk in responses_sse(replace(turn, reasoning_item=True)):
        translator.assembler.feed(chunk)
        said += translator.say(chunk)
    answer = turn_of("responses", translator.assembler.result() or {})
    said += translator.end(answer)
    # a reasoning item is said whole at its end, so no reasoning chunk comes before the text
    assert said == b"".join(chat_sse(replace(turn, reasoning=None), include_usage=usage))


def test_a_failed_stream_ends_with_an_error_event() -> None:
    translator = ResponsesFromChat()
    [first, *_] = chat_sse(TURNS[0], include_usage=False)
    translator.assembler.feed(first)
    said = translator.say(first) + translator.end("the model server's stream ended badly")
    stream = StreamAssembler("responses")
    stream.feed(said)
    assert stream.ended == "error"


class _SlowChatServer:
    """Sends its stream's chunks one by one, each only once the previous one was passed on."""

    base_url = "http://server"

    def __init__(self, turn: AssistantTurn) -> None:
        self.chunks = list(chat_sse(turn, include_usage=False))
        self.asked: list[int] = []  # chunks sent when each next one was asked for

    async def open(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        async def stream() -> AsyncIterator[bytes]:
            for index, chunk in enumerate(self.chunks):
                self.asked.append(index)
                yield chunk

        return UpstreamReply(200, stream=stream(), media_type="text/event-stream")


def test_each_piece_is_passed_on_before_the_server_sends_the_next() -> None:
    server = _SlowChatServer(replace(TURNS[0], reasoning=None))
    upstream = TranslatingUpstream(server, "chat")  # type: ignore[arg-type]
    request = ModelRequest("responses", {"model": "m", "input": "hi", "stream": True}, None)

    async def first_text() -> tuple[bytes, list[int]]:
        reply = await upstream.answer(request)
        assert reply.stream is not None and reply.upstream is not None
        said = b""
        async for data in reply.stream:
            said += data
            if b"response.output_text.delta" in said:
                return said, list(server.asked)
        raise AssertionError("no text")

    said, asked = asyncio.run(first_text())
    assert asked == [0, 1]  # the role chunk and the first piece of text: nothing more yet
    assert said.count(b"event: response.output_text.delta") == 1
