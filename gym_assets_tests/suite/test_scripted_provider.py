"""The scripted conformance provider behind a real gateway: its exact protocol.

The test plays the harness over HTTP: it posts requests, runs the shell command it is given
(the probe's own command, in the test's temporary workspace), and sends the output back.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest

from gym_assets.conformance.witness import load_witness
from gym_assets.conformance.witness_log import WitnessLog
from gym_assets.rollouts.gateway.sse import StreamAssembler
from gym_assets.suite.scenarios import FINAL_ANSWER, get_scenario
from gym_assets.suite.scripted_provider import ProbeUpstream
from gym_assets_tests.rollouts.gateway.conftest import BASH_CHAT_TOOL, capture_lines

ROLLOUT = "0-0"
NAMESPACE_TOOL = {
    "type": "namespace",
    "name": "functions",
    "tools": [
        {
            "type": "function",
            "name": "bash",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "array", "items": {"type": "string"}}},
                "required": ["command"],
            },
        }
    ],
}


class Harness:
    """A minimal Chat harness: history, tools, and the probe's commands run for real."""

    def __init__(self, gateway: Any, tmp_path: Path, scenario: str) -> None:
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.witness_path = tmp_path / "witness.json"
        witness = WitnessLog(self.witness_path)
        witness.create()
        upstream = ProbeUpstream(get_scenario(scenario), witness, self.workspace)
        self.gateway = gateway(upstream, tmp_path / "capture")
        self.http = httpx2.Client(base_url=self.gateway.url_for(ROLLOUT))
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]

    def post(self, **extra: Any) -> httpx2.Response:
        body = {"model": "m", "messages": self.messages, "tools": [BASH_CHAT_TOOL], **extra}
        return self.http.post("/chat/completions", json=body)

    def run_tool_turn(self, reply: dict[str, Any]) -> None:
        message = reply["choices"][0]["message"]
        self.messages.append(message)
        for call in message["tool_calls"]:
            command = json.loads(call["function"]["arguments"])["command"]
            done = subprocess.run(
                ["sh", "-c", command], cwd=self.workspace, capture_output=True, text=True
            )
            self.messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": done.stdout}
            )

    def witness(self) -> Any:
        return load_witness(self.witness_path)


@pytest.mark.parametrize(
    "scenario", ["tool_success", "tool_failure", "usage_omitted", "retry_429", "retry_500"]
)
def test_a_tool_scenario_over_chat(start_gateway, tmp_path: Path, scenario: str) -> None:
    harness = Harness(start_gateway, tmp_path, scenario)
    errors = get_scenario(scenario).http_errors
    for status in errors:
        reply = harness.post()
        assert reply.status_code == status
        assert reply.headers["retry-after"] == "0"
        assert reply.json() == {
            "error": {
                "message": "controlled model failure",
                "type": "conformance_error",
                "code": str(status),
            }
        }
    for _ in range(2):
        reply = harness.post()
        assert reply.status_code == 200
        assert reply.json()["choices"][0]["finish_reason"] == "tool_calls"
        harness.run_tool_turn(reply.json())
    final = harness.post()
    assert final.status_code == 200
    assert final.json()["choices"][0]["message"]["content"] == FINAL_ANSWER
    assert final.json()["choices"][0]["message"]["reasoning_content"]

    witness = harness.witness()
    assert witness.finished and not witness.violations
    exit_codes = [t.exit_code for t in witness.tool_calls]
    assert exit_codes == [get_scenario(scenario).tool_exit_code, 0]
    for tool in witness.tool_calls:
        assert tool.executed and tool.result_seen
        assert tool.outputs == (tool.token + "\n",)
        assert (harness.workspace / Path(tool.marker).name).read_text() == tool.token
    captures = capture_lines(harness.gateway.capture_dir, ROLLOUT)
    assert len(captures) == len(errors) + 3 == len(witness.attempts)
    assert len({c["model_call_id"] for c in captures}) == len(captures)
    assert [c["status_code"] for c in captures] == [*errors, 200, 200, 200]
    usage = captures[-1]["response"].get("usage")
    if scenario == "usage_omitted":
        assert usage is None
    else:
        assert usage["prompt_tokens"] == 20 + len(errors) + 2
        assert usage["completion_tokens_details"]["reasoning_tokens"] == 2
        assert usage["prompt_tokens_details"]["cached_tokens"] == 3


