"""The suite's former blind spots (issue 23), through real suite runs of command harnesses
that each have one defect (``harness_programs/misbehaving_agent.py``): a truncating and a
model-overriding harness fail the new checks and only them, a hang after the final answer and
a crash are named failures, a harness whose ``--version`` fails is one "unusable" line, and the
shipped negative control fails the P0 gate in every scenario."""

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
PROGRAM = REPO / "gym_assets_tests" / "rollouts" / "harness_programs" / "misbehaving_agent.py"
DEFECTS = ("truncate", "override", "crash", "hang")
BROKEN_VERSION = [sys.executable, "-c", "import sys; sys.exit(3)"]


@pytest.fixture(scope="module")
def defective(tmp_path_factory: pytest.TempPathFactory) -> SuiteSummary:
    """One ``tool_success`` episode of each defect, plus a harness whose --version fails."""
    configs = tmp_path_factory.mktemp("configs")
    registry: dict[str, dict] = {
        d: {"kind": "command", "command": [sys.executable, str(PROGRAM), str(EXAMPLE), d]}
        for d in DEFECTS
    }
    registry["no_version"] = {"kind": "command", "command": BROKEN_VERSION}
    (configs / "harnesses.yaml").write_text(json.dumps({"harnesses": registry}))
    return run_suite(
        load_configs(configs),
        harnesses=list(registry),
        scenarios=["tool_success"],
        output=tmp_path_factory.mktemp("conformance") / "run",
        timeout_s=20,  # the hang is stopped here; the others finish in seconds
        jobs=2,
        configs=str(configs),
    )


def _only(suite: SuiteSummary, harness: str) -> tuple[set[str], str | None]:
    (result,) = suite.harnesses[harness].scenarios
    return set(result.failing_checks), result.failure and result.failure.kind


def test_a_truncating_harness_fails_full_history_only(defective: SuiteSummary) -> None:
    assert _only(defective, "truncate") == ({"model.full_history"}, "checks_failed")


def test_a_model_overriding_harness_fails_task_params_only(defective: SuiteSummary) -> None:
    assert _only(defective, "override") == ({"model.task_params"}, "checks_failed")


def test_a_hang_after_the_final_answer_is_named(defective: SuiteSummary) -> None:
    (result,) = defective.harnesses["hang"].scenarios
    assert result.failure is not None and result.failure.kind == "hung_after_answer"
    assert result.failure.reason.endswith("Episode timed out")
    report = defective.report_md.read_text()
    assert "**tool_success** · `hung_after_answer`: the harness gave the final answer" in report


def test_a_crash_is_its_own_failure_kind(defective: SuiteSummary) -> None:
    (result,) = defective.harnesses["crash"].scenarios
    assert result.failure is not None and result.failure.kind == "agent_crashed"
    assert "killed by SIGSEGV" in result.failure.reason
    assert "`agent_crashed`: HarnessCrashed: the harness was killed by SIGSEGV" in (
        defective.report_md.read_text()
    )


def test_a_broken_version_is_one_unusable_line_not_a_failure_per_scenario(
    defective: SuiteSummary,
) -> None:
    harness = defective.harnesses["no_version"]
    assert harness.scenarios == [] and not harness.verdict
    assert harness.unusable is not None and "--version` failed" in harness.unusable
    assert not (defective.output / "no_version").exists()  # no episode ran
    summary = json.loads(defective.summary_path.read_text())
    assert summary["harnesses"]["no_version"]["verdict"] == "unusable"
    lines = defective.report_md.read_text().splitlines()
    section = lines[lines.index("## no_version") :]
    assert [line for line in section[:4] if line] == [
        "## no_version",
        f"**Harness unusable**: {harness.unusable}",
    ]


def test_the_negative_control_fails_the_p0_gate_everywhere(tmp_path: Path) -> None:
    """As shipped in configs/harnesses.yaml: nothing it does may pass."""
    suite = run_suite(
        load_configs(REPO / "configs"),
        harnesses=["negative_control"],
        scenarios=None,
        output=tmp_path / "run",
        timeout_s=30,
        jobs=2,
        configs=str(REPO / "configs"),
    )
    control = suite.harnesses["negative_control"]
    assert not control.verdict and suite.exit_code == 1
    assert [s.scenario for s in control.scenarios] == list(SCENARIO_NAMES)
    for scenario in control.scenarios:
        assert scenario.verdict == "not_fulfilled", scenario.scenario
        assert "model.reached" in scenario.failing_checks, scenario.scenario
    summary = json.loads(suite.summary_path.read_text())
    assert summary["harnesses"]["negative_control"]["verdict"] == "not_fulfilled"
