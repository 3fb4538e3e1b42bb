"""Agents in one dialect against a model server that speaks only the other, through the gateway:
whole and streamed answers, tool calls with their ids, errors, usage, and both sides captured."""

from __future__ import annotations

import asyncio
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
from gym_assets.rollouts.gateway.script import Dialect
from gym_assets.rollouts.gateway.translation import TranslatingUpstream
from gym_assets.rollouts.gateway.upstreams import error_reply
from gym_assets_tests.rollouts.gateway.conftest import (
    BASH_CHAT_TOOL,
    EXEC_RESPONSES_TOOL,
    TOOL_THEN_TEXT,
    capture_lines,
)

KEY_ENV = "GYM_ASSETS_TEST_UPSTREAM_KEY"


class OnlySpeaks:
    """A model server with one API: the other's route answers 404, as llama.cpp's does."""

    def __init__(self, dialect: Dialect, script: list) -> None:
        self.dialect = dialect
        self.inner = ScriptedUpstream(script)

    async def open(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        if request.dialect != self.dialect:
            return error_reply(404, "Not Found", "not_found_error")
        return await self.inner.answer(request)


@pytest.fixture
def through(start_gateway, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A gateway in front of a one-API server (a second gateway, which captures what it got)."""
    monkeypatch.setenv(KEY_ENV, "sk-test")

    def make(dialect: Dialect, script: list = TOOL_THEN_TEXT, api: str = "auto"):
        real = start_gateway(OnlySpeaks(dialect, script), tmp_path / "real")
        server = OpenAIUpstream(real.url_for("upstream"), KEY_ENV, timeout=10)
        front = start_gateway(TranslatingUpstream(server, api), tmp_path / "front")  # type: ignore[arg-type]
        return front

    return make


def _upstream_calls(tmp_path: Path) -> list[dict]:
    """What the server got, less the probe's empty request."""
    return [x for x in capture_lines(tmp_path / "real", "upstream") if x["request"] != {}]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_responses_agent_runs_a_tool_loop_on_a_chat_only_server(
    through, tmp_path: Path, stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    front = through("chat")
    assert "speaks Chat Completions only" in caplog.text
    client = OpenAI(base_url=front.url_for("r-1"), api_key="dummy", max_retries=0)
    request = {"model": "policy", "instructions": "Be brief.", "tools": [EXEC_RESPONSES_TOOL]}
    history: list = [{"role": "user", "content": "go"}]
    for _ in range(2):
        if stream:
            with client.responses.stream(input=history, **request) as events:
                kinds = [event.type for event in events]
                answer = events.get_final_response()
            assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
        else:
            answer = client.responses.create(input=history, **request)
        history += [item.model_dump(exclude_none=True) for item in answer.output]
        calls = [item for item in answer.output if item.type == "function_call"]
        history += [
            {"type": "function_call_output", "call_id": c.call_id, "output": "0"} for c in calls
        ]
    [call] = [item for item in history if item.get("type") == "function_call"]
    assert call["name"] == "exec_command"
    assert answer.output_text == "Done." and answer.usage is not None

    sent = _upstream_calls(tmp_path)
    assert [x["dialect"] for x in sent] == ["chat", "chat"]
    second = sent[1]["request"]["messages"]
    assert second[0] == {"role": "system", "content": "Be brief."}
    assert second[2]["tool_calls"][0]["id"] == call["call_id"]  # the server's own call id
    assert second[3] == {"role": "tool", "tool_call_id": call["call_id"], "content": "0"}

    lines = capture_lines(tmp_path / "front", "r-1")
    assert [(x["dialect"], x["status_code"], x["error_category"]) for x in lines] == [
        ("responses", 200, None)
    ] * 2
    for line, upstream in zip(lines, sent, strict=True):
        assert line["request"]["input"][0] == {"role": "user", "content": "go"}
        assert line["upstream"]["dialect"] == "chat"
        assert line["upstream"]["request"] == upstream["request"]
        assert line["upstream"]["status_code"] == 200
        if stream:
            assert line["upstream"]["response_raw"].rstrip().endswith("data: [DONE]")
            assert line["response_raw"].count("event: response.completed") == 1
    [first, last] = read_capture(tmp_path / "front", "r-1")["calls"]
    assert first["tool_calls"][0]["call_id"] == call["call_id"]
    assert last["upstream"]["response"]["choices"][0]["message"]["content"] == "Done."
    assert (last["tokens_in"], last["tokens_out"]) == (21, 8)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_chat_agent_runs_a_tool_loop_on_a_responses_only_server(
    through, tmp_path: Path, stream: bool
) -> None:
    front = through("responses")
    client = OpenAI(base_url=front.url_for("c-1"), api_key="dummy", max_retries=0)
    messages: list = [{"role": "user", "content": "go"}]
    for _ in range(2):
        if stream:
            chunks = list(
                client.chat.completions.create(
                    model="policy", messages=messages, tools=[BASH_CHAT_TOOL], stream=True
                )
            )
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            calls = [t for c in chunks if c.choices for t in c.choices[0].delta.tool_calls or ()]
            message: dict = {"role": "assistant", "content": text or None}
            if calls:
                fn = calls[0].function
                message["tool_calls"] = [
                    {
                        "id": calls[0].id,
                        "type": "function",
                        "function": {
                            "name": fn.name,
                            "arguments": "".join(c.function.arguments or "" for c in calls),
                        },
                    }
                ]
        else:
            answer = client.chat.completions.create(
                model="policy", messages=messages, tools=[BASH_CHAT_TOOL]
            )
            message = answer.choices[0].message.model_dump(exclude_none=True)
        messages.append(message)
        for tool_call in message.get("tool_calls") or ():
            messages.append({"role": "tool", "tool_call_id": tool_call["id"], "content": "0"})
    assert messages[-1]["content"] == "Done."
    call_id = messages[1]["tool_calls"][0]["id"]
    sent = _upstream_calls(tmp_path)
    assert [x["dialect"] for x in sent] == ["responses", "responses"]
    items = sent[1]["request"]["input"]
    assert [i["type"] for i in items] == ["message", "function_call", "function_call_output"]
    assert items[1]["call_id"] == items[2]["call_id"] == call_id
    lines = capture_lines(tmp_path / "front", "c-1")
    assert [(x["dialect"], x["error_category"], x["upstream"]["dialect"]) for x in lines] == [
        ("chat", None, "responses")
    ] * 2


def test_the_setting_skips_the_question(through, tmp_path: Path) -> None:
    front = through("chat", api="chat")
    client = OpenAI(base_url=front.url_for("r-2"), api_key="dummy", max_retries=0)
    assert client.responses.create(model="policy", input="hi").output_text == "OK."
    assert len(capture_lines(tmp_path / "real", "upstream")) == 1  # no probe went out


def test_an_error_keeps_its_status_and_body_and_both_sides_are_captured(
    through, tmp_path: Path
) -> None:
    front = through("chat", [{"error": 429, "times": 1, "message": "slow down"}, {"text": "hi"}])
    client = OpenAI(base_url=front.url_for("r-3"), api_key="dummy", max_retries=0)
    with pytest.raises(openai.RateLimitError) as raised:
        client.responses.create(model="policy", input="hi", stream=True)
    assert raised.value.body == {"message": "slow down", "type": "scripted_error", "code": "429"}
    [line] = capture_lines(tmp_path / "front", "r-3")
    assert (line["status_code"], line["error_category"]) == (429, "rate_limit")
    assert line["upstream"]["status_code"] == 429
    assert line["upstream"]["request"]["messages"] == [{"role": "user", "content": "hi"}]
    assert line["upstream"]["response"]["error"]["message"] == "slow down"


def test_an_untranslatable_request_is_refused_with_a_400(through, tmp_path: Path) -> None:
    front = through("chat")
    client = OpenAI(base_url=front.url_for("r-4"), api_key="dummy", max_retries=0)
    with pytest.raises(openai.BadRequestError, match="previous_response_id"):
        client.responses.create(model="policy", input="hi", previous_response_id="resp_1")
    [line] = capture_lines(tmp_path / "front", "r-4")
    assert (line["status_code"], line["upstream"]) == (400, None)
    assert _upstream_calls(tmp_path) == []


class _Answers:
    """A model server that answers every POST with one status."""

    base_url = "http://server/v1"

    def __init__(self, status: int | None) -> None:
        self.status = status

    async def open(self) -> None:
        return None

    async def status_of(self, route: str) -> int:
        if self.status is None:
            raise ConnectionRefusedError("nobody listens")
        return self.status


@pytest.mark.parametrize(
    ("status", "found"),
    [(404, "chat"), (405, "chat"), (400, "responses"), (401, "responses"), (None, "responses")],
)
def test_auto_asks_once_and_says_what_it_found(
    status: int | None, found: str, caplog: pytest.LogCaptureFixture
) -> None:
    upstream = TranslatingUpstream(_Answers(status))  # type: ignore[arg-type]
    asyncio.run(upstream.open())
    assert upstream.api == found
    assert "upstream API auto: POST http://server/v1/responses" in caplog.text