def test_witness_is_rewritten_after_every_exchange(start_gateway, tmp_path: Path) -> None:
    harness = Harness(start_gateway, tmp_path, "retry_500")
    harness.post()
    assert [a.status_code for a in harness.witness().attempts] == [500]
    harness.post()
    witness = harness.witness()
    assert [a.status_code for a in witness.attempts] == [500, 200]
    assert len(witness.tool_calls) == 1 and not witness.tool_calls[0].executed


def test_a_request_before_the_tool_ran_is_a_protocol_violation(start_gateway, tmp_path) -> None:
    harness = Harness(start_gateway, tmp_path, "tool_success")
    assert harness.post().status_code == 200
    refused = harness.post()
    assert refused.status_code == 409
    assert refused.json()["error"]["type"] == "probe_protocol_error"
    witness = harness.witness()
    assert len(witness.violations) == 1 and not witness.finished


def test_a_request_after_the_final_answer_is_a_protocol_violation(start_gateway, tmp_path) -> None:
    harness = Harness(start_gateway, tmp_path, "tool_success")
    for _ in range(2):
        harness.run_tool_turn(harness.post().json())
    assert harness.post().status_code == 200
    assert harness.post().status_code == 409
    assert harness.witness().finished


def test_model_error_answers_every_attempt_with_400(start_gateway, tmp_path: Path) -> None:
    harness = Harness(start_gateway, tmp_path, "model_error")
    replies = [harness.post() for _ in range(3)]
    assert [r.status_code for r in replies] == [400, 400, 400]
    assert all("id" not in r.json() for r in replies)
    witness = harness.witness()
    assert len(witness.attempts) == 3 and not witness.finished


def test_a_request_without_tools_is_auxiliary_and_spends_no_error(start_gateway, tmp_path) -> None:
    harness = Harness(start_gateway, tmp_path, "retry_500")
    title = harness.http.post(
        "/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "t"}]}
    )
    assert title.status_code == 200 and title.json()["choices"][0]["message"]["content"]
    assert harness.post().status_code == 500


def test_no_shell_tool_is_a_protocol_violation(start_gateway, tmp_path: Path) -> None:
    harness = Harness(start_gateway, tmp_path, "tool_success")
    other = {"type": "function", "function": {"name": "search", "parameters": {}}}
    reply = harness.http.post(
        "/chat/completions", json={"model": "m", "messages": harness.messages, "tools": [other]}
    )
    assert reply.status_code == 409
    assert "no usable shell tool" in harness.witness().violations[0]


def _events(text: str) -> list[dict[str, Any]]:
    return [
        json.loads(line.removeprefix("data: "))
        for line in text.splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


def test_streaming_chat_and_responses_with_a_namespace_tool(start_gateway, tmp_path) -> None:
    harness = Harness(start_gateway, tmp_path, "usage_omitted")
    chat = harness.post(stream=True)
    assert chat.status_code == 200 and chat.headers["content-type"].startswith("text/event-stream")
    assert chat.text.rstrip().endswith("data: [DONE]")
    assert any(
        c["choices"] and c["choices"][0]["delta"].get("tool_calls") for c in _events(chat.text)
    )

    other = tmp_path / "responses"
    other.mkdir()
    responses = Harness(start_gateway, other, "usage_omitted")
    body = {"model": "m", "input": "go", "tools": [NAMESPACE_TOOL], "stream": True}
    reply = responses.http.post("/responses", json=body)
    events = _events(reply.text)
    assert events[-1]["type"] == "response.completed"
    call = events[-1]["response"]["output"][0]
    assert (call["namespace"], call["name"]) == ("functions", "bash")
    assert json.loads(call["arguments"])["command"][:2] == ["sh", "-c"]
    witness = responses.witness()
    assert witness.tool_calls[0].name == "functions__bash"
    assembled = StreamAssembler("responses")
    for chunk in reply.iter_bytes():
        assembled.feed(chunk)
    assert witness.attempts[0].response == assembled.result()
    capture = capture_lines(responses.gateway.capture_dir, ROLLOUT)[0]
    assert capture["response"] == witness.attempts[0].response
    assert capture["response"]["usage"] is None
