"""A harness's runs under the data root (one directory per run, the latest named only once it
finished) and the P0 gate over the latest run's summary, without Dagster."""

import json
from pathlib import Path

import pytest

from gym_assets.errors import UserError
from gym_assets.outputs.markers import dir_marker
from gym_assets.suite.harness_runs import (
    LATEST,
    LatestRun,
    failing_by_scenario,
    latest_run,
    p0_gate,
    run_in_new_dir,
)
from gym_assets.workspace import Workspace


@pytest.fixture
def roots(tmp_path):
    return Workspace(tmp_path / "configs", tmp_path / "data")


def _scenario(name, failing=(), verdict=None, returncode=0, timed_out=False):
    return {
        "scenario": name,
        "verdict": verdict or ("not_fulfilled" if failing else "fulfilled"),
        "failing_checks": list(failing),
        "execution": {"returncode": returncode, "timed_out": timed_out},
    }


def _latest(*scenarios) -> LatestRun:
    verdict = "fulfilled" if all(s["verdict"] == "fulfilled" for s in scenarios) else "x"
    harnesses = {"h": {"scenarios": list(scenarios), "verdict": verdict}}
    return LatestRun(directory=Path("run-1"), suite={}, summary={"harnesses": harnesses})


def _finished(output):
    output.mkdir()
    (output / "suite.json").write_text("{}")
    (output / "conformance_summary.json").write_text(json.dumps({"harnesses": {}}))
    return output


def test_each_run_gets_its_own_directory_and_becomes_the_latest(roots):
    runs = roots.data / "conformance" / "harnesses" / "h"
    assert latest_run(runs) is None
    first = run_in_new_dir(runs, roots, "run-1", _finished)
    run_in_new_dir(runs, roots, "run-2", _finished)
    assert dir_marker(runs) == "conformance-runs"
    assert first.is_dir() and json.loads((runs / LATEST).read_text()) == {"run": "run-2"}
    latest = latest_run(runs)
    assert latest is not None and latest.directory == runs / "run-2"


def test_an_interrupted_run_leaves_the_previous_latest(roots):
    runs = roots.data / "conformance" / "harnesses" / "h"
    run_in_new_dir(runs, roots, "run-1", _finished)

    def interrupted(output):
        output.mkdir()
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_in_new_dir(runs, roots, "run-2", interrupted)
    assert json.loads((runs / LATEST).read_text()) == {"run": "run-1"}


def test_a_run_id_must_be_a_directory_name(roots):
    with pytest.raises(UserError, match="a run id names a directory"):
        run_in_new_dir(roots.data / "h", roots, "../escape", _finished)


def test_a_damaged_pointer_is_one_clear_error(roots, tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / LATEST).write_text('["run-1"]')
    with pytest.raises(UserError, match=r'latest.json: must be \{"run": "<run id>"\}'):
        latest_run(runs)


def test_the_gate_names_failing_checks_and_episodes_that_did_not_finish():
    latest = _latest(
        _scenario("tool_success"),
        _scenario("tool_failure", ["tools.witness_status", "tools.status"]),
        _scenario("retry_429", verdict="not_fulfilled", timed_out=True),
        _scenario("retry_500", returncode=1),
    )
    assert failing_by_scenario(latest.harness("h")) == {
        "tool_failure": ["tools.witness_status", "tools.status"],
        "retry_429": ["process: timed out"],
        "retry_500": ["process: exit 1"],
    }
    gate = p0_gate(latest, "h")
    assert not gate.passed
    assert gate.description == (
        "P0 not met in 3 scenario(s): tool_failure: tools.witness_status, tools.status; "
        "retry_429: process: timed out; retry_500: process: exit 1"
    )


def test_the_gate_passes_only_on_a_finished_clean_run():
    assert p0_gate(_latest(_scenario("tool_success")), "h").passed
    never = p0_gate(None, "h")
    assert not never.passed and never.description == "no finished conformance run of h yet"


def test_a_negative_control_passes_its_gate_by_failing_every_scenario():
    caught = _latest(_scenario("tool_success", ["tools.present"]), _scenario("retry_429", ["x"]))
    gate = p0_gate(caught, "h", expected_to_fail=True)
    assert gate.passed
    assert gate.description.startswith("expected to fail, and did: P0 not met in 2 scenario(s)")
    assert not p0_gate(caught, "h").passed  # the same run, for an ordinary harness


def test_a_negative_control_that_meets_the_gate_anywhere_fails_it():
    blind = _latest(_scenario("tool_success"), _scenario("retry_429", ["x"]))
    gate = p0_gate(blind, "h", expected_to_fail=True)
    assert not gate.passed
    assert gate.description == (
        "expected to fail the P0 gate in every scenario, but met it in 1: tool_success; "
        "the suite no longer catches a harness that does nothing"
    )
    never = p0_gate(None, "h", expected_to_fail=True)  # no run: nothing is known, no pass
    assert not never.passed and never.description == "no finished conformance run of h yet"
