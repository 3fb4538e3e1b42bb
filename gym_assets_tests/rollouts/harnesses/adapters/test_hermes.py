"""The hermes adapter: its configuration, and the bundle read from hermes's usage report and
session store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gym_assets.rollouts.harnesses.adapters.base import Api, adapter_named
from gym_assets.rollouts.harnesses.adapters.hermes import ADAPTER, hermes_home, usage_path
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
    restore_file,
    restore_store,
)

RECORDED = FIXTURES / "hermes"


def _read(
    tmp_path: Path, run: str, exit_code: int | None, *, usage: bool = True, store: bool = True
) -> dict:
    ep = episode(tmp_path)
    if store:
        restore_store(RECORDED / run, hermes_home(ep.files.home) / "state.db")
    if usage:
        restore_file(RECORDED / run / "usage.json", usage_path(ep.files.home))
    return ADAPTER.observations(ep, exit_code)


def test_registered_under_its_name() -> None:
    assert adapter_named("hermes") is ADAPTER


def test_prepare_for_chat_is_a_custom_provider_at_the_invocation_url(tmp_path: Path) -> None:
    ep = episode(tmp_path)
    prepared = ADAPTER.prepare(ep)
    home = Path(prepared.env["HERMES_HOME"])
    assert home == hermes_home(ep.files.home)
    model = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8"))["model"]
    assert (model["provider"], model["default"], model["base_url"]) == (
        "custom",
        "policy",
        ep.base_url,
    )
    assert model["context_length"] > 0  # else hermes asks OpenRouter's online catalogue
    assert prepared.env["OFFLINE_FLAG"] == "1"
    assert prepared.argv[0] == str(ADAPTER.executable(ep.install_dir))
    assert f"--oneshot={PROMPT}" in prepared.argv  # one token, even for a prompt starting with '-'
    assert prepared.argv[prepared.argv.index("--usage-file") + 1] == str(usage_path(ep.files.home))
    assert prepared.argv[-1] == "--offline-arg"


def test_prepare_for_responses_uses_the_codex_responses_transport(tmp_path: Path) -> None:
    ep = episode(tmp_path, api="responses")
    home = Path(ADAPTER.prepare(ep).env["HERMES_HOME"])
    config = yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8"))
    provider = config["providers"][config["model"]["provider"]]
    assert (provider["api"], provider["transport"]) == (ep.base_url, "codex_responses")


def test_session_with_a_failing_command(tmp_path: Path) -> None:
    bundle = _read(tmp_path, "tool_exit_7", 0)
    invocation, tools = invocation_and_tools(bundle)
    assert invocation["status"] == "completed"
    assert "model_calls" not in invocation  # hermes keeps no response id to reference
    conversation = invocation["conversation"]
    assert conversation[0] == {"role": "user", "content": PROMPT}
    calls = [item for item in conversation if item.get("type") == "function_call"]
    outputs = [item for item in conversation if item.get("type") == "function_call_output"]
    assert [c["arguments"] for c in calls] == [
        '{"command":"echo 391 > answer.txt"}',
        '{"command":"exit 7"}',
    ]
    assert [o["call_id"] for o in outputs] == [c["call_id"] for c in calls]
    assert json.loads(outputs[1]["output"])["exit_code"] == 7  # the result as the model saw it
    assert conversation[-1]["content"][0]["text"] == "Done: wrote 391."
    assert [(t["tool_name"], t["status"]) for t in tools] == [
        ("terminal", "completed"),
        ("terminal", "failed"),
    ]
    assert [g["code"] for g in bundle["gaps"]] == ["tool_timing_unavailable"]


def test_http_400_fails_the_invocation_though_hermes_exits_0(tmp_path: Path) -> None:
    # the failed run's usage report names no session: the fresh home's only one is read
    invocation, tools = invocation_and_tools(_read(tmp_path, "http_400", 0))
    assert invocation["status"] == "failed"
    assert [t["status"] for t in tools] == ["completed"]


def test_a_stopped_run_is_incomplete(tmp_path: Path) -> None:
    invocation, _ = invocation_and_tools(_read(tmp_path, "tool_exit_7", None))
    assert invocation["status"] == "incomplete"


def test_no_usage_report_leaves_the_status_unknown(tmp_path: Path) -> None:
    bundle = _read(tmp_path, "tool_exit_7", 0, usage=False)
    invocation, tools = invocation_and_tools(bundle)
    assert invocation["status"] == "unknown"
    assert len(tools) == 2
    gap = next(g for g in bundle["gaps"] if g["code"] == "invocation_status_unavailable")
    assert gap["detail"] == "the harness left no home/usage.json"


def test_no_session_store_is_no_invocation(tmp_path: Path) -> None:
    bundle = _read(tmp_path, "http_400", 0, store=False)
    assert bundle["records"] == []
    assert [g["code"] for g in bundle["gaps"]] == ["conversation_unavailable"]
    assert bundle["gaps"][0]["detail"] == "the harness left no home/.hermes/state.db"


# ------------------------------------------------------------------ the real program (slow)


@pytest.mark.slow
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_real_hermes_run_is_read_back(tmp_path: Path, api: Api) -> None:
    run = run_activation(installed("hermes"), TOOLS_THEN_TEXT, tmp_path, prompt=PROMPT, api=api)
    assert (run.episode.files.workdir / "answer.txt").read_text().strip() == "391"
    assert run.outside == []  # the registry's offline profile: only the gateway, no lookup
    invocation, tools = invocation_and_tools(run.bundle)
    assert invocation["status"] == "completed"
    assert [(t["tool_name"], t["status"]) for t in tools] == [
        ("terminal", "completed"),
        ("terminal", "failed"),
    ]
    assert {c["client_session_id"] for c in run.calls} == {"root"}
    assert len(run.calls) == 3 and all(c["dialect"] == api for c in run.calls)
    first = run.calls[0]["request"]
    offered = [t.get("function", t).get("name") for t in first["tools"]]
    assert offered == ["process", "terminal"]  # the registry's --toolsets terminal


@pytest.mark.slow
def test_real_hermes_http_400_is_a_failure_though_it_exits_0(tmp_path: Path) -> None:
    run = run_activation(installed("hermes"), TOOL_THEN_400, tmp_path, prompt=PROMPT)
    assert run.exit_code == 0
    invocation, tools = invocation_and_tools(run.bundle)
    assert invocation["status"] == "failed"
    assert [t["status"] for t in tools] == ["completed"]
    assert [c["status_code"] for c in run.calls] == [200, 400]  # a 400 is not retried


@pytest.mark.slow
def test_hermes_through_the_conformance_suite(tmp_path: Path) -> None:
    """All seven scenarios run and are judged. What is true of hermes-agent 0.19.0, whatever
    the verdicts: after the permanent 400 only its usage report says the run failed (it exits
    0), and the bundle records it; the command that exits 7 is a failed tool."""
    results = conformance_run(installed("hermes"), tmp_path / "run")
    invocation, _ = invocation_and_tools(scenario_bundle(results["model_error"]))
    assert invocation["status"] == "failed"
    _, tools = invocation_and_tools(scenario_bundle(results["tool_failure"]))
    assert [t["status"] for t in tools] == ["failed", "completed"]
