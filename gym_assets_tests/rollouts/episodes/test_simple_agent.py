"""The simple agent and the legacy fronts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gym_assets.config.loader import LoadedConfig
from gym_assets.records.episode import EpisodeId, TaskId
from gym_assets.rollouts.episodes.agents import ToolGrant
from gym_assets.rollouts.episodes.legacy import episode_request_of
from gym_assets.rollouts.episodes.registry import build_environment, build_resources
from gym_assets.rollouts.episodes.sessions import SessionConflict
from gym_assets.rollouts.gateway import (
    ModelGateway,
    ReferenceUpstream,
    ScriptedUpstream,
    read_capture,
)
from gym_assets.servers.resources_servers.arith.app import CALCULATE_TOOL, ArithResources
from gym_assets.servers.responses_api_agents.simple_agent.app import SimpleAgent, ToolAccessError
from gym_assets.servers.responses_api_agents.simple_agent.app import create as create_agent
from gym_assets.tasks.materialize import MaterializeError
from gym_assets_tests.rollouts.episodes.conftest import first_row, run
from gym_assets_tests.rollouts.episodes.upstreams import CannedUpstream

EPISODE = EpisodeId(rollout_id="r1")
TASK = TaskId(taskset="t", task_id="1")
CALL = {"type": "function_call", "call_id": "c1", "name": "calculate"}
MESSAGE = {
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "2"}],
}
REASONING = {"type": "reasoning", "id": "rs_1", "summary": []}


def agent_with_arith(gateway: ModelGateway, **settings: Any) -> tuple[SimpleAgent, ArithResources]:
    resources = ArithResources("arith_resources")
    return create_agent("agent", settings, gateway=gateway, resources=resources), resources


async def seeded(agent: SimpleAgent, resources: ArithResources, grant: bool = True) -> None:
    await resources.seed_session("rs", EPISODE.capture_key, {"expected_answer": "2"})
    tool_grant = ToolGrant(resources, "rs") if grant else None
    await agent.seed_session("as", EPISODE, TASK, grant=tool_grant)


def activate(
    agent: SimpleAgent, resources: ArithResources, *, grant: bool = True, **params: Any
) -> dict:
    async def scenario() -> dict:
        await seeded(agent, resources, grant)
        return await agent.activate("as", {"input": "compute 1+1", **params})

    return run(scenario())


def test_case_51_tool_exception_becomes_the_output_and_the_loop_goes_on(
    start_gateway, monkeypatch
) -> None:
    script = [{"call": "calculate", "args": {"expression": "1+1"}}, {"text": "2"}]
    agent, resources = agent_with_arith(start_gateway(ScriptedUpstream(script)))

    async def broken(*args: Any) -> str:
        raise OSError("tool backend down")

    monkeypatch.setattr(resources, "call_tool", broken)
    response = activate(agent, resources)
    assert response["status"] == "completed"
    assert json.loads(response["output"][1]["output"]) == {"error": "OSError: tool backend down"}
    receipt = run(agent.close_session("as", EPISODE))
    (tool,) = [r for r in receipt["agent_observations"]["records"] if r["kind"] == "tool_call"]
    assert tool["status"] == "failed" and tool["error_type"] == "OSError"


def test_case_52_invalid_arguments_reach_the_model_not_the_resources(start_gateway) -> None:
    upstream = CannedUpstream([[{**CALL, "arguments": "{not json"}], [MESSAGE]])
    agent, resources = agent_with_arith(start_gateway(upstream))
    calls: list[Any] = []

    async def recording(*args: Any) -> str:
        calls.append(args)
        return "unused"

    resources.call_tool = recording  # type: ignore[method-assign]
    response = activate(agent, resources)
    output = json.loads(response["output"][1]["output"])
    assert output["error"].startswith("Invalid tool call arguments: ") and calls == []
    # The model saw the error as the call's output on the next turn.
    assert upstream.requests[1]["input"][-1]["output"] == response["output"][1]["output"]


@pytest.mark.parametrize(
    ("output", "reason"), [([REASONING], "incomplete_reasoning"), ([], "empty_output")]
)
def test_case_53_no_message_means_incomplete(start_gateway, output, reason) -> None:
    agent, resources = agent_with_arith(start_gateway(CannedUpstream([output])))
    response = activate(agent, resources)
    assert response["status"] == "incomplete"
    assert response["metadata"]["ng_termination_reason"] == reason


def test_case_54_max_steps_stops_after_executing_the_tool(start_gateway) -> None:
    script = [{"call": "calculate", "args": {"expression": "1+1"}}, {"text": "2"}]
    agent, resources = agent_with_arith(start_gateway(ScriptedUpstream(script)), max_steps=1)
    response = activate(agent, resources)
    assert response["status"] == "incomplete"
    assert response["metadata"]["ng_termination_reason"] == "max_steps"
    assert [item["type"] for item in response["output"]] == [
        "function_call",
        "function_call_output",
    ]
    assert response["output"][1]["output"] == "2"


def test_case_55_tool_call_without_a_grant_is_an_activation_error(start_gateway) -> None:
    script = [{"call": "calculate", "args": {"expression": "1+1"}}, {"text": "2"}]
    agent, resources = agent_with_arith(start_gateway(ScriptedUpstream(script)))
    with pytest.raises(ToolAccessError):  # the task declares the tool; nothing may run it
        activate(agent, resources, grant=False, tools=[CALCULATE_TOOL])


def test_tools_are_the_tasks_own_plus_the_granted_ones(start_gateway) -> None:
    upstream = CannedUpstream([[MESSAGE]])
    agent, resources = agent_with_arith(start_gateway(upstream))
    own = {"type": "function", "name": "own_tool", "parameters": {"type": "object"}}

    async def scenario() -> None:
        await seeded(agent, resources)
        await agent.activate("as", {"input": "x", "tools": [own], "temperature": 0.5})

    run(scenario())
    sent = upstream.requests[0]
    assert [tool["name"] for tool in sent["tools"]] == ["own_tool", "calculate"]
    assert sent["temperature"] == 0.5 and sent["model"] == "policy"


def test_model_errors_raise_from_the_activation(start_gateway) -> None:
    import openai

    agent, resources = agent_with_arith(start_gateway(ScriptedUpstream([{"error": 400}])))
    with pytest.raises(openai.BadRequestError):
        activate(agent, resources)


def test_agent_session_state_machine(start_gateway) -> None:
    gateway = start_gateway(ScriptedUpstream([{"text": "2"}]))
    agent, resources = agent_with_arith(gateway)

    async def scenario() -> tuple[dict, dict]:
        await seeded(agent, resources)
        grant = ToolGrant(resources, "rs")
        assert await agent.seed_session("as", EPISODE, TASK, grant=grant) == {
            "agent_session_id": "as"
        }
        with pytest.raises(SessionConflict):
            await agent.seed_session("as", EpisodeId(rollout_id="other"), TASK, grant=grant)
        with pytest.raises(SessionConflict):
            await agent.seed_session("as", EPISODE, TASK, grant=ToolGrant(resources, "rs2"))
        await agent.activate("as", {"input": "a"})
        await agent.activate("as", {"input": "b"})
        with pytest.raises(SessionConflict):
            await agent.close_session("as", EpisodeId(rollout_id="other"))
        first = await agent.close_session("as", EPISODE)
        second = await agent.close_session("as", EPISODE)
        with pytest.raises(SessionConflict):
            await agent.activate("as", {"input": "c"})
        with pytest.raises(SessionConflict):
            await agent.seed_session("as", EPISODE, TASK, grant=grant)
        return first, second

    first, second = run(scenario())
    assert first == second
    invocations = [
        r for r in first["agent_observations"]["records"] if r["kind"] == "agent_invocation"
    ]
    assert [i["invocation_id"] for i in invocations] == ["root", "activation-1"]
    assert all(i["status"] == "completed" for i in invocations)
    sessions = [c["client_session_id"] for c in read_capture(gateway.capture_dir, "r1")["calls"]]
    assert sessions == ["root", "activation-1"]


def test_legacy_run_and_the_legacy_agent_relay(start_gateway, bundled_config: LoadedConfig) -> None:
    gateway = start_gateway(ReferenceUpstream())
    row = first_row("arith", "arith.jsonl")
    script = build_resources(bundled_config, "arith_resources").reference_script(row)
    config = {
        **bundled_config.data,
        "arith_relay": {
            "environment_servers": {
                "legacy_agent": {
                    "agent_server": {"type": "responses_api_agents", "name": "arith_simple_agent"}
                }
            }
        },
    }
    relay = build_environment(config, "arith_relay", gateway)
    gateway.set_reference_script("explicit", script)
    result = run(relay.run({**row, "_ng_rollout_id": "explicit"}))
    assert result["reward"] == 1.0 and result["_ng_rollout_id"] == "explicit"
    assert result["ng_agent_observations"]["source"] == "simple_agent"
    gateway.set_reference_script("task-1", script)
    request = episode_request_of({**row, "_ng_rollout_id": "task-1"}, "arith")
    relayed = run(relay.run(request))  # a task reaches the agent as the flat row it stands for
    assert relayed["reward"] == 1.0 and relayed["_ng_rollout_id"] == "task-1"
    assert relayed["agent_ref"] == {"name": "arith_simple_agent"}
    assert relayed["expected_answer"] == row["expected_answer"]


def test_legacy_environment_refuses_misrouted_rows_and_flattens_failures(
    start_gateway, bundled_config: LoadedConfig
) -> None:
    gateway = start_gateway(ScriptedUpstream([{"error": 400}]))
    env = build_environment(bundled_config, "arith_environment", gateway)
    row = first_row("arith", "arith.jsonl")

    misrouted = run(env.run({**row, "task_source": "units_resources"}))
    assert misrouted["_ng_failure_terminal"] is True
    assert misrouted["_ng_failure_message"] == (
        "Row task_source 'units_resources' does not match environment server "
        "'arith_environment' resources server 'arith_resources'"
    )
    wrong_agent = run(env.run({**row, "agent_ref": {"name": "units_simple_agent"}}))
    assert wrong_agent["_ng_failure_message"] == (
        "Row agent_ref 'units_simple_agent' is not an agent of environment server "
        "'arith_environment': 'arith_simple_agent'"
    )
    # a dataset declared on the agent (or on the server) stamps that name: not misrouted, so
    # the row reaches the agent (whose model call the scripted upstream fails)
    for source in ("arith_simple_agent", "arith_environment"):
        reached = run(env.run({**row, "task_source": source}))
        assert reached["_ng_failure_stage"] == "agent", reached

    failed = run(env.run({**row, "agent_ref": {"name": "arith_simple_agent"}}))
    assert failed["_ng_failure_class"] == "environment_server_failed"
    assert failed["_ng_failure_stage"] == "agent" and failed["_ng_failure_terminal"] is True
    assert "reward" not in failed

    episode = run(
        env.run(
            {
                "episode_id": {"rollout_id": "n"},
                "task": {"task_id": {"taskset": "a", "task_id": "1"}, "task_input": row},
            }
        )
    )
    assert episode.failure is not None and episode.failure.stage == "agent"


def test_a_legacy_row_without_an_id_or_a_task_index_is_refused() -> None:
    """The reference raises; a row without either is not run as task "0"."""
    row = {"responses_create_params": {"input": []}}
    with pytest.raises(MaterializeError, match="requires a non-negative task_index"):
        episode_request_of(row, "legacy")
    indexed = episode_request_of({**row, "_ng_task_index": 3}, "legacy")
    assert indexed.task.task_id.task_id == "3"
    assert episode_request_of({**row, "problem_id": 7}, "legacy").task.task_id.task_id == "7"
