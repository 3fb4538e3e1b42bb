"""The suite end to end for the built-in ``simple_agent``, and what the runner makes
of an episode's files when they are tampered with (reference tests 77-89)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.config.loader import load_configs
from gym_assets.rollouts.harnesses.registry import Harness, load_harnesses
from gym_assets.suite.episode import read_harness, run_episode
from gym_assets.suite.judging import inspect_episode
from gym_assets.suite.run import SuiteSummary, TeCount, episode_command, run_suite
from gym_assets.suite.scenarios import SCENARIO_NAMES, get_scenario
from gym_assets.suite.supervise import Execution

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
EPISODE_FILES = (
    "runtime.json", "launch.json", "requests.jsonl", "episode.log", "witness.json",
    "rollouts.jsonl", "rollouts_failures.jsonl", "scenario_result.json",
    "health/quality_summary.json", "health/rollout_verdicts.jsonl",
)  # fmt: skip


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> SuiteSummary:
    output = tmp_path_factory.mktemp("conformance") / "run"
    return run_suite(
        load_configs(CONFIGS),
        harnesses=["simple_agent"],
        scenarios=None,
        output=output,
        timeout_s=60,
        jobs=2,
        configs=str(CONFIGS),
    )


REPO = Path(__file__).resolve().parents[2]


def test_simple_agent_passes_all_seven_scenarios_at_p0(suite: SuiteSummary) -> None:
    harness = suite.harnesses["simple_agent"]
    failing = {s.scenario: s.failing_checks for s in harness.scenarios if s.verdict != "fulfilled"}
    assert failing == {}
    assert [s.scenario for s in harness.scenarios] == list(SCENARIO_NAMES)
    assert all(not s.execution_failed for s in harness.scenarios)
    assert suite.exit_code == 0 and suite.verdict
    for label, count in harness.evidence.items():
        assert count.required == count.observed == count.passed, label


def test_the_output_layout(suite: SuiteSummary) -> None:
    out = suite.output
    summary = json.loads(suite.summary_path.read_text())
    assert summary["schema_version"] == "harness-probe-report/v1"
    assert summary["suite"] == "harness-p0-probes/v1" and summary["full_suite"]
    assert summary["suite_sha256"] == hashlib.sha256((out / "suite.json").read_bytes()).hexdigest()
    document = json.loads((out / "suite.json").read_text())
    assert document["version"] == "harness-p0-probes/v1" and len(document["scenarios"]) == 7
    assert "gym_assets/conformance/behavioral_checks.py" in document["checker_sources"]
    assert "gym_assets/suite/run.py" in document["runner_sources"]
    assert suite.report_md.is_file() and suite.report_html.is_file()
    assert "## simple_agent" in suite.report_md.read_text()
    captures = set()
    for name in SCENARIO_NAMES:
        episode = out / "simple_agent" / name
        for relative in EPISODE_FILES:
            assert (episode / relative).is_file(), f"{name}: {relative}"
        files = sorted(p.name for p in (episode / "capture").iterdir())
        assert files == ["0-0.capture.jsonl"]
        captures.add((episode / "capture" / files[0]).resolve())
        result = json.loads((episode / "scenario_result.json").read_text())
        assert result["scenario"] == name
        assert set(result["evidence"]) == set(get_scenario(name).evidence)
    assert len(captures) == 7  # parallel episodes share no capture file
    markers = sorted(p.name for p in (out / "simple_agent/tool_failure/workspace").iterdir())
    assert markers == ["tool-0.txt", "tool-1.txt"]


def test_a_rerun_into_the_same_output_exits_2_and_changes_nothing(suite: SuiteSummary) -> None:
    before = (suite.output / "suite.json").read_bytes()
    argv = ["conformance", "run", "--configs", str(CONFIGS), "--output", str(suite.output)]
    assert main([*argv, "--scenario", "tool_success"]) == 2
    assert (suite.output / "suite.json").read_bytes() == before


def _copy(suite: SuiteSummary, scenario: str, tmp_path: Path) -> Path:
    episode = tmp_path / scenario
    shutil.copytree(suite.output / "simple_agent" / scenario, episode)
    return episode


def _inspect(episode: Path, scenario: str = "verifier_failure", execution=None):
    return inspect_episode(episode, get_scenario(scenario), execution or Execution(0, False))


def _edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_a_duplicated_witness_attempt_fails_behavior_not_artifacts(suite, tmp_path) -> None:
    episode = _copy(suite, "verifier_failure", tmp_path)
    assert _inspect(episode).verdict == "fulfilled"
    _edit_json(episode / "witness.json", lambda w: w["attempts"].append(w["attempts"][0]))
    result = _inspect(episode)
    assert result.verdict == "not_fulfilled" and result.behavioral_status == "fail"
    assert "model.saved_exchanges" in result.failing_checks
    assert all(e["artifact_verdict"] == "fulfilled" for e in result.evidence.values())


def test_execution_status_is_kept_apart_from_the_verdict(suite, tmp_path) -> None:
    episode = _copy(suite, "verifier_failure", tmp_path)
    result = _inspect(episode, execution=Execution(1, True))
    assert result.verdict == "fulfilled" and result.execution_failed
    assert not any(c["id"].startswith("execution") for c in result.checks)
    saved = json.loads((episode / "scenario_result.json").read_text())
    assert saved["execution"] == {"returncode": 1, "timed_out": True}


def test_without_a_witness_every_behavioral_check_fails_or_is_not_applicable(suite, tmp_path):
    episode = _copy(suite, "verifier_failure", tmp_path)
    (episode / "witness.json").unlink()
    result = _inspect(episode)
    behavioral = [c for c in result.checks if c["kind"] == "behavioral"]
    assert behavioral and all(c["status"] in ("fail", "not_applicable") for c in behavioral)
    assert all(e["artifact_verdict"] == "fulfilled" for e in result.evidence.values())


def test_a_changed_tool_output_fails_the_tool_witness(suite, tmp_path) -> None:
    episode = _copy(suite, "tool_success", tmp_path)

    def change(record: dict) -> None:
        record["ng_trajectory"]["tool_calls"][0]["output"] = "something else"

    record = json.loads((episode / "rollouts.jsonl").read_text())
    change(record)
    (episode / "rollouts.jsonl").write_text(json.dumps(record) + "\n")
    result = _inspect(episode, "tool_success")
    assert "tools.witness_output" in result.failing_checks


def test_an_episode_that_cannot_be_inspected_is_an_execution_error(suite, tmp_path) -> None:
    episode = _copy(suite, "tool_success", tmp_path)
    (episode / "rollouts.jsonl").write_text("{not json\n")
    result = _inspect(episode, "tool_success")
    assert result.checker_error is not None and result.execution_failed
    assert result.verdict == "not_fulfilled"
    assert all(e["verdict"] == "not_fulfilled" for e in result.evidence.values())


def test_an_interrupted_run_writes_no_summary(tmp_path: Path) -> None:
    def interrupt(line: str) -> None:
        raise KeyboardInterrupt

    output = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        run_suite(
            load_configs(CONFIGS),
            harnesses=[],
            scenarios=["tool_success", "retry_500"],
            output=output,
            timeout_s=30,
            jobs=2,
            progress=interrupt,
        )
    assert (output / "suite.json").is_file()
    assert not (output / "conformance_summary.json").exists()


def test_a_legacy_run_harness_goes_through_the_legacy_relay(tmp_path: Path) -> None:
    harness = Harness(
        name="simple_agent",
        kind="builtin",
        agent_implementation="simple_agent",
        interface="legacy_run",
    )
    scenario = get_scenario("tool_failure")
    run_episode(harness, scenario, tmp_path, 30)
    launch = json.loads((tmp_path / "launch.json").read_text())
    environment = launch["config"]["conformance_environment"]["environment_servers"]
    assert list(environment) == ["legacy_agent"]
    assert json.loads((tmp_path / "runtime.json").read_text())["interface"] == "legacy_run"
    result = inspect_episode(tmp_path, scenario, Execution(0, False))
    assert (result.verdict, result.failing_checks) == ("fulfilled", [])


def test_the_command_line_runs_one_scenario(tmp_path: Path, capsys) -> None:
    output = tmp_path / "run"
    argv = ["conformance", "run", "--configs", str(CONFIGS), "--output", str(output)]
    harnesses = ["--harness", "simple_agent", "--harness", "minimal_agent"]  # need no install
    assert main([*argv, *harnesses, "--scenario", "tool_success", "--jobs", "1"]) == 0
    printed = capsys.readouterr().out
    assert "simple_agent: tool_success" in printed
    assert str(output / "conformance_report.md") in printed
    summary = json.loads((output / "conformance_summary.json").read_text())
    assert summary["full_suite"] is False and summary["verdict"] == "fulfilled"


def test_a_harness_that_cannot_start_is_an_execution_error(tmp_path: Path) -> None:
    configs = Path(shutil.copytree(CONFIGS, tmp_path / "configs"))
    with (configs / "harnesses.yaml").open("a") as handle:
        handle.write("  broken:\n    kind: builtin\n    agent_implementation: no_such_agent\n")
    summary = run_suite(
        load_configs(configs),
        harnesses=["broken"],
        scenarios=["tool_success"],
        output=tmp_path / "run",
        timeout_s=30,
    )
    assert summary.exit_code == 2 and not summary.verdict
    result = summary.harnesses["broken"].scenarios[0]
    assert result.execution.returncode == 1 and not result.exercised
    assert summary.harnesses["broken"].evidence["TE-1"] == TeCount(1, 0, 0)
    assert (
        "no responses_api_agents implementation named 'no_such_agent'"
        in (tmp_path / "run/broken/tool_success/episode.log").read_text()
    )
    assert "tool_success exit 1" in summary.report_md.read_text()


def test_every_bundled_harness_reaches_its_episode_process_unchanged(tmp_path: Path) -> None:
    """The episode process reads back the registry entry its command line carries: the strict
    registry takes a cli harness's install folder only as JSON text, so a cli harness whose
    entry did not survive the trip would run no scenario at all."""
    harnesses = load_harnesses(load_configs(REPO / "configs"))
    for name, harness in harnesses.items():
        argv = episode_command(harness, get_scenario("tool_success"), tmp_path, 30.0, False)
        assert read_harness(argv[argv.index("--harness-json") + 1]) == harness, name
