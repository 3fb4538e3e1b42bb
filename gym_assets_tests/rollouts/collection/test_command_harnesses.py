"""Harness interfaces and runtime versions, and command harnesses in real runs (the example
harness of docs/harnesses.md through ``run_rollouts`` with a scripted gateway)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from gym_assets.conformance.checker import check_record
from gym_assets.conformance.scope import EvidenceScope
from gym_assets.errors import UserError
from gym_assets.rollouts.collection.files import read_jsonl
from gym_assets.rollouts.gateway import ModelGateway, ScriptedUpstream
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses import registry as harnesses
from gym_assets.rollouts.harnesses.registry import (
    Harness,
    load_harnesses,
    resolve_interface,
    runtime_version,
    with_harness,
)
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import RunResult, run_rollouts
from gym_assets.sandbox import SandboxPolicy
from gym_assets_tests.rollouts.collection.conftest import REPO, Products

ENVIRONMENTS = "environment_servers"
AGENTS = "responses_api_agents"
EXAMPLE = REPO / "examples" / "harnesses" / "minimal_agent.py"
BROKEN = Path(__file__).parents[1] / "harness_programs" / "broken_agent.py"
# The first arith task is (483 + 446) * 88: two shell calls (the second fails), a 429 retried
# twice and a 500 retried once, then the answer.
SCRIPT = [
    {"tool": "echo first > tool-0.txt; cat tool-0.txt"},
    {"error": 429, "times": 2},
    {"tool": "echo second; exit 7"},
    {"error": 500, "times": 1},
    {"text": "81752"},
]


class Sessions:
    async def seed_session(self) -> None: ...
    async def activate(self) -> None: ...
    async def close_session(self) -> None: ...


class InheritsSessions(Sessions):
    pass


class RunOnly:
    async def run(self) -> None: ...


class SessionsAndRun(Sessions, RunOnly):
    pass


@pytest.mark.parametrize(
    ("asked", "cls", "chosen"),
    [
        ("session", InheritsSessions, "session"),  # inherited handlers count
        ("session", SessionsAndRun, "session"),
        ("session", RunOnly, "legacy_run"),  # the fallback: no session handlers
        ("legacy_run", SessionsAndRun, "legacy_run"),
    ],
)
def test_the_interface_prefers_sessions_and_falls_back_to_run(monkeypatch, asked, cls, chosen):
    monkeypatch.setattr(harnesses, "agent_class", lambda implementation: cls)
    harness = Harness(name="h", kind="builtin", agent_implementation="x", interface=asked)
    assert resolve_interface(harness) == chosen


@pytest.mark.parametrize(("asked", "cls"), [("session", object), ("legacy_run", Sessions)])
def test_an_agent_without_the_handlers_it_needs_is_refused(monkeypatch, asked, cls):
    monkeypatch.setattr(harnesses, "agent_class", lambda implementation: cls)
    harness = Harness(name="h", kind="builtin", agent_implementation="x", interface=asked)
    with pytest.raises(UserError, match="harness 'h': agent implementation 'x' has no"):
        resolve_interface(harness)


def test_the_bundled_agents_use_sessions(products):
    registry = load_harnesses(products.catalog.loaded)
    names = {"simple_agent", "minimal_agent", "codex", "pi", "opencode", "hermes", "mini_swe_agent"}
    assert names <= set(registry)
    assert {resolve_interface(h) for h in registry.values()} == {"session"}


def test_legacy_run_puts_a_relay_in_front_of_the_agent(products):
    config = products.catalog.loaded.data
    harness = Harness(
        name="h", kind="builtin", agent_implementation="simple_agent", interface="legacy_run"
    )
    swapped, _ = with_harness(config, harness, ["arith_environment"])
    relay = {
        "agent_server": {"type": AGENTS, "name": "arith_simple_agent"},
        "resources_server": {"type": "resources_servers", "name": "arith_resources"},
    }
    assert swapped["arith_environment"] == {ENVIRONMENTS: {"legacy_agent": relay}}
    assert "single_agent_turn_legacy" in config["arith_environment"][ENVIRONMENTS]


def test_a_command_harness_carries_its_command_and_wall_time(products, tmp_path):
    config = products.catalog.loaded.data
    harness = load_harnesses(products.catalog.loaded)["minimal_agent"]
    swapped, _ = with_harness(config, harness, ["arith_environment"], episodes_dir=tmp_path)
    settings = swapped["arith_simple_agent"][AGENTS]["command_agent"]
    assert settings["command"] == list(harness.command) and settings["harness"] == "minimal_agent"
    assert settings["wall_time_s"] == harness.timeout_s == 120
    assert settings["episodes_dir"] == str(tmp_path) and settings["max_steps"] == 6


def _command(tmp_path: Path, source: str, **fields: Any) -> Harness:
    path = tmp_path / "prog.py"
    path.write_text(source)
    return Harness(name="prog", kind="command", command=(sys.executable, str(path)), **fields)


def test_runtime_versions(tmp_path):
    sandbox = SandboxPolicy()
    assert runtime_version(
        Harness(name="b", kind="builtin", agent_implementation="simple_agent"), sandbox
    ).startswith("gym-assets ")
    assert runtime_version(_command(tmp_path, "raise SystemExit(1)", version="v9"), sandbox) == "v9"
    example = Harness(name="m", kind="command", command=(sys.executable, str(EXAMPLE)))
    assert runtime_version(example, sandbox) == "minimal_agent 1.0"
    with pytest.raises(UserError, match=r"--version` failed \(exit code 1: boom\)"):
        runtime_version(_command(tmp_path, "import sys; sys.exit('boom')"), sandbox)
    with pytest.raises(UserError, match="printed nothing"):
        runtime_version(_command(tmp_path, "# nothing"), sandbox)


def _run(
    products: Products, out: Path, harness: str | Harness, script: list | None, limit: int = 1
) -> RunResult:
    """Arith's first ``limit`` tasks with ``harness`` (a registry name or an entry), on the
    scripted upstream with ``script``, or on the reference upstream without one."""
    products.plan("arith")
    if isinstance(harness, str):
        harness = load_harnesses(products.catalog.loaded)[harness]
    upstream = upstream_config(mode="reference" if script is None else "scripted")
    return run_rollouts(
        products.catalog, "arith", harness, out, upstream, RunOptions(limit=limit, script=script)
    )


def test_the_example_harness_keeps_every_attempt_and_tool(products, tmp_path):
    result = _run(products, tmp_path / "run", "minimal_agent", SCRIPT)
    assert result.harness == {
        "harness": "minimal_agent",
        "kind": "command",
        "interface": "session",
        "runtime_version": "minimal_agent 1.0",
    }
    (record,) = read_jsonl(result.files.records)
    assert record["reward"] == 1.0
    trajectory = record["ng_trajectory"]
    statuses = [c["response_metadata"]["status_code"] for c in trajectory["model_calls"]]
    assert statuses == [200, 429, 429, 200, 500, 200] and not trajectory["gaps"]
    assert [t["status"] for t in trajectory["tool_calls"]] == ["completed", "failed"]
    assert [t["output"] for t in trajectory["tool_calls"]] == ["first\n", "second\n"]
    result_of = check_record(record, EvidenceScope())
    assert result_of.verdict == "fulfilled", [c.id for c in result_of.rows if c.status == "fail"]


def test_the_example_harness_on_a_permanent_model_error(products, tmp_path):
    """It exits 1 after the 400; the gateway's capture, not the exit, makes the activation
    fail, and the run still keeps a judged, masked record owning the failed attempt."""
    result = _run(products, tmp_path / "run", "minimal_agent", [{"error": 400, "times": 9}])
    (record,) = read_jsonl(result.files.records)
    assert record["mask_sample"] is True and record["failure_kind"] == "agent_request_failed"
    calls = record["ng_trajectory"]["model_calls"]
    assert [c["response_metadata"]["status_code"] for c in calls] == [400]
    scope = EvidenceScope(tools=False, verifier=False, steps=False)
    assert check_record(record, scope).verdict == "fulfilled"


def test_legacy_run_runs_the_agents_own_episode(products, tmp_path):
    harness = Harness(
        name="simple_agent", kind="builtin", agent_implementation="simple_agent",
        interface="legacy_run",
    )  # fmt: skip
    result = _run(products, tmp_path / "run", harness, None, limit=2)
    assert result.harness["interface"] == "legacy_run"
    records = list(read_jsonl(result.files.records))
    assert [r["_ng_result_type"] for r in records] == ["legacy_agent"] * 2
    assert all(r["reward"] == 1.0 and r["ng_trajectory"]["turns"] for r in records)


def test_a_command_harness_with_a_real_model_runs_in_the_sandbox_without_an_opt_in(
    products, tmp_path, monkeypatch
):
    """The harness sandbox bounds what a real model's commands can reach, so no
    ``--allow-unsandboxed`` is needed: the run's record says the harness ran in bubblewrap.
    (The "real model" is another gateway, scripted, behind the ``openai`` upstream.)"""
    products.plan("arith")
    monkeypatch.setenv("GYM_ASSETS_TEST_KEY", "sk-test")
    harness = load_harnesses(products.catalog.loaded)["minimal_agent"]
    with ModelGateway(ScriptedUpstream(SCRIPT), tmp_path / "remote-captures") as remote:
        upstream = upstream_config(
            mode="openai", base_url=remote.url_for("remote"), api_key_env="GYM_ASSETS_TEST_KEY"
        )
        result = run_rollouts(
            products.catalog, "arith", harness, tmp_path / "run", upstream, RunOptions(limit=1)
        )
    (record,) = read_jsonl(result.files.records)
    assert record["reward"] == 1.0
    records = record["ng_agent_observations"]["records"]
    assert [r["provider"] for r in records if r["kind"] == "sandbox"] == ["bwrap"]


def test_the_broken_harness_fails_exactly_the_ownership_checks(products, tmp_path):
    """It drops the retried attempts (TE-8 must fail); its zeroed usage and exit code reach no
    artifact check (token counts are the gateway's, and the usage was reported here)."""
    command = (sys.executable, str(BROKEN), str(EXAMPLE))
    broken = Harness(name="broken_agent", kind="command", command=command)
    result = _run(products, tmp_path / "run", broken, SCRIPT)
    assert result.harness["runtime_version"] == "broken_agent 0.1"
    (record,) = read_jsonl(result.files.records)
    failed = {c.id for c in check_record(record, EvidenceScope()).rows if c.status == "fail"}
    assert failed == {"ownership.call_owner", "ownership.gap"}
    gaps = record["ng_trajectory"]["gaps"]
    assert [g["code"] for g in gaps] == ["model_call_ownership_unavailable"] * 3


def test_a_failing_activation_stays_visible_and_switches_nothing(products, tmp_path):
    """The program cannot run (its script is missing): the episode fails at the agent stage,
    with the reason, and the run stays on the session interface (no fallback to the relay)."""
    missing = Harness(
        name="missing", kind="command", command=(sys.executable, str(tmp_path / "nope.py")),
        version="1",
    )  # fmt: skip
    result = _run(products, tmp_path / "run", missing, [{"text": "81752"}])
    assert result.harness["interface"] == "session"
    assert not list(read_jsonl(result.files.records))  # nothing to grade
    (row,) = read_jsonl(result.files.failures)
    assert row["_ng_result_type"] == "single_agent_turn_legacy"
    assert row["_ng_failure_stage"] == "agent" and row["_ng_failure_terminal"] is True
    assert (
        "HarnessWroteNothing: the harness wrote no usable observations.json (exit code 2)"
        in (row["_ng_failure_message"])
    )
