"""Rendered streams reassemble into the JSON objects, and stream endings map to categories."""

from __future__ import annotations

import pytest

from gym_assets.rollouts.gateway.capture import stream_category
from gym_assets.rollouts.gateway.render import (
    AssistantTurn,
    FunctionCall,
    Usage,
    chat_completion,
    chat_sse,
    response_events,
    response_object,
    responses_sse,
)
from gym_assets.rollouts.gateway.sse import StreamAssembler

TURNS = [
    AssistantTurn("resp_1_t0", "m", Usage(20, 8, 3, 2), text="a longer final answer " * 3),
    AssistantTurn(
        "resp_2_t1",
        "m",
        Usage(21, 8),
        calls=(
            FunctionCall("call_a", "bash", '{"command": "echo ' + "x" * 60 + '"}'),
            FunctionCall("call_b", "read", '{"path": "a.txt"}'),
        ),
    ),
]


def _feed(dialect: str, chunks: list[bytes], *, split: int = 7) -> StreamAssembler:
    """Feed the bytes cut at arbitrary points, as TCP would deliver them."""
    stream = StreamAssembler(dialect)  # type: ignore[arg-type]
    data = b"".join(chunks)
    for i in range(0, len(data), split):
        stream.feed(data[i : i + split])
    return stream


@pytest.mark.parametrize("turn", TURNS)
def test_chat_stream_reassembles_to_the_json_object(turn: AssistantTurn) -> None:
    stream = _feed("chat", list(chat_sse(turn, include_usage=True)))
    expected = chat_completion(turn)
    for choice in expected["choices"]:
        choice.pop("logprobs")
    assert stream.result() == expected
    assert stream_category(stream) is None


def test_chat_stream_without_usage_option_has_no_usage_chunk() -> None:
    chunks = list(chat_sse(TURNS[0], include_usage=False))
    assert chunks[-1] == b"data: [DONE]\n\n"
    assert b'"usage"' not in b"".join(chunks)


@pytest.mark.parametrize("turn", TURNS)
def test_responses_stream_reassembles_and_is_numbered(turn: AssistantTurn) -> None:
    events = list(response_events(turn))
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[-1]["type"] == "response.completed"
    stream = _feed("responses", list(responses_sse(turn)), split=5)
    assert stream.result() == response_object(turn)
    assert stream_category(stream) is None


def test_crlf_line_endings_are_understood() -> None:
    chunks = [c.replace(b"\n", b"\r\n") for c in chat_sse(TURNS[0], include_usage=False)]
    assert _feed("chat", chunks).ended == "completed"


@pytest.mark.parametrize(
    ("dialect", "body", "category"),
    [
        (
            "chat",
            b'data: {"choices":[{"index":0,"delta":{"content":"x"}}]}\n\n',
            "stream_truncated",
        ),
        ("chat", b'data: {"error":{"message":"boom"}}\n\n', "upstream_error"),
        ("chat", b"data: {broken\n\ndata: [DONE]\n\n", "capture_parse_error"),
        (
            "responses",
            b'data: {"type":"response.failed","response":{"id":"r"}}\n\n',
            "upstream_error",
        ),
        ("responses", b'data: {"type":"error","message":"x"}\n\n', "upstream_error"),
        (
            "responses",
            b'data: {"type":"response.incomplete","response":{"id":"r"}}\n\n',
            "incomplete",
        ),
        (
            "responses",
            b'data: {"type":"response.created","response":{"id":"r"}}\n\n',
            "stream_truncated",
        ),
    ],
)
def test_stream_endings(dialect: str, body: bytes, category: str) -> None:
    assert stream_category(_feed(dialect, [body])) == category


def test_truncated_responses_stream_keeps_finished_items() -> None:
    events = list(responses_sse(TURNS[1]))
    cut = [e for e in events if b"response.completed" not in e]
    result = _feed("responses", cut).result()
    assert result["id"] == "resp_2_t1" and result["status"] == "in_progress"
    assert [item["call_id"] for item in result["output"]] == ["call_a", "call_b"]
