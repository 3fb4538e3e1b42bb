"""The pi adapter: its models.json and argv, and its reading of recorded pi sessions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gym_assets.rollouts.harnesses.adapters import Api, adapter_named
from gym_assets_tests.rollouts.harnesses.adapters.cli_episode import (
    PROMPT,
    TOOL_RUN_ITEMS,
    episode,
    observe,
    place,
    records,
)
from gym_assets_tests.rollouts.harnesses.adapters.conformance_run import (
    assert_failures_recorded_and_retries_owned,
    run_all_scenarios,
)

ADAPTER = adapter_named("pi")
SESSION = "pi-sessions/2026-12-01T15-20-58-379Z_0000.jsonl"


@pytest.mark.parametrize(
    ("api", "pi_api"), [("chat", "openai-completions"), ("responses", "openai-responses")]
)
def test_prepare_defines_the_gateway_as_pis_only_provider(
    tmp_path: Path, api: Api, pi_api: str
) -> None:
    ep = episode(tmp_path, "pi", api=api, offline_env={"PI_OFFLINE": "1"})
    prepared = ADAPTER.prepare(ep)
    agent_dir = Path(prepared.env["PI_CODING_AGENT_DIR"])
    assert agent_dir.is_relative_to(ep.files.home) and prepared.env["PI_OFFLINE"] == "1"
    models = json.loads((agent_dir / "models.json").read_text(encoding="utf-8"))
    (provider,) = models["providers"].values()
    assert provider["baseUrl"] == ep.base_url and provider["api"] == pi_api
    assert provider["apiKey"] == "GYM_API_KEY"  # the name of the variable holding the key
    assert [m["id"] for m in provider["models"]] == ["policy"]
    argv = prepared.argv
    assert argv[0] == str(ep.install_dir / "node_modules" / ".bin" / "pi")
    assert "-p" in argv and "--no-context-files" in argv and argv[-1] == PROMPT
    session_dir = Path(argv[argv.index("--session-dir") + 1])
    assert session_dir.is_absolute() and session_dir.is_relative_to(ep.files.home)


def test_a_prompt_pi_would_read_as_a_file_or_flag_stays_a_message(tmp_path: Path) -> None:
    prepared = ADAPTER.prepare(episode(tmp_path, "pi", prompt="@notes.md says hi"))
    assert prepared.argv[-1] == " @notes.md says hi"


@pytest.mark.parametrize("fixture", ["chat_tool_run.jsonl", "responses_tool_run.jsonl"])
def test_a_tool_run_gives_the_conversation_tools_and_response_ids(
    tmp_path: Path, fixture: str
) -> None:
    bundle = observe(
        tmp_path, ADAPTER, f"pi/{fixture}", SESSION, exit_code=1
    )  # the exit code is no evidence
    (invocation,) = records(bundle, "agent_invocation")
    assert invocation["status"] == "completed"
    conversation = invocation["conversation"]
    assert conversation[0] == {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": PROMPT}],
    }
    assert [i["type"] for i in conversation] == TOOL_RUN_ITEMS
    calls = [i for i in conversation if i["type"] == "function_call"]
    outputs = [i for i in conversation if i["type"] == "function_call_output"]
    # The Responses provider keeps "<call_id>|<item id>"; the model's call id is the first part.
    assert all("|" not in c["call_id"] for c in calls)
    assert [o["call_id"] for o in outputs] == [c["call_id"] for c in calls]
    assert [json.loads(c["arguments"]) for c in calls] == [
        {"command": "echo 391 > answer.txt"},
        {"command": "echo hi; exit 7"},
    ]
    assert outputs[1]["output"].endswith("Command exited with code 7")
    tools = records(bundle, "tool_call")
    assert [(t["tool_call_id"], t["tool_name"], t["status"]) for t in tools] == [
        (calls[0]["call_id"], "bash", "completed"),
        (calls[1]["call_id"], "bash", "failed"),
    ]
    assert all(t["started_at"] is None and t["completed_at"] > 0 for t in tools)
    assert [g["code"] for g in bundle["gaps"]] == ["tool_timing_unavailable"]
    refs = invocation["model_calls"]
    assert [r["response_id"][-3:] for r in refs] == ["_t0", "_t1", "_t2"]


def test_a_failed_model_call_fails_the_invocation_though_pi_may_exit_0(tmp_path: Path) -> None:
    bundle = observe(tmp_path, ADAPTER, "pi/model_error.jsonl", SESSION, exit_code=0)
    (invocation,) = records(bundle, "agent_invocation")
    assert invocation["status"] == "failed"
    assert invocation["model_calls"] == []
    assert [i["role"] for i in invocation["conversation"]] == ["user"]
    assert bundle["gaps"] == [] and records(bundle, "tool_call") == []


def test_only_the_branch_that_ran_last_is_the_conversation(tmp_path: Path) -> None:
    ep = episode(tmp_path, "pi")
    session = place("pi/chat_tool_run.jsonl", ep.files.home / SESSION)
    entries = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()]
    user = next(e for e in entries if e.get("message", {}).get("role") == "user")
    abandoned = {
        "type": "message",
        "id": "abandon1",
        "parentId": user["id"],
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "old branch"}],
            "stopReason": "error",
            "responseId": "resp_old",
        },
    }
    entries.insert(entries.index(user) + 1, abandoned)
    session.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    (invocation,) = records(ADAPTER.observations(ep, 0), "agent_invocation")
    assert invocation["status"] == "completed"
    assert "resp_old" not in {r["response_id"] for r in invocation["model_calls"]}
    assert "old branch" not in json.dumps(invocation["conversation"])


def test_a_session_that_stops_after_a_tool_result_is_incomplete(tmp_path: Path) -> None:
    ep = episode(tmp_path, "pi")
    session = place("pi/chat_tool_run.jsonl", ep.files.home / SESSION)
    session.write_text("".join(session.read_text(encoding="utf-8").splitlines(True)[:-1]))
    (invocation,) = records(ADAPTER.observations(ep, None), "agent_invocation")
    assert invocation["status"] == "incomplete"


def test_no_session_file_is_a_gap_and_no_invocation(tmp_path: Path) -> None:
    bundle = ADAPTER.observations(episode(tmp_path, "pi"), 0)
    assert bundle["records"] == []
    assert bundle["gaps"][0]["detail"].startswith("0 session files match home/pi-sessions/")


@pytest.mark.slow
def test_the_real_pi_through_the_seven_scenarios(tmp_path: Path) -> None:
    """What is true of pi 0.73.1 (Chat over SSE): a 400 is not retried and leaves an assistant
    message with ``stopReason: "error"``; a non-zero exit is a tool result with ``isError``; its
    SDK's retries of 429 are in no pi artifact, yet owned by its invocation through the
    per-invocation base URL."""
    run = run_all_scenarios("pi", tmp_path / "conformance")
    assert_failures_recorded_and_retries_owned(run, "bash")
