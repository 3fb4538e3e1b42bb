"""Whole episodes of the bundled benchmarks through the real model gateway over HTTP."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from gym_assets.config.loader import LoadedConfig
from gym_assets.records.episode import EpisodeResponse
from gym_assets.records.evidence import AgentObservations
from gym_assets.rollouts.episodes import model_calls
from gym_assets.rollouts.episodes.model_calls import shared_connections
from gym_assets.rollouts.episodes.registry import build_environment, build_resources
from gym_assets.rollouts.gateway import (
    ModelGateway,
    ReferenceUpstream,
    ScriptedUpstream,
    read_capture,
)
from gym_assets.tasks.task_inputs import SingleAgentTurnTaskInput
from gym_assets_tests.rollouts.episodes.conftest import (
    first_row,
    humaneval_row,
    native_task,
    run,
)
from gym_assets_tests.rollouts.episodes.upstreams import BodyUpstream, SlowUpstream


def _with_settings(config: LoadedConfig, instance: str, **settings: Any) -> dict[str, Any]:
    """A copy of the bundled config with extra settings on one instance."""
    data = copy.deepcopy(dict(config.data))
    (impls,) = data[instance].values()
    (impl,) = impls.values()
    impl.update(settings)
    return data


def _native(env_config: Any, env_name: str, gateway: ModelGateway, task: dict, rollout: str):
    env = build_environment(env_config, env_name, gateway)
    response = run(env.run({"episode_id": {"rollout_id": rollout}, "task": task}))
    assert isinstance(response, EpisodeResponse)
    return response


def _task_data(task: dict) -> dict:
    return SingleAgentTurnTaskInput.model_validate(task["task_input"]).task_data


def _humaneval() -> dict:
    return native_task(humaneval_row(2), "humaneval")


def _units() -> dict:
    return native_task(first_row("units", "units.jsonl"), "units")


def _dialogue() -> dict:
    return native_task(first_row("support_dialogue", "dialogue.jsonl"), "support:dialogue")


WRONG_CODE = [{"text": "```python\n    return -1.0\n```"}]


@pytest.mark.parametrize(
    ("env_name", "resources_name", "make_task", "data_of", "corrupted"),
    [
        ("humaneval_environment", "humaneval_resources", _humaneval, _task_data, WRONG_CODE),
        ("units_environment", "units_resources", _units, _task_data, [{"text": "42"}]),
        (
            "support_dialogue",
            "support_resources",
            _dialogue,
            lambda task: task["task_input"],
            [{"call": "send_replacement", "args": {"order_id": "A1000"}}] + [{"text": "ok"}] * 6,
        ),
    ],
)
def test_native_benchmark_episode_reference_and_corrupted(
    bundled_config, start_gateway, env_name, resources_name, make_task, data_of, corrupted
) -> None:
    gateway = start_gateway(ReferenceUpstream())
    task = make_task()
    script = build_resources(bundled_config, resources_name).reference_script(data_of(task))
    gateway.set_reference_script("good", script)
    gateway.set_reference_script("bad", corrupted)

    good = _native(bundled_config, env_name, gateway, task, "good")
    assert good.failure is None and good.result is not None
    assert good.result["reward"] == 1.0
    observations = AgentObservations.model_validate(good.result["ng_agent_observations"])
    captured = {call["response_id"] for call in read_capture(gateway.capture_dir, "good")["calls"]}
    refs = [
        ref.response_id for rec in observations.records for ref in getattr(rec, "model_calls", [])
    ]
    assert refs and set(refs) == captured  # every captured call is owned, every ref resolves

    bad = _native(bundled_config, env_name, gateway, task, "bad")
    assert bad.result is not None and bad.result["reward"] == 0.0


def test_flat_arith_episode_reference_and_corrupted(bundled_config, start_gateway) -> None:
    gateway = start_gateway(ReferenceUpstream())
    env = build_environment(bundled_config, "arith_environment", gateway)
    row = {**first_row("arith", "arith.jsonl"), "task_source": "arith_resources"}
    script = build_resources(bundled_config, "arith_resources").reference_script(row)
    gateway.set_reference_script("0-0", script)
    gateway.set_reference_script("0-1", [script[0], {"text": "12"}])

    good = run(env.run({**row, "_ng_task_index": 0, "_ng_rollout_index": 0}))
    assert good["reward"] == 1.0
    kinds = [item["type"] for item in good["response"]["output"]]
    assert kinds == ["function_call", "function_call_output", "message"]
    assert good["response"]["output"][1]["output"] == "81752"
    assert good["response"]["usage"]["input_tokens"] == 20 + 21  # two calls, summed
    tool_calls = [r for r in good["ng_agent_observations"]["records"] if r["kind"] == "tool_call"]
    assert len(tool_calls) == 1 and tool_calls[0]["timing_source"] == "executor"
    assert tool_calls[0]["tool_name"] == "calculate" and tool_calls[0]["status"] == "completed"

    bad = run(env.run({**row, "_ng_task_index": 0, "_ng_rollout_index": 1}))
    assert bad["reward"] == 0.0


def test_chat_completions_dialect(bundled_config, start_gateway) -> None:
    config = _with_settings(bundled_config, "arith_simple_agent", api="chat")
    gateway = start_gateway(ReferenceUpstream())
    env = build_environment(config, "arith_environment", gateway)
    row = first_row("arith", "arith.jsonl")
    gateway.set_reference_script(
        "0-0", build_resources(config, "arith_resources").reference_script(row)
    )
    result = run(env.run(row))
    assert result["reward"] == 1.0
    capture = read_capture(gateway.capture_dir, "0-0")
    assert [call["dialect"] for call in capture["calls"]] == ["chat", "chat"]
    second = capture["calls"][1]["request"]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]


def test_retried_429_and_500_then_success(bundled_config, start_gateway) -> None:
    steps = [{"error": 429}, {"error": 500}, {"text": "168000"}]
    gateway = start_gateway(ScriptedUpstream(steps))
    response = _native(bundled_config, "units_environment", gateway, _units(), "flaky")
    assert response.result is not None and response.result["reward"] == 1.0
    calls = read_capture(gateway.capture_dir, "flaky")["calls"]
    assert [call["status_code"] for call in calls] == [429, 500, 200]
    assert {call["client_session_id"] for call in calls} == {"root"}


def test_permanent_400_is_a_terminal_agent_failure(bundled_config, start_gateway) -> None:
    gateway = start_gateway(ScriptedUpstream([{"error": 400, "message": "bad request"}]))
    failure = _native(bundled_config, "units_environment", gateway, _units(), "r").failure
    assert failure is not None and failure.stage == "agent" and failure.terminal is True
    assert failure.failure_kind == "agent_request_failed"
    assert len(read_capture(gateway.capture_dir, "r")["calls"]) == 1  # no retry of a 400


def test_exhausted_server_errors_are_retryable(bundled_config, start_gateway) -> None:
    config = _with_settings(bundled_config, "units_simple_agent", max_retries=0)
    gateway = start_gateway(ScriptedUpstream([{"error": 503}, {"text": "168000"}]))
    failure = _native(config, "units_environment", gateway, _units(), "r").failure
    assert failure is not None and failure.stage == "agent" and failure.terminal is False


@pytest.mark.parametrize("content", [b"<html>busy</html>", b"[]"])
def test_a_2xx_answer_that_is_not_an_object_is_a_retryable_agent_failure(
    bundled_config, start_gateway, content: bytes
) -> None:
    gateway = start_gateway(BodyUpstream(content))
    failure = _native(bundled_config, "units_environment", gateway, _units(), "r").failure
    assert failure is not None and failure.stage == "agent" and failure.terminal is False
    assert failure.failure_kind == "agent_request_failed"
    assert "not a JSON object" in failure.failure_reason
    (call,) = read_capture(gateway.capture_dir, "r")["calls"]
    assert call["status_code"] == 200


def test_upstream_timeout_is_retryable(bundled_config, start_gateway) -> None:
    config = _with_settings(
        bundled_config, "units_simple_agent", request_timeout_seconds=0.2, max_retries=0
    )
    gateway = start_gateway(SlowUpstream(ScriptedUpstream([{"text": "1"}]), fast=0, delay=0.6))
    failure = _native(config, "units_environment", gateway, _units(), "r").failure
    assert failure is not None and failure.stage == "agent" and failure.terminal is False
    assert failure.failure_kind == "agent_request_failed"
    assert "Timeout" in failure.failure_reason


def test_agent_crash_is_an_agent_stage_failure(bundled_config, start_gateway, monkeypatch) -> None:
    from gym_assets.servers.responses_api_agents.simple_agent import app as simple_agent

    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("agent bug")

    monkeypatch.setattr(simple_agent, "_response", crash)
    gateway = start_gateway(ScriptedUpstream([{"text": "1"}]))
    failure = _native(bundled_config, "units_environment", gateway, _units(), "r").failure
    assert failure is not None and failure.stage == "agent" and failure.terminal is True
    assert failure.failure_kind == "agent_run_error" and "agent bug" in failure.failure_reason
    invocation = failure.model_extra["ng_agent_observations"]["records"][0]
    assert invocation["status"] == "failed" and invocation["error_type"] == "RuntimeError"


def test_verifier_exception_gives_a_masked_result(bundled_config, start_gateway) -> None:
    task = _humaneval()
    del task["task_input"]["verifier_metadata"]["test"]
    gateway = start_gateway(ScriptedUpstream([{"text": "```python\n    return 1\n```"}]))
    result = _native(bundled_config, "humaneval_environment", gateway, task, "r").result
    assert result is not None and result["mask_sample"] is True
    assert result["failure_kind"] == "verifier_error"


def test_deadline_gives_a_retryable_failure_that_keeps_partial_work(
    bundled_config, start_gateway
) -> None:
    config = _with_settings(
        bundled_config, "arith_environment", default_episode_timeout_seconds=0.5
    )
    row = first_row("arith", "arith.jsonl")
    script = build_resources(config, "arith_resources").reference_script(row)
    gateway = start_gateway(SlowUpstream(ScriptedUpstream(script), fast=1, delay=1.0))
    env = build_environment(config, "arith_environment", gateway)
    request = native_task(row, "arith")
    response = run(env.run({"episode_id": {"rollout_id": "slow"}, "task": request}))
    failure = response.failure
    assert failure is not None
    assert failure.failure_reason == "Episode timed out" and failure.terminal is False
    partial = failure.model_extra["partial_response"]
    assert [item["type"] for item in partial["output"]] == ["function_call", "function_call_output"]
    # The episode deadline stops the agent through its close: a stop requested by close.
    assert partial["metadata"]["ng_termination_reason"] == "cancelled"
    records = failure.model_extra["ng_agent_observations"]["records"]
    invocation = next(r for r in records if r["kind"] == "agent_invocation")
    assert invocation["status"] == "incomplete" and len(invocation["model_calls"]) == 1
    assert invocation["error_type"] == "cancelled"
    assert [r["tool_name"] for r in records if r["kind"] == "tool_call"] == ["calculate"]


def test_attempts_are_captured_under_their_capture_key(bundled_config, start_gateway) -> None:
    gateway = start_gateway(ScriptedUpstream([{"text": "168000"}]))
    env = build_environment(bundled_config, "units_environment", gateway)
    response = run(
        env.run({"episode_id": {"rollout_id": "rollout", "attempt": 2}, "task": _units()})
    )
    assert response.result is not None
    assert (Path(gateway.capture_dir) / "rollout-a2.capture.jsonl").exists()
    assert len(read_capture(gateway.capture_dir, "rollout-a2")["calls"]) == 1


def test_shared_connections_per_event_loop(bundled_config, start_gateway) -> None:
    """One environment runs in two event loops, each with its own shared pool: every rollout
    is captured under its own key with its invocation's session, and each pool closes with
    its scope (a pool never serves another loop)."""
    gateway = start_gateway(ScriptedUpstream([{"text": "168000"}]))
    env = build_environment(bundled_config, "units_environment", gateway)
    pools: list[Any] = []

    async def episodes(loop: int) -> None:
        async with shared_connections():
            pools.append(model_calls._shared.get())
            for rollout in (f"l{loop}-a", f"l{loop}-b"):
                request = {"episode_id": {"rollout_id": rollout}, "task": _units()}
                response = await env.run(request)
                assert isinstance(response, EpisodeResponse) and response.result is not None
                assert response.result["reward"] == 1.0

    for loop in range(2):
        run(episodes(loop))
    assert len(pools) == 2 and pools[0] is not pools[1]
    assert all(pool.closed for pool in pools)
    for rollout in ("l0-a", "l0-b", "l1-a", "l1-b"):
        calls = read_capture(gateway.capture_dir, rollout)["calls"]
        assert [call["client_session_id"] for call in calls] == ["root"]
