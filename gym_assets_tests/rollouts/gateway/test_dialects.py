"""Chat and Responses, JSON and SSE, through the official openai client against scripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from openai import OpenAI

from gym_assets.rollouts.gateway import ModelGateway, ScriptedUpstream, read_capture
from gym_assets_tests.rollouts.gateway.conftest import (
    BASH_CHAT_TOOL,
    EXEC_RESPONSES_TOOL,
    TOOL_THEN_TEXT,
    capture_lines,
)


@pytest.mark.parametrize("stream", [False, True])
def test_chat_tool_call_then_text(start_gateway, tmp_path: Path, stream: bool) -> None:
    gateway = start_gateway(ScriptedUpstream(TOOL_THEN_TEXT))
    client = OpenAI(base_url=gateway.url_for("chat-1"), api_key="dummy", max_retries=0)
    messages: list[dict] = [{"role": "user", "content": "write 391"}]

    def ask() -> tuple[str | None, list, str]:
        if not stream:
            done = client.chat.completions.create(
                model="policy", messages=messages, tools=[BASH_CHAT_TOOL]
            )
            choice = done.choices[0]
            calls = [
                (c.id, c.function.name, c.function.arguments)
                for c in choice.message.tool_calls or []
            ]
            return choice.message.content, calls, choice.finish_reason
        text, calls, finish, usage = "", {}, None, None
        for chunk in client.chat.completions.create(
            model="policy",
            messages=messages,
            tools=[BASH_CHAT_TOOL],
            stream=True,
            stream_options={"include_usage": True},
        ):
            usage = chunk.usage or usage
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finish = choice.finish_reason or finish
                for tc in choice.delta.tool_calls or []:
                    entry = calls.setdefault(tc.index, ["", "", ""])
                    entry[0] = tc.id or entry[0]
                    entry[1] = (tc.function.name or "") or entry[1]
                    entry[2] += tc.function.arguments or ""
        assert usage is not None and usage.prompt_tokens >= 20 and usage.completion_tokens == 8
        return text or None, [tuple(v) for v in calls.values()], finish

    text, calls, finish = ask()
    assert text is None and finish == "tool_calls"
    [(call_id, name, arguments)] = calls
    assert name == "bash"
    assert json.loads(arguments) == {
        "command": "echo 391 > answer.txt",
        "description": "Run shell command",
    }
    messages += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": ""},
    ]
    text, calls, finish = ask()
    assert (text, calls, finish) == ("Done.", [], "stop")

    lines = capture_lines(tmp_path / "capture", "chat-1")
    assert [(x["dialect"], x["status_code"], x["error_category"]) for x in lines] == [
        ("chat", 200, None),
        ("chat", 200, None),
    ]
    first, second = lines
    assert first["request"]["messages"][0]["content"] == "write 391"
    assert first["response"]["choices"][0]["message"]["tool_calls"][0]["id"] == call_id
    assert second["response"]["choices"][0]["message"]["content"] == "Done."
    assert second["response"]["choices"][0]["finish_reason"] == "stop"
    assert first["model_ref"] == {"type": "responses_api_models", "name": "policy_model"}
    assert (first["response_raw"] is not None) == stream
    assert (first["latency_ttft_ms"] is not None) == stream
    assert first["completed_at"] >= first["started_at"] and first["latency_ms"] >= 0
    if stream:
        assert second["response"]["usage"]["prompt_tokens"] == 21


@pytest.mark.parametrize("stream", [False, True])
def test_responses_tool_call_then_text(start_gateway, tmp_path: Path, stream: bool) -> None:
    gateway = start_gateway(ScriptedUpstream(TOOL_THEN_TEXT))
    client = OpenAI(base_url=gateway.url_for("resp-1"), api_key="dummy", max_retries=0)
    history: list = [{"role": "user", "content": "write 391"}]

    def ask():
        kwargs = {"model": "policy", "input": history, "tools": [EXEC_RESPONSES_TOOL]}
        if not stream:
            return client.responses.create(**kwargs)
        with client.responses.stream(**kwargs) as events:
            kinds = [event.type for event in events]
            final = events.get_final_response()
        assert kinds[:3] == [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
        ]
        assert kinds[-2:] == ["response.output_item.done", "response.completed"]
        return final

    first = ask()
    [call] = first.output
    assert call.type == "function_call" and call.name == "exec_command"
    assert json.loads(call.arguments) == {"cmd": "echo 391 > answer.txt"}
    assert first.usage.input_tokens == 20 and first.usage.total_tokens == 28
    history += [
        call.model_dump(exclude_none=True),
        {"type": "function_call_output", "call_id": call.call_id, "output": "ok"},
    ]
    second = ask()
    assert second.output_text == "Done."
    assert second.status == "completed"

    lines = capture_lines(tmp_path / "capture", "resp-1")
    assert [(x["dialect"], x["status_code"], x["error_category"]) for x in lines] == [
        ("responses", 200, None),
        ("responses", 200, None),
    ]
    assert lines[0]["response"]["id"] == first.id
    assert lines[0]["response"]["output"][0]["call_id"] == call.call_id
    assert lines[1]["response"]["output"][0]["content"][0]["text"] == "Done."
    records = read_capture(tmp_path / "capture", "resp-1")["calls"]
    assert [r["finish_reason"] for r in records] == [None, None]
    assert [r["response_id"] for r in records] == [first.id, second.id]


def test_previous_response_id_continues_the_script(start_gateway) -> None:
    gateway = start_gateway(ScriptedUpstream(TOOL_THEN_TEXT))
    client = OpenAI(base_url=gateway.url_for("prev"), api_key="dummy", max_retries=0)
    first = client.responses.create(model="policy", input="go", tools=[EXEC_RESPONSES_TOOL])
    output = [{"type": "function_call_output", "call_id": first.output[0].call_id, "output": "ok"}]
    second = client.responses.create(
        model="policy", input=output, previous_response_id=first.id, tools=[EXEC_RESPONSES_TOOL]
    )
    assert second.output_text == "Done."


def test_models_lists_the_gateway_model(start_gateway) -> None:
    gateway = start_gateway(ScriptedUpstream(TOOL_THEN_TEXT), model_name="policy-7b")
    for base in (gateway.url_for("any"), gateway.origin + "/v1"):
        models = OpenAI(base_url=base, api_key="dummy").models.list()
        assert [m.id for m in models.data] == ["policy-7b"]


def test_binds_loopback_only(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="loopback only"):
        ModelGateway(ScriptedUpstream(TOOL_THEN_TEXT), tmp_path, host="0.0.0.0")
