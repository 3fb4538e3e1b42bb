"""The step engine: turns from history, shell tools from schemas, error budgets, aux requests."""

from __future__ import annotations

import json

import pytest

from gym_assets.rollouts.gateway.render import AssistantTurn
from gym_assets.rollouts.gateway.script import (
    ErrorReply,
    ScriptError,
    ScriptRunner,
    compile_script,
    shell_call,
    turn_of,
)


def _tool(name: str, properties: dict, required: list[str]) -> dict:
    schema = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "name": name, "parameters": schema}


def test_turn_counts_assistant_messages_and_runs_of_assistant_items() -> None:
    chat = {"messages": [{"role": "user"}, {"role": "assistant"}, {"role": "tool"}]}
    assert turn_of("chat", chat) == 1
    assert turn_of("responses", {"input": "hi"}) == 0
    items = [
        {"role": "user", "content": "x"},
        {"type": "reasoning", "summary": []},
        {"type": "function_call", "call_id": "a"},
        {"type": "function_call", "call_id": "b"},
        {"type": "function_call_output", "call_id": "a"},
        {"type": "function_call_output", "call_id": "b"},
        {"type": "message", "role": "assistant", "content": []},
        {"role": "user", "content": "more"},
    ]
    assert turn_of("responses", {"input": items}) == 2
    assert turn_of("responses", {"input": [], "previous_response_id": "resp_abc_t3"}) == 4
    with pytest.raises(LookupError, match="unknown previous_response_id"):
        turn_of("responses", {"input": [], "previous_response_id": "resp_from_elsewhere"})


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        (_tool("exec_command", {"cmd": {"type": "string"}}, ["cmd"]), {"cmd": "ls"}),
        (_tool("terminal", {"command": {"type": "string"}}, ["command"]), {"command": "ls"}),
        (
            _tool("shell", {"command": {"type": "array"}, "timeout_ms": {"type": "integer"}}, []),
            {"command": ["sh", "-c", "ls"]},
        ),
        (
            _tool(
                "mcp__bash",
                {
                    "command": {"type": "string"},
                    "description": {"type": "string"},
                    "mode": {"enum": ["fast", "slow"]},
                    "timeout": {"type": "integer", "default": 30},
                },
                ["command", "description", "mode", "timeout"],
            ),
            {"command": "ls", "description": "Run shell command", "mode": "fast", "timeout": 30},
        ),
    ],
)
def test_shell_call_builds_arguments_from_the_schema(tool: dict, expected: dict) -> None:
    others = [_tool("read_file", {"path": {"type": "string"}}, ["path"])]
    name, args = shell_call("responses", {"tools": [*others, tool]}, "ls")
    assert (name, args) == (tool["name"], expected)


