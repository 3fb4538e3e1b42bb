"""The Codex CLI adapter: its config and argv, and its reading of recorded Codex sessions."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from gym_assets.config.loader import load_configs
from gym_assets.errors import ConfigError
from gym_assets.rollouts.harnesses.adapters import adapter_named
from gym_assets.rollouts.harnesses.registry import load_harnesses
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

ADAPTER = adapter_named("codex")
SESSION = ".codex/sessions/2026/12/01/rollout-2026-12-01T15-20-55-0000.jsonl"


def test_prepare_points_codex_at_the_gateway_with_the_offline_profile(tmp_path: Path) -> None:
    offline = ("--disable", "plugins")
    ep = episode(tmp_path, "codex", offline_env={"X_OFFLINE": "1"}, offline_args=offline)
    prepared = ADAPTER.prepare(ep)
    codex_home = Path(prepared.env["CODEX_HOME"])
    assert codex_home.is_relative_to(ep.files.home) and codex_home.is_absolute()
    assert prepared.env["X_OFFLINE"] == "1"
    config = tomllib.loads((codex_home / "config.toml").read_text(encoding="utf-8"))
    provider = config["model_providers"][config["model_provider"]]
    assert provider["base_url"] == ep.base_url and provider["wire_api"] == "responses"
    assert provider["env_key"] == "GYM_API_KEY" and config["model"] == "policy"
    assert config["analytics"]["enabled"] is False
    argv = prepared.argv
    assert argv[0] == str(ep.install_dir / "node_modules" / ".bin" / "codex")
    assert argv[1] == "exec" and "--dangerously-bypass-approvals-and-sandbox" in argv
    assert argv[-2:] == ("--", PROMPT)  # a prompt starting with "-" stays the prompt
    assert argv.index("plugins") < argv.index("--")


def test_a_registry_entry_driving_codex_over_chat_is_refused(tmp_path: Path) -> None:
    configs = tmp_path / "configs"
    configs.mkdir()
    entry = {"kind": "cli", "adapter": "codex", "version": "0.171.0"}
    entry |= {"install": {"npm": "@openai/codex"}, "api": "chat", "stream": True}
    (configs / "harnesses.yaml").write_text(json.dumps({"harnesses": {"codex": entry}}))
    with pytest.raises(ConfigError, match="cannot drive chat streaming; it speaks responses"):
        load_harnesses(load_configs(configs))


def test_a_tool_run_gives_the_conversation_tools_and_response_ids(tmp_path: Path) -> None:
    bundle = observe(
        tmp_path, ADAPTER, "codex/tool_run.jsonl", SESSION, exit_code=1
    )  # the exit code is no evidence
    (invocation,) = records(bundle, "agent_invocation")
    assert bundle["source"] == "codex" and bundle["gaps"] == []
    assert invocation["invocation_id"] == "root" and invocation["status"] == "completed"
    assert invocation["error_type"] is None and invocation["duration_ms"] > 0
    conversation = invocation["conversation"]
    # Codex's own instructions and environment context come before the task and are dropped.
    assert conversation[0]["role"] == "user"
    assert conversation[0]["content"][0]["text"] == PROMPT
    assert [i["type"] for i in conversation] == TOOL_RUN_ITEMS
    calls = [i for i in conversation if i["type"] == "function_call"]
    assert [c["arguments"] for c in calls] == [
        '{"cmd":"echo 391 > answer.txt"}',
        '{"cmd":"echo hi; exit 7"}',
    ]
    assert "Process exited with code 7" in conversation[4]["output"]
    assert all(
        set(i)
        <= {"type", "id", "role", "content", "status", "name", "arguments", "call_id", "output"}
        for i in conversation
    )
    tools = records(bundle, "tool_call")
    assert [(t["tool_call_id"], t["tool_name"], t["status"]) for t in tools] == [
        (calls[0]["call_id"], "exec_command", "completed"),
        (calls[1]["call_id"], "exec_command", "failed"),
    ]
    assert all(t["started_at"] <= t["completed_at"] for t in tools)
    refs = invocation["model_calls"]
    assert [r["response_id"][-3:] for r in refs] == ["_t0", "_t1", "_t2"]
    assert {r["model_ref"]["name"] for r in refs} == {"policy_model"}


def test_a_failed_model_call_fails_the_invocation_whatever_the_exit_code(tmp_path: Path) -> None:
    bundle = observe(tmp_path, ADAPTER, "codex/model_error.jsonl", SESSION, exit_code=0)
    (invocation,) = records(bundle, "agent_invocation")
    assert invocation["status"] == "failed" and invocation["error_type"] == "other"
    assert invocation["model_calls"] == []  # a 400 has no response id; the gateway owns it
    assert [i.get("role") for i in invocation["conversation"]] == ["user"]
    assert records(bundle, "tool_call") == []


def test_a_session_cut_short_is_incomplete_and_its_torn_line_a_gap(tmp_path: Path) -> None:
    ep = episode(tmp_path, "codex")
    session = place("codex/tool_run.jsonl", ep.files.home / SESSION)
    lines = session.read_bytes().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if b'"task_complete"' in line)
    session.write_bytes(b"".join(lines[:cut]) + lines[cut][:40])
    bundle = ADAPTER.observations(ep, None)
    (invocation,) = records(bundle, "agent_invocation")
    assert invocation["status"] == "incomplete"
    (gap,) = bundle["gaps"]
    assert gap["code"] == "conversation_unavailable"
    assert gap["detail"] == f"home/{SESSION}:{cut + 1} is not a JSON object"


def test_no_session_file_is_a_gap_and_no_invocation(tmp_path: Path) -> None:
    bundle = ADAPTER.observations(episode(tmp_path, "codex"), 1)
    assert bundle["records"] == []
    (gap,) = bundle["gaps"]
    assert gap["code"] == "conversation_unavailable"
    assert "0 session files match home/.codex/sessions" in gap["detail"]


@pytest.mark.slow
def test_the_real_codex_through_the_seven_scenarios(tmp_path: Path) -> None:
    """What is true of Codex 0.171.0: a 400 ends its turn on the first attempt and it records
    the turn as failed; a non-zero exit is a failed command; the 429s it retries are in no
    Codex artifact, yet owned by its invocation through the per-invocation base URL."""
    run = run_all_scenarios("codex", tmp_path / "conformance")
    assert_failures_recorded_and_retries_owned(run, "exec_command")
