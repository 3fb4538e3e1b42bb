"""Responses ⇄ Chat Completions: requests restated item by item, answers read back into the
turn they were rendered from, what has no counterpart refused or dropped."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gym_assets.rollouts.gateway.render import (
    AssistantTurn,
    FunctionCall,
    Usage,
    chat_completion,
    response_object,
)
from gym_assets.rollouts.gateway.translate_answer import NotAnAnswer, turn_of
from gym_assets.rollouts.gateway.translate_request import (
    Untranslatable,
    chat_request,
    responses_request,
)

PARAMS = {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}
RESPONSES = {
    "model": "policy",
    "instructions": "Be brief.",
    "input": [
        {"role": "developer", "content": "Use the tool."},
        {"role": "user", "content": [{"type": "input_text", "text": "2+2?"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "add"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok"}],
        },
        {"type": "function_call", "call_id": "call_a", "name": "exec", "arguments": '{"cmd":"a"}'},
        {"type": "function_call", "call_id": "call_b", "name": "exec", "arguments": '{"cmd":"b"}'},
        {"type": "function_call_output", "call_id": "call_a", "output": "1"},
        {"type": "function_call_output", "call_id": "call_b", "output": "2"},
        {"role": "user", "content": "and now?"},
    ],
    "tools": [
        {"type": "function", "name": "exec", "parameters": PARAMS, "strict": False},
        {"type": "web_search"},
    ],
    "tool_choice": {"type": "function", "name": "exec"},
    "max_output_tokens": 64,
    "temperature": 0.5,
    "text": {"format": {"type": "json_schema", "name": "a", "schema": PARAMS, "strict": True}},
    "reasoning": {"effort": "low"},
    "stream": True,
}


def _call(call_id: str, cmd: str) -> dict:
    arguments = '{"cmd":"' + cmd + '"}'
    return {"id": call_id, "type": "function", "function": {"name": "exec", "arguments": arguments}}


CHAT = {
    "model": "policy",
    "temperature": 0.5,
    "stream": True,
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "Use the tool."},
        {"role": "user", "content": "2+2?"},
        {
            "role": "assistant",
            "content": "ok",
            "reasoning_content": "add",
            "tool_calls": [_call("call_a", "a"), _call("call_b", "b")],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "1"},
        {"role": "tool", "tool_call_id": "call_b", "content": "2"},
        {"role": "user", "content": "and now?"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {"name": "exec", "parameters": PARAMS, "strict": False},
        }
    ],
    "tool_choice": {"type": "function", "function": {"name": "exec"}},
    "max_tokens": 64,
    "response_format": {
        "type": "json_schema",
        "json_schema": {"name": "a", "schema": PARAMS, "strict": True},
    },
    "reasoning_effort": "low",
    "stream_options": {"include_usage": True},
}


def test_a_responses_request_becomes_one_chat_conversation_with_its_call_ids() -> None:
    assert chat_request(RESPONSES) == CHAT


def test_a_chat_request_comes_back_to_the_same_chat_request() -> None:
    back = chat_request(responses_request(CHAT))  # less the reasoning: see the module
    expected = {**CHAT, "messages": [*CHAT["messages"]]}
    expected["messages"][3] = {
        k: v for k, v in CHAT["messages"][3].items() if k != "reasoning_content"
    }
    assert back == expected


def test_chat_items_become_responses_items() -> None:
    request = responses_request(CHAT)
    kinds = [(i["type"], i.get("role"), i.get("call_id")) for i in request["input"]]
    assert kinds == [
        ("message", "system", None),
        ("message", "system", None),
        ("message", "user", None),
        ("message", "assistant", None),
        ("function_call", None, "call_a"),
        ("function_call", None, "call_b"),
        ("function_call_output", None, "call_a"),
        ("function_call_output", None, "call_b"),
        ("message", "user", None),
    ]
    assert request["tools"] == [
        {
            "type": "function",
            "name": "exec",
            "description": None,
            "parameters": PARAMS,
            "strict": False,
        }
    ]
    assert (request["max_output_tokens"], request["reasoning"]) == (64, {"effort": "low"})
    assert request["text"]["format"]["type"] == "json_schema"
    assert "stream_options" not in request


def test_a_plain_string_input_is_one_user_message() -> None:
    assert chat_request({"model": "m", "input": "hi"}) == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
    }


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"input": "hi", "previous_response_id": "resp_1"}, "previous_response_id"),
        ({"input": [{"type": "item_reference", "id": "x"}]}, "'item_reference' item"),
        ({"input": [{"type": "custom_tool_call", "call_id": "c"}]}, "'custom_tool_call'"),
        ({"input": [{"role": "user", "content": [{"type": "input_file"}]}]}, "'input_file' part"),
    ],
)
def test_what_chat_cannot_say_is_refused_by_name(body: dict, says: str) -> None:
    with pytest.raises(Untranslatable, match=says):
        chat_request(body)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"messages": [{"role": "user", "content": "x"}], "n": 2}, "n > 1"),
        ({"messages": [{"role": "function", "content": "x"}]}, "'function' message"),
        ({"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]}, "'input_audio'"),
    ],
)
def test_what_responses_cannot_say_is_refused_by_name(body: dict, says: str) -> None:
    with pytest.raises(Untranslatable, match=says):
        responses_request(body)


TURNS = [
    AssistantTurn("resp_1", "m", Usage(20, 8, 3, 2), text="four", reasoning="add", created=5),
    AssistantTurn(
        "resp_2",
        "m",
        Usage(21, 8, None, None),
        calls=(FunctionCall("call_a", "exec", '{"cmd":"a"}'), FunctionCall("call_b", "x", "{}")),
        created=5,
    ),
    AssistantTurn("resp_3", "m", None, text="cut sh", incomplete="max_output_tokens", created=5),
    AssistantTurn("resp_4", "m", None, text="", incomplete="content_filter", created=5),
]


@pytest.mark.parametrize("turn", TURNS)
def test_a_chat_answer_reads_back_into_its_turn(turn: AssistantTurn) -> None:
    assert turn_of("chat", chat_completion(turn)) == replace(turn, reasoning_item=True)


@pytest.mark.parametrize("turn", TURNS)
def test_a_responses_answer_reads_back_into_its_turn(turn: AssistantTurn) -> None:
    said = replace(turn, reasoning_item=True)
    assert turn_of("responses", response_object(said)) == turn


def test_translated_usage_leaves_unreported_counts_out() -> None:
    body = response_object(replace(TURNS[1], reasoning_item=True))
    assert body["usage"] == {"input_tokens": 21, "output_tokens": 8, "total_tokens": 29}
    assert response_object(TURNS[2])["usage"] is None
    assert response_object(TURNS[2])["status"] == "incomplete"
    assert response_object(TURNS[2])["incomplete_details"] == {"reason": "max_output_tokens"}
    assert chat_completion(TURNS[2])["choices"][0]["finish_reason"] == "length"
    assert "usage" not in chat_completion(TURNS[2])


@pytest.mark.parametrize("dialect", ["chat", "responses"])
def test_a_body_that_is_no_answer_is_named(dialect: str) -> None:
    with pytest.raises(NotAnAnswer, match=f"not a {dialect} answer"):
        turn_of(dialect, {"id": "x", "object": "list"})  # type: ignore[arg-type]


def test_a_chat_answer_that_never_said_why_it_stopped_stopped() -> None:
    body = chat_completion(TURNS[0])
    body["choices"][0]["finish_reason"] = None  # a stream without a finish reason, reassembled
    assert turn_of("chat", body).finish_reason == "stop"
