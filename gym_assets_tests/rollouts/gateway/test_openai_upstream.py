"""Forwarding to a real OpenAI-compatible server, played offline by a second gateway."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest
from openai import OpenAI

from gym_assets.rollouts.gateway import (
    ModelRequest,
    OpenAIUpstream,
    ScriptedUpstream,
    UpstreamReply,
    read_capture,
)
from gym_assets_tests.rollouts.gateway.conftest import (
    BASH_CHAT_TOOL,
    EXEC_RESPONSES_TOOL,
    TOOL_THEN_TEXT,
    capture_lines,
)

KEY_ENV = "GYM_ASSETS_TEST_UPSTREAM_KEY"
SECRET = "sk-test-4f1d9c0b7e"
USER = [{"role": "user", "content": "hi"}]


class _RecordAuthorization:
    """ASGI middleware on the 'real' server: which authorization headers arrived."""

    def __init__(self, app, seen: list) -> None:
        self.app, self.seen = app, seen

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            self.seen.append(dict(scope["headers"]).get(b"authorization"))
        await self.app(scope, receive, send)


class _CannedUpstream:
    """A misbehaving model server: a fixed reply, optionally a stream cut short."""

    def __init__(self, reply_factory) -> None:
        self._reply = reply_factory

    async def open(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        return self._reply()


async def _chunks(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


def _truncated_chat() -> UpstreamReply:
    head = b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",'
    return UpstreamReply(
        200,
        stream=_chunks(
            head + b'"choices":[{"index":0,"delta":{"role":"assistant","content":"par"}}]}\n\n',
            head + b'"choices":[{"index":0,"delta":{"content":"tial"}}]}\n\n',
        ),
        media_type="text/event-stream",
    )


@pytest.fixture
def real_and_front(start_gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The 'real' server (scripted, recording auth headers) and a gateway forwarding to it."""
    monkeypatch.setenv(KEY_ENV, SECRET)

    def make(real_upstream, model: str | None = None):
        real = start_gateway(real_upstream, tmp_path / "real", start=False, model_name="real")
        seen: list = []
        real.app.add_middleware(_RecordAuthorization, seen=seen)
        real.start()
        upstream = OpenAIUpstream(real.url_for("upstream"), KEY_ENV, model=model, timeout=10)
        front = start_gateway(upstream, tmp_path / "front")
        return real, front, seen

    return make


