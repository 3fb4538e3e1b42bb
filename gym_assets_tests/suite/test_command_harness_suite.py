"""Acceptance for ``command`` harnesses, through the conformance runner: the example
harness of docs/harnesses.md passes all seven scenarios at P0, and a deliberately broken one
(``gym_assets_tests/rollouts/harness_programs/broken_agent.py``) fails exactly the checks its
defects must fail."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gym_assets.config.loader import load_configs
from gym_assets.suite.run import SuiteSummary, run_suite
from gym_assets.suite.scenarios import SCENARIO_NAMES

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "harnesses" / "minimal_agent.py"
BROKEN = REPO / "gym_assets_tests" / "rollouts" / "harness_programs" / "broken_agent.py"
OWNERSHIP = {"ownership.call_owner", "ownership.gap"}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> SuiteSummary:
    """One run of both harnesses, registered in a configs tree of their own (the example as
    configs/harnesses.yaml registers it, the broken one beside it)."""
    configs = tmp_path_factory.mktemp("configs")
    registry = {
        "minimal_agent": {"kind": "command", "command": [sys.executable, str(EXAMPLE)]},
        "broken_agent": {"kind": "command", "command": [sys.executable, str(BROKEN), str(EXAMPLE)]},
    }
    (configs / "harnesses.yaml").write_text(json.dumps({"harnesses": registry}))
    return run_suite(
        load_configs(configs),
        harnesses=list(registry),
        scenarios=None,
        output=tmp_path_factory.mktemp("conformance") / "run",
        timeout_s=60,
        jobs=2,
        configs=str(configs),
    )


def _failing(suite: SuiteSummary, harness: str) -> dict[str, set[str]]:
    return {s.scenario: set(s.failing_checks) for s in suite.harnesses[harness].scenarios}


def test_the_example_harness_passes_all_seven_scenarios(suite: SuiteSummary) -> None:
    assert _failing(suite, "minimal_agent") == {name: set() for name in SCENARIO_NAMES}
    assert suite.harnesses["minimal_agent"].verdict
    for label, count in suite.harnesses["minimal_agent"].evidence.items():
        assert count.required == count.observed == count.passed, label


def test_every_episode_ran_in_the_harness_sandbox(suite: SuiteSummary) -> None:
    """Sandboxed, with only the gateway reached: each record says bwrap, and each activation's
    network log holds gateway connections only."""
    for name in SCENARIO_NAMES:
        episode = suite.output / "minimal_agent" / name
        (record,) = (json.loads(line) for line in (episode / "rollouts.jsonl").open())
        records = record["ng_agent_observations"]["records"]
        (sandbox,) = (r for r in records if r["kind"] == "sandbox")
        assert sandbox["provider"] == "bwrap" and sandbox["outcome"] in ("completed", "failed")
        (log,) = (episode / "harness").glob("*/*/network.jsonl")
        events = [json.loads(line)["event"] for line in log.open()]
        assert events[0] == "sandbox_ready" and events.count("gateway_connection") >= 1
        assert set(events[1:]) == {"gateway_connection"}, name


def test_the_broken_harness_fails_exactly_what_its_defects_break(suite: SuiteSummary) -> None:
    """Dropped retries leave the failed attempts unowned (TE-8) wherever an attempt fails; the
    usage it zero-fills is caught where no call answered (model_error); its exit code, 0 on a
    400 too, is process status and no check."""
    assert _failing(suite, "broken_agent") == {
        "tool_success": set(),
        "tool_failure": set(),
        "usage_omitted": set(),
        "retry_429": OWNERSHIP,
        "retry_500": OWNERSHIP,
        "model_error": OWNERSHIP | {"health.rollout_token_count_mismatch"},
        "verifier_failure": set(),
    }
    scenarios = suite.harnesses["broken_agent"].scenarios
    assert all(s.execution.returncode == 0 and not s.execution_failed for s in scenarios)
    assert not suite.harnesses["broken_agent"].verdict and suite.exit_code == 1