def test_shell_call_reads_chat_tool_shapes_and_refuses_without_a_shell() -> None:
    chat_tool = {"type": "function", "function": _tool("bash", {"command": {}}, ["command"])}
    assert shell_call("chat", {"tools": [chat_tool]}, "pwd") == ("bash", {"command": "pwd"})
    with pytest.raises(LookupError, match="offers no shell-like tool"):
        shell_call("responses", {"tools": [_tool("python", {"code": {}}, [])]}, "ls")


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([{"text": 3}], "text must be a string"),
        ([{"error": 500, "text": "b"}], "needs an error, or a text"),
        ([{"times": 2}], "needs an error, or a text"),
        ([{"text": "a", "tool": 1}], "tool must be a string"),
        ([{"error": 200}], "HTTP status 400..599"),
        ([{"error": 500, "times": 0}], "positive integer"),
        ([{"call": "f", "args": [1]}], "args must be an object"),
        (["text"], "expected an object"),
    ],
)
def test_malformed_steps_are_refused(steps: list, message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        compile_script(steps)


def _answer(runner: ScriptRunner, script, body: dict) -> AssistantTurn | ErrorReply:
    return runner.answer(script, "r", "chat", body, "policy")


BASH = {"type": "function", "function": _tool("bash", {"command": {}}, ["command"])}


def test_error_budgets_belong_to_their_turn_and_usage_differs_per_attempt() -> None:
    script = compile_script(
        [
            {"error": 500, "times": 2},
            {"call": "lookup", "args": {"q": 1}},
            {"error": 400, "message": "bad"},
            {"text": "done"},
        ]
    )
    runner = ScriptRunner()
    turn0 = {"messages": [{"role": "user"}], "tools": [BASH]}
    turn1 = {
        "messages": [{"role": "user"}, {"role": "assistant"}, {"role": "tool"}],
        "tools": [BASH],
    }
    answers = [_answer(runner, script, b) for b in (turn0, turn0, turn0, turn0, turn1, turn1)]
    assert [a.status for a in answers[:2]] == [500, 500]
    call = answers[2]
    assert isinstance(call, AssistantTurn) and call.calls[0].name == "lookup"
    assert json.loads(call.calls[0].arguments) == {"q": 1}
    assert isinstance(answers[3], AssistantTurn) and answers[3].calls  # a resend: same turn
    assert answers[4] == ErrorReply(400, "bad")
    assert answers[5].text == "done"
    assert [a.usage.input_tokens for a in (answers[2], answers[3], answers[5])] == [22, 23, 25]
    exhausted = _answer(runner, script, {"messages": [{"role": "assistant"}] * 2, "tools": [BASH]})
    assert isinstance(exhausted, ErrorReply) and exhausted.status == 409


def test_a_script_ending_in_errors_keeps_failing() -> None:
    runner = ScriptRunner()
    script = compile_script([{"error": 503, "times": 1}])
    body = {"messages": []}
    assert [_answer(runner, script, body).status for _ in range(3)] == [503, 503, 503]


def test_text_only_scripts_answer_requests_without_tools() -> None:
    runner = ScriptRunner()
    script = compile_script([{"text": "```bash\nls\n```"}])
    assert _answer(runner, script, {"messages": []}).text == "```bash\nls\n```"


def test_a_shell_step_without_a_shell_tool_is_a_409() -> None:
    runner = ScriptRunner()
    script = compile_script([{"tool": "ls"}])
    other = {"type": "function", "function": {"name": "read_file", "parameters": {}}}
    reply = _answer(runner, script, {"messages": [], "tools": [other]})
    assert isinstance(reply, ErrorReply) and reply.status == 409 and "read_file" in reply.message


CALCULATE = {"type": "function", "function": _tool("calculate", {"expression": {}}, [])}


def test_a_call_with_a_shell_equivalent_uses_the_named_tool_only_when_offered() -> None:
    """A harness offering only its own shell still plays the step, through that shell."""
    script = compile_script([{"call": "calculate", "args": {"expression": "2*3"}, "tool": "x"}])
    offered = _answer(ScriptRunner(), script, {"messages": [], "tools": [BASH, CALCULATE]})
    assert isinstance(offered, AssistantTurn)
    assert [(c.name, c.arguments) for c in offered.calls] == [("calculate", '{"expression":"2*3"}')]
    shell_only = _answer(ScriptRunner(), script, {"messages": [], "tools": [BASH]})
    assert isinstance(shell_only, AssistantTurn)
    assert [(c.name, c.arguments) for c in shell_only.calls] == [("bash", '{"command":"x"}')]


def test_a_text_step_may_also_make_a_call() -> None:
    script = compile_script([{"text": "391", "tool": "echo done"}])
    reply = _answer(ScriptRunner(), script, {"messages": [], "tools": [BASH]})
    assert isinstance(reply, AssistantTurn) and reply.text == "391"
    assert [(c.name, c.arguments) for c in reply.calls] == [("bash", '{"command":"echo done"}')]
    assert reply.finish_reason == "tool_calls"