def test_forwards_chat_and_responses_json_and_sse(
    real_and_front, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    _, front, seen = real_and_front(ScriptedUpstream(TOOL_THEN_TEXT), model="real-model")
    client = OpenAI(base_url=front.url_for("fwd-1"), api_key="dummy-client-key", max_retries=0)

    first = client.chat.completions.create(model="policy", messages=USER, tools=[BASH_CHAT_TOOL])
    assert first.choices[0].message.tool_calls[0].function.name == "bash"
    assert first.model == "real-model"
    history = [*USER, first.choices[0].message.model_dump(exclude_none=True)]
    history.append({"role": "tool", "tool_call_id": "x", "content": "ok"})
    stream = client.chat.completions.create(
        model="policy", messages=history, tools=[BASH_CHAT_TOOL], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Done."

    responses = OpenAI(base_url=front.url_for("fwd-2"), api_key="dummy", max_retries=0)
    with responses.responses.stream(model="policy", input="go", tools=[EXEC_RESPONSES_TOOL]) as s:
        final = s.get_final_response()
    assert final.output[0].name == "exec_command"
    assert responses.responses.create(model="policy", input="go").output_text == "OK."

    assert seen and set(seen) == {f"Bearer {SECRET}".encode()}
    front_lines = capture_lines(tmp_path / "front", "fwd-1")
    assert [(x["status_code"], x["error_category"]) for x in front_lines] == [(200, None)] * 2
    assert front_lines[0]["request"]["model"] == "policy"  # what the agent sent
    assert front_lines[1]["response"]["choices"][0]["message"]["content"] == "Done."
    assert front_lines[1]["response_raw"].rstrip().endswith("data: [DONE]")
    assert capture_lines(tmp_path / "real", "upstream")[0]["request"]["model"] == "real-model"
    record = read_capture(tmp_path / "front", "fwd-2")["calls"][0]
    # the 'real' server saw all traffic as one rollout: this was its third scripted attempt
    assert record["response_id"] == final.id and record["tokens_in"] == 22

    written = "".join(p.read_text() for d in ("front", "real") for p in (tmp_path / d).iterdir())
    assert SECRET not in written and "dummy-client-key" not in written
    assert caplog.records and SECRET not in caplog.text


def test_upstream_http_errors_pass_through(real_and_front, tmp_path: Path) -> None:
    script = [{"error": 429, "times": 1, "message": "slow down"}, {"text": "hi"}]
    _, front, _ = real_and_front(ScriptedUpstream(script))
    client = OpenAI(base_url=front.url_for("err-1"), api_key="dummy", max_retries=0)
    with pytest.raises(openai.RateLimitError) as raised:
        client.chat.completions.create(model="policy", messages=USER, stream=True)
    assert raised.value.body == {"message": "slow down", "type": "scripted_error", "code": "429"}
    [line] = capture_lines(tmp_path / "front", "err-1")
    assert (line["status_code"], line["error_category"]) == (429, "rate_limit")


def test_non_openai_error_bodies_are_wrapped(real_and_front, tmp_path: Path) -> None:
    busy = _CannedUpstream(lambda: UpstreamReply(503, b"busy", media_type="text/plain"))
    _, front, _ = real_and_front(busy)
    client = OpenAI(base_url=front.url_for("err-2"), api_key="dummy", max_retries=0)
    with pytest.raises(openai.InternalServerError) as raised:
        client.chat.completions.create(model="policy", messages=USER)
    assert set(raised.value.body) == {"message", "type", "code"}
    assert "busy" in raised.value.body["message"]
    [line] = capture_lines(tmp_path / "front", "err-2")
    assert (line["status_code"], line["error_category"]) == (503, "upstream_error")


def test_truncated_upstream_stream_is_stream_truncated(real_and_front, tmp_path: Path) -> None:
    _, front, _ = real_and_front(_CannedUpstream(_truncated_chat))
    client = OpenAI(base_url=front.url_for("cut-1"), api_key="dummy", max_retries=0)
    chunks = list(client.chat.completions.create(model="policy", messages=USER, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "partial"
    for side, rollout in (("front", "cut-1"), ("real", "upstream")):
        [line] = capture_lines(tmp_path / side, rollout)
        assert (line["status_code"], line["error_category"]) == (200, "stream_truncated")
        assert line["response"]["choices"][0]["message"]["content"] == "partial"


def test_unreachable_upstream_is_a_connection_failure(
    start_gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    upstream = OpenAIUpstream(f"http://127.0.0.1:{port}/v1", KEY_ENV, timeout=5)
    front = start_gateway(upstream)
    client = OpenAI(base_url=front.url_for("down"), api_key="dummy", max_retries=0)
    with pytest.raises(openai.InternalServerError) as raised:
        client.chat.completions.create(model="policy", messages=USER)
    assert raised.value.status_code == 502
    [line] = capture_lines(tmp_path / "capture", "down")
    assert (line["status_code"], line["error_category"], line["response"]) == (
        None,
        "connection",
        None,
    )


def test_missing_key_variable_is_a_clear_start_error(
    start_gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(RuntimeError, match=f"environment variable {KEY_ENV} is not set"):
        start_gateway(OpenAIUpstream("http://127.0.0.1:9/v1", KEY_ENV))


def test_key_is_not_in_repr_of_the_upstream(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    upstream = OpenAIUpstream("http://127.0.0.1:9/v1", KEY_ENV)
    assert SECRET not in json.dumps(vars(upstream), default=repr)
