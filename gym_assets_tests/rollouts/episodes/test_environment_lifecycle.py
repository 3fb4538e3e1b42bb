"""Environment-server lifecycle with recording participants."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gym_assets.records.episode import EpisodeRequest, EpisodeResponse
from gym_assets.rollouts.episodes.runner import EnvironmentSettings
from gym_assets.servers.environment_servers.single_agent_turn.app import SingleAgentTurn
from gym_assets_tests.rollouts.episodes.conftest import run
from gym_assets_tests.rollouts.episodes.fakes import FakeAgent, FakeResources

HAPPY = [
    "/seed_session",
    "/v1/agent_sessions",
    "/v1/responses",
    "/v1/agent_sessions/close",
    "/verify",
    "/close_session",
]


def request(attempt: int = 2, task_input: dict | None = None) -> EpisodeRequest:
    return EpisodeRequest.model_validate(
        {
            "episode_id": {"rollout_id": "rollout", "attempt": attempt},
            "task": {
                "task_id": {"taskset": "t", "task_id": "task-1"},
                "task_input": task_input
                if task_input is not None
                else {"responses_create_params": {"input": "hi"}, "task_data": {"answer": "42"}},
            },
        }
    )


def server(
    calls: list[str],
    agent: dict[str, Any] | None = None,
    resources: dict[str, Any] | None = None,
    **settings: Any,
) -> tuple[SingleAgentTurn, FakeAgent, FakeResources]:
    fake_agent = FakeAgent(calls, **(agent or {}))
    fake_resources = FakeResources(calls, **(resources or {}))
    config = EnvironmentSettings.model_validate({"cleanup_timeout_seconds": 1.0, **settings})
    return SingleAgentTurn("env", config, fake_agent, fake_resources), fake_agent, fake_resources


def test_case_1_happy_path_order_result_and_grant() -> None:
    calls: list[str] = []
    env, agent, resources = server(calls)
    response = run(env.run(request()))
    assert isinstance(response, EpisodeResponse) and response.failure is None
    assert calls == HAPPY
    result = response.result
    assert result is not None
    assert result["reward"] == 1.0 and result["benchmark_field"] == "kept"
    assert (
        "verification" not in result and result["ng_agent_observations"]["source"] == "fake_agent"
    )
    seeded_id = resources.args["/seed_session"][0][0]
    grant = agent.args["/v1/agent_sessions"][0][2]
    assert grant.session_id == seeded_id and grant.resources is resources
    # The flat verify body: task data, the explicitly set request fields, the response.
    body = resources.args["/verify"][0][1]
    assert body == {
        "answer": "42",
        "responses_create_params": {"input": "hi"},
        "response": body["response"],
    }
    assert resources.args["/close_session"][0][0] == seeded_id


def test_case_3_lost_seed_reply_still_closes_the_same_session() -> None:
    calls: list[str] = []
    env, _, resources = server(calls, resources={"fail": {"/seed_session": TimeoutError()}})
    failure = run(env.run(request())).failure
    assert failure is not None and failure.stage == "seed" and failure.terminal is False
    assert calls == ["/seed_session", "/close_session"]
    assert resources.args["/seed_session"][0][0] == resources.args["/close_session"][0][0]


def test_case_4_lost_agent_seed_closes_agent_then_resources() -> None:
    calls: list[str] = []
    env, agent, _ = server(calls, agent={"fail": {"/v1/agent_sessions": ConnectionError("lost")}})
    failure = run(env.run(request())).failure
    assert failure is not None and failure.stage == "agent" and failure.terminal is False
    assert calls == [
        "/seed_session",
        "/v1/agent_sessions",
        "/v1/agent_sessions/close",
        "/close_session",
    ]
    assert agent.args["/v1/agent_sessions"][0][0] == agent.args["/v1/agent_sessions/close"][0][0]


def test_case_5_lost_agent_close_skips_verification() -> None:
    calls: list[str] = []
    env, _, _ = server(calls, agent={"fail": {"/v1/agent_sessions/close": ConnectionError("lost")}})
    failure = run(env.run(request())).failure
    assert failure is not None and failure.stage == "cleanup" and failure.terminal is False
    assert "/verify" not in calls
    assert failure.model_extra["partial_response"]["id"] == "resp_1"
    # The final unwind retried the agent close once more, then closed resources.
    assert calls[-2:] == ["/v1/agent_sessions/close", "/close_session"]


def test_case_6_verify_connection_error_is_retryable_and_keeps_the_response() -> None:
    calls: list[str] = []
    env, _, _ = server(calls, resources={"fail": {"/verify": ConnectionError("refused")}})
    failure = run(env.run(request())).failure
    assert failure is not None and failure.stage == "verification" and failure.terminal is False
    assert failure.model_extra["partial_response"]["id"] == "resp_1"
    assert failure.model_extra["ng_agent_observations"]["source"] == "fake_agent"
    assert calls[-1] == "/close_session"


def test_case_7_activation_errors_terminal_by_kind_and_reason_truncated() -> None:
    calls: list[str] = []
    env, _, _ = server(calls, agent={"fail": {"/v1/responses": ConnectionError("reset")}})
    failure = run(env.run(request())).failure
    assert failure is not None and failure.stage == "agent" and failure.terminal is False
    assert failure.failure_reason == "ConnectionError: reset"

    env, _, _ = server([], agent={"fail": {"/v1/responses": ValueError("x" * 5000)}})
    failure = run(env.run(request())).failure
    assert failure is not None and failure.stage == "agent" and failure.terminal is True
    assert failure.failure_kind == "agent_run_error"
    assert len(failure.failure_reason) == 2000 and failure.failure_reason.startswith("ValueError")


def test_case_8_failed_resources_close_after_verify_keeps_the_result() -> None:
    calls: list[str] = []
    env, _, _ = server(calls, resources={"fail": {"/close_session": OSError("gone")}})
    response = run(env.run(request()))
    assert response.result is not None and response.result["reward"] == 1.0
    assert calls.count("/close_session") == 2


def test_case_9_slow_resources_close_runs_outside_a_tiny_deadline() -> None:
    calls: list[str] = []
    env, _, _ = server(
        calls,
        resources={"delay": {"/close_session": 0.2}},
        default_episode_timeout_seconds=0.1,
    )
    response = run(env.run(request()))
    assert response.result is not None and response.result["reward"] == 1.0


def test_case_10_deadline_during_activation_keeps_partial_work() -> None:
    calls: list[str] = []
    env, _, _ = server(
        calls, agent={"delay": {"/v1/responses": 5}}, default_episode_timeout_seconds=0.1
    )
    failure = run(env.run(request())).failure
    assert failure is not None
    assert failure.failure_reason == "Episode timed out" and failure.terminal is False
    assert failure.stage is None
    assert calls[-2:] == ["/v1/agent_sessions/close", "/close_session"]
    assert failure.model_extra["partial_response"]["id"] == "partial"
    assert failure.model_extra["ng_agent_observations"]["source"] == "fake_agent"


def test_case_11_cancellation_is_reraised_after_closing_everything() -> None:
    calls: list[str] = []
    never = asyncio.Event()  # the model call stalls until the episode is cancelled
    env, agent, _ = server(calls, agent={"hold": {"/v1/responses": never}})

    async def scenario() -> None:
        task = asyncio.create_task(env.run(request()))
        await agent.entered["/v1/responses"].wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(scenario())
    assert calls[-2:] == ["/v1/agent_sessions/close", "/close_session"]


def test_case_12_admission_timeout_makes_no_calls() -> None:
    calls: list[str] = []
    release = asyncio.Event()
    env, agent, _ = server(
        calls,
        agent={"hold": {"/v1/responses": release}},
        max_concurrent_episodes=1,
        queue_timeout_seconds=0.05,
    )

    async def scenario() -> tuple[EpisodeResponse, EpisodeResponse]:
        first = asyncio.create_task(env.run(request()))
        await agent.entered["/v1/responses"].wait()  # the first holds the only slot
        second = await env.run(request(attempt=3))
        release.set()
        return await first, second

    first, second = run(scenario())
    assert first.result is not None
    assert second.failure is not None and second.failure.stage == "admission"
    assert second.failure.failure_reason == "Episode admission timed out"
    assert second.failure.terminal is False
    assert calls == HAPPY  # the refused episode touched nothing


def test_case_15_failed_agent_response_is_still_verified() -> None:
    calls: list[str] = []
    failed = {"id": "r", "status": "failed", "output": [], "error": {"code": "server_error"}}
    env, _, _ = server(
        calls, agent={"response": failed}, resources={"verify_extra": {"mask_sample": True}}
    )
    result = run(env.run(request())).result
    assert result is not None and result["mask_sample"] is True and result["reward"] == 1.0
    assert "/verify" in calls


def test_case_16_every_participant_sees_the_capture_key() -> None:
    calls: list[str] = []
    env, agent, resources = server(calls)
    run(env.run(request(attempt=2)))
    assert resources.args["/seed_session"][0][1] == "rollout-a2"
    assert resources.args["/close_session"][0][1] == "rollout-a2"
    assert agent.args["/v1/agent_sessions"][0][1].capture_key == "rollout-a2"


def test_cleanup_runs_lifo_even_when_verification_fails() -> None:
    calls: list[str] = []
    env, _, _ = server(calls, resources={"fail": {"/verify": RuntimeError("bug")}})
    failure = run(env.run(request())).failure
    assert failure is not None and failure.terminal is True and failure.stage == "verification"
    assert failure.failure_kind == "verifier_error"
    assert calls == HAPPY


def test_cleanup_errors_are_reported_on_failures() -> None:
    calls: list[str] = []
    env, _, _ = server(
        calls,
        agent={"fail": {"/v1/responses": ValueError("bad")}},
        resources={"fail": {"/close_session": OSError("stuck")}},
    )
    failure = run(env.run(request())).failure
    assert (
        failure is not None
        and "resources close failed: OSError: stuck" in (failure.model_extra["cleanup_error"])
    )


def test_invalid_task_input_is_a_terminal_failure_before_any_call() -> None:
    calls: list[str] = []
    env, _, _ = server(calls)
    failure = run(env.run(request(task_input={"task_data": {}}))).failure
    assert failure is not None and failure.terminal is True
    assert failure.failure_kind == "protocol_violation" and calls == []


def test_result_with_collector_keys_is_a_protocol_violation() -> None:
    env, _, _ = server([], resources={"verify_extra": {"_ng_task_index": 3}})
    failure = run(env.run(request())).failure
    assert failure is not None and failure.terminal is True
    assert (
        failure.failure_kind == "protocol_violation" and "_ng_task_index" in failure.failure_reason
    )


def test_flat_and_nested_task_inputs_mean_the_same() -> None:
    calls: list[str] = []
    env, _, resources = server(calls)
    flat = {"responses_create_params": {"input": "hi"}, "answer": "42"}
    run(env.run(request(task_input=flat)))
    assert resources.args["/seed_session"][0][2] == {"answer": "42"}
