"""The opencode adapter: its configuration, and the bundle read from opencode's own store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from gym_assets.rollouts.episodes.responses import message_text
from gym_assets.rollouts.harnesses.adapters.base import Api, adapter_named
from gym_assets.rollouts.harnesses.adapters.opencode import ADAPTER, store_path
from gym_assets_tests.rollouts.harnesses.adapters.activation import (
    conformance_run,
    installed,
    run_activation,
    scenario_bundle,
)
from gym_assets_tests.rollouts.harnesses.adapters.fixtures import (
    FIXTURES,
    PROMPT,
    TOOL_THEN_400,
    TOOLS_THEN_TEXT,
    episode,
    invocation_and_tools,
    restore_store,
)

RECORDED = FIXTURES / "opencode"


def _read(tmp_path: Path, run: str | None, exit_code: int | None) -> dict:
    ep = episode(tmp_path)
    if run is not None:
        restore_store(RECORDED / run, store_path(ep.files.home))
    return ADAPTER.observations(ep, exit_code)


def test_registered_under_its_name() -> None:
    assert adapter_named("opencode") is ADAPTER


def test_prepare_points_opencode_at_the_invocation_url(tmp_path: Path) -> None:
    ep = episode(tmp_path)
    prepared = ADAPTER.prepare(ep)
    config = json.loads(Path(prepared.env["OPENCODE_CONFIG"]).read_text(encoding="utf-8"))
    provider = config["provider"]["gym"]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"]["baseURL"] == ep.base_url
    assert list(provider["models"]) == ["policy"]
    assert config["model"] == config["small_model"] == "gym/policy"
    assert config["permission"]["bash"] == "allow"
    assert Path(prepared.env["OPENCODE_CONFIG"]).is_relative_to(ep.files.home)
    assert prepared.env["OPENCODE_DISABLE_PROJECT_CONFIG"] == "true"  # no config from workspace
    assert prepared.env["OFFLINE_FLAG"] == "1"  # the registry's offline profile, merged
    argv = list(prepared.argv)
    assert argv[-1] == "--offline-arg"
    assert argv[argv.index("--model") + 1] == "gym/policy"
    assert str(ADAPTER.executable(ep.install_dir)) in argv
    assert PROMPT not in argv  # it goes in on stdin, where opencode does not re-quote it
    prompt_file = Path(argv[4])
    assert prompt_file.read_text(encoding="utf-8") == PROMPT


def test_prepare_for_responses_uses_the_openai_sdk(tmp_path: Path) -> None:
    ep = episode(tmp_path, api="responses")
    config = json.loads(Path(ADAPTER.prepare(ep).env["OPENCODE_CONFIG"]).read_text("utf-8"))
    assert config["provider"]["gym"]["npm"] == "@ai-sdk/openai"


def test_session_with_a_failing_command(tmp_path: Path) -> None:
    invocation, tools = invocation_and_tools(_read(tmp_path, "tool_exit_7", 0))
    assert invocation["status"] == "completed"
    assert "model_calls" not in invocation  # opencode keeps no response id to reference
    conversation = invocation["conversation"]
    assert conversation[0] == {"role": "user", "content": PROMPT}
    calls = [item for item in conversation if item.get("type") == "function_call"]
    outputs = [item for item in conversation if item.get("type") == "function_call_output"]
    assert [json.loads(c["arguments"]) for c in calls] == [
        {"command": "echo 391 > answer.txt"},
        {"command": "exit 7"},
    ]
    assert [o["call_id"] for o in outputs] == [c["call_id"] for c in calls]
    assert conversation[-1]["content"][0]["text"] == "Done: wrote 391."
    # opencode marks the part completed and records exit 7 in its metadata: a failure
    assert [(t["tool_call_id"], t["status"]) for t in tools] == [
        (calls[0]["call_id"], "completed"),
        (calls[1]["call_id"], "failed"),
    ]
    assert all(
        t["timing_source"] == "harness" and t["started_at"] <= t["completed_at"] for t in tools
    )


def test_http_400_is_a_failed_invocation_whatever_the_exit_code(tmp_path: Path) -> None:
    for exit_code in (1, 0):
        invocation, tools = invocation_and_tools(
            _read(tmp_path / str(exit_code), "http_400", exit_code)
        )
        assert (invocation["status"], invocation["error_type"]) == ("failed", "APIError")
        assert [t["status"] for t in tools] == ["completed"]  # the call before the 400 stays


def test_a_non_zero_exit_does_not_fail_a_finished_session(tmp_path: Path) -> None:
    invocation, _ = invocation_and_tools(_read(tmp_path, "tool_exit_7", 1))
    assert invocation["status"] == "completed"


def test_a_stopped_run_is_incomplete(tmp_path: Path) -> None:
    invocation, _ = invocation_and_tools(_read(tmp_path, "tool_exit_7", None))
    assert invocation["status"] == "incomplete"


def test_subagent_sessions_are_a_gap(tmp_path: Path) -> None:
    ep = episode(tmp_path)
    store = store_path(ep.files.home)
    restore_store(RECORDED / "tool_exit_7", store)
    with sqlite3.connect(store) as connection:  # a child session, as the task tool leaves one
        connection.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, "
            "time_created, time_updated) SELECT 'ses_child', project_id, id, 'child', directory, "
            "title, version, time_created, time_updated FROM session"
        )
    bundle = ADAPTER.observations(ep, 0)
    invocation, tools = invocation_and_tools(bundle)
    assert invocation["status"] == "completed" and len(tools) == 2
    (gap,) = bundle["gaps"]
    assert (gap["code"], gap["detail"]) == (
        "conversation_unavailable",
        "opencode ran 1 subagent session(s); their conversations and tool calls are not in "
        "this bundle",
    )


def test_no_store_is_a_gap_and_no_invocation(tmp_path: Path) -> None:
    bundle = _read(tmp_path, None, 0)
    assert bundle["records"] == []
    (gap,) = bundle["gaps"]
    assert gap["code"] == "conversation_unavailable"
    assert gap["detail"] == "the harness left no home/.local/share/opencode/opencode.db"


def test_an_unreadable_store_is_a_gap(tmp_path: Path) -> None:
    ep = episode(tmp_path)
    store = store_path(ep.files.home)
    store.parent.mkdir(parents=True)
    store.write_bytes(b"not a database at all, just bytes" * 10)
    bundle = ADAPTER.observations(ep, 0)
    assert bundle["records"] == []
    assert "home/.local/share/opencode/opencode.db cannot be read" in bundle["gaps"][0]["detail"]


# ------------------------------------------------------------------ the real program (slow)


@pytest.mark.slow
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_real_opencode_run_is_read_back(tmp_path: Path, api: Api) -> None:
    run = run_activation(installed("opencode"), TOOLS_THEN_TEXT, tmp_path, prompt=PROMPT, api=api)
    assert (run.episode.files.workdir / "answer.txt").read_text().strip() == "391"
    assert run.outside == []  # the registry's offline profile: only the gateway, no lookup
    invocation, tools = invocation_and_tools(run.bundle)
    assert invocation["status"] == "completed"
    assert [t["status"] for t in tools] == ["completed", "failed"]
    # every call is the invocation's, each a policy step: the title agent is disabled
    assert {c["client_session_id"] for c in run.calls} == {"root"}
    assert len(run.calls) == 3 and all(c["dialect"] == api for c in run.calls)
    first = run.calls[0]["request"]
    sent = first["messages"] if api == "chat" else first["input"]
    # byte for byte, not re-quoted by `opencode run`
    assert [message_text(m) for m in sent if m.get("role") == "user"] == [PROMPT]


@pytest.mark.slow
def test_real_opencode_http_400_is_recorded_as_a_failure(tmp_path: Path) -> None:
    run = run_activation(installed("opencode"), TOOL_THEN_400, tmp_path, prompt=PROMPT)
    invocation, tools = invocation_and_tools(run.bundle)
    assert (invocation["status"], invocation["error_type"]) == ("failed", "APIError")
    assert [t["status"] for t in tools] == ["completed"]
    assert [c["status_code"] for c in run.calls] == [200, 400]  # a 400 is not retried


@pytest.mark.slow
def test_opencode_through_the_conformance_suite(tmp_path: Path) -> None:
    """All seven scenarios run and are judged. What is true of opencode 1.18.33, whatever the
    verdicts: the permanent 400 is recorded as a failed invocation in its own session, and the
    command that exits 7 as a failed tool (opencode marks the part completed, exit 7 in its
    metadata)."""
    results = conformance_run(installed("opencode"), tmp_path / "run")
    failed, _ = invocation_and_tools(scenario_bundle(results["model_error"]))
    assert (failed["status"], failed["error_type"]) == ("failed", "APIError")
    _, tools = invocation_and_tools(scenario_bundle(results["tool_failure"]))
    assert [t["status"] for t in tools] == ["failed", "completed"]
