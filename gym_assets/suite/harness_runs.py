"""Conformance suite runs kept per harness under the data root, their P0 gate, and the matrix of
every harness's latest run (what the Dagster conformance assets publish).

    <data_root>/conformance/harnesses/<harness>/   a harness's runs (product conformance-runs)
        <run_id>/                                  one ``run_suite`` output, never reused
        latest.json                                {"run": "<run_id>"}: the last finished run
    <data_root>/conformance/matrix/                conformance_matrix.{md,html,json}

A suite run refuses an output that exists, so that stale rollouts can never qualify a new run:
each run gets a directory of its own, named by its run id, and ``latest.json`` names it once
the run has written its summary (an interrupted run leaves the previous latest in place). The
gate and the matrix read the latest run's summary; the matrix is rendered by the suite's own
report code, one table per harness.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from gym_assets.check_outcome import CheckOutcome
from gym_assets.errors import UserError
from gym_assets.fileio import atomic_write_text, read_json_file
from gym_assets.limits import MAX_JSON_DOCUMENT_BYTES
from gym_assets.outputs.claims import claimed_dir, rebuilt_dir
from gym_assets.outputs.markers import CONFORMANCE_RUNS, CONFORMANCE_SWEEP
from gym_assets.outputs.targets import Roots, Target
from gym_assets.suite import report
from gym_assets.suite.run import NOT_RUN, SUITE_FILE, SUMMARY_FILE, UNAVAILABLE, UNUSABLE
from gym_assets.suite.scenarios import SCENARIO_NAMES, SUITE_ID

LATEST = "latest.json"
MATRIX_MD = "conformance_matrix.md"
MATRIX_HTML = "conformance_matrix.html"
MATRIX_JSON = "conformance_matrix.json"
MATRIX_SCHEMA = "harness-conformance-matrix/v1"
_RUN_ID = re.compile(r"^[A-Za-z0-9_-]+$")
Result = TypeVar("Result")


def run_in_new_dir(runs: Path, roots: Roots, run_id: str, run: Callable[[Path], Result]) -> Result:
    """``run(runs/<run_id>)`` under the lock of the harness's runs; then name it the latest."""
    if not _RUN_ID.match(run_id):
        raise UserError(f"a run id names a directory: letters, digits, '_' or '-' (got {run_id!r})")
    with claimed_dir(Target.of(runs, CONFORMANCE_RUNS, roots)):
        result = run(runs / run_id)
        atomic_write_text(runs / LATEST, json.dumps({"run": run_id}) + "\n")
    return result


@dataclass(frozen=True)
class LatestRun:
    directory: Path
    suite: Mapping[str, Any]
    summary: Mapping[str, Any]

    def harness(self, name: str) -> Mapping[str, Any]:
        try:
            return self.summary["harnesses"][name]
        except KeyError:
            raise UserError(
                f"holds no result for harness '{name}'", path=self.directory / SUMMARY_FILE
            ) from None


def latest_run(runs: Path) -> LatestRun | None:
    """The run ``latest.json`` names, or None before the harness's first finished run."""
    pointer = runs / LATEST
    if not pointer.is_file():
        return None
    document = read_json_file(pointer, "latest-run pointer", MAX_JSON_DOCUMENT_BYTES)
    name = document.get("run") if isinstance(document, dict) else None
    if not isinstance(name, str) or not _RUN_ID.match(name):
        raise UserError(
            'must be {"run": "<run id>"}; materialize harness_conformance again', path=pointer
        )
    directory = runs / name
    return LatestRun(
        directory,
        read_json_file(directory / SUITE_FILE, "conformance suite", MAX_JSON_DOCUMENT_BYTES),
        read_json_file(directory / SUMMARY_FILE, "conformance summary", MAX_JSON_DOCUMENT_BYTES),
    )


def process_problem(result: Mapping[str, Any]) -> str | None:
    """How an episode failed to run, or None when it ran to completion with exit 0."""
    if result.get("checker_error"):
        return f"checker error ({result['checker_error']})"
    execution = result["execution"]
    if execution["timed_out"]:
        return "timed out"
    if execution["returncode"] != 0:
        return f"exit {execution['returncode']}"
    return None


def failing_by_scenario(harness: Mapping[str, Any]) -> dict[str, list[str]]:
    """Scenario → what failed in it: its failing checks, and how its process ended if badly."""
    failing: dict[str, list[str]] = {}
    for result in harness["scenarios"]:
        problems = list(result["failing_checks"])
        process = process_problem(result)
        if process is not None:
            problems.append(f"process: {process}")
        if result["verdict"] != "fulfilled" and not problems:
            problems.append("not fulfilled")
        if problems:
            failing[result["scenario"]] = problems
    return failing


def p0_gate(latest: LatestRun | None, harness: str, expected_to_fail: bool = False) -> CheckOutcome:
    """Every scenario of the harness's latest suite run meets the P0 gate (every applicable P0
    check passes) and its episode ran to completion. For a negative control (a harness the
    registry marks ``expected_to_fail``) it is turned round: every scenario must fail the gate,
    and one that meets it means the suite has stopped catching a harness that does nothing."""
    outcome = _gate(latest, harness)
    if not expected_to_fail or latest is None or latest.harness(harness)["verdict"] in NOT_RUN:
        return outcome
    met = [s["scenario"] for s in latest.harness(harness)["scenarios"]]
    met = [scenario for scenario in met if scenario not in outcome.metadata.get("failing", {})]
    if met:
        return CheckOutcome(
            False,
            f"expected to fail the P0 gate in every scenario, but met it in {len(met)}: "
            f"{', '.join(met)}; the suite no longer catches a harness that does nothing",
            outcome.metadata,
        )
    return CheckOutcome(True, f"expected to fail, and did: {outcome.description}", outcome.metadata)


def _gate(latest: LatestRun | None, harness: str) -> CheckOutcome:
    if latest is None:
        return CheckOutcome(False, f"no finished conformance run of {harness} yet")
    entry = latest.harness(harness)
    status = entry["verdict"]
    if status in NOT_RUN:  # it ran no scenario: nothing failed, nothing passed
        metadata = {"run": str(latest.directory), status: entry[status]}
        return CheckOutcome(False, f"{status}: {entry[status]}", metadata)
    failing = failing_by_scenario(entry)
    metadata: dict[str, Any] = {"run": str(latest.directory), "failing": failing}
    if not failing:
        scenarios = len(latest.harness(harness)["scenarios"])
        return CheckOutcome(True, f"all {scenarios} scenarios meet the P0 gate", metadata)
    named = "; ".join(f"{scenario}: {', '.join(checks)}" for scenario, checks in failing.items())
    return CheckOutcome(False, f"P0 not met in {len(failing)} scenario(s): {named}", metadata)


@dataclass(frozen=True)
class Matrix:
    directory: Path
    document: Mapping[str, Any]
    markdown: str


def _table(name: str, latest: LatestRun | None, unavailable: str | None) -> report.HarnessTable:
    if latest is None and unavailable is not None:
        return report.harness_table(name, False, [], timeout_s=0, unavailable=unavailable)
    if latest is None:  # the reference's "No check results available", ✗ in every scenario
        never = tuple(SCENARIO_NAMES)
        return replace(
            report.harness_table(name, False, [], timeout_s=0),
            scenarios=never,
            verdicts=("not_fulfilled",) * len(never),
            process=("not run",) * len(never),
        )
    entry = latest.harness(name)
    return report.harness_table(
        name,
        entry["verdict"] == "fulfilled",
        entry["scenarios"],
        timeout_s=float(latest.suite["timeout"]),
        unavailable=entry.get(UNAVAILABLE),
        unusable=entry.get(UNUSABLE),
    )


def _entry(latest: LatestRun | None, name: str, unavailable: str | None) -> dict[str, Any]:
    if latest is None:
        never = {"run": None, "verdict": "not_run", "scenarios": {}, "failing": {}}
        return (
            never
            if unavailable is None
            else never | {"verdict": UNAVAILABLE, UNAVAILABLE: unavailable}
        )
    entry = latest.harness(name)
    found = {
        "run": str(latest.directory),
        "verdict": entry["verdict"],
        "scenarios": {s["scenario"]: s["verdict"] for s in entry["scenarios"]},
        "failing": failing_by_scenario(entry),
    }
    return found | {status: entry[status] for status in NOT_RUN if status in entry}


def publish_matrix(
    runs_by_harness: Mapping[str, Path],
    directory: Path,
    roots: Roots,
    unavailable: Mapping[str, str] | None = None,
) -> Matrix:
    """Every harness's latest run in one report (markdown, HTML, JSON), swapped in whole; a
    harness never run that cannot run here (``unavailable``: name → why) shows as unavailable."""
    latest = {name: latest_run(runs) for name, runs in runs_by_harness.items()}
    why = dict(unavailable or {})
    tables = tuple(_table(name, run, why.get(name)) for name, run in latest.items())
    verdict = bool(tables) and all(table.verdict for table in tables)
    document = report.Report(suite=SUITE_ID, verdict=verdict, tables=tables)
    markdown = report.render_markdown(document)
    summary = {
        "schema_version": MATRIX_SCHEMA,
        "suite": SUITE_ID,
        "verdict": "fulfilled" if verdict else "not_fulfilled",
        "harnesses": {name: _entry(run, name, why.get(name)) for name, run in latest.items()},
    }
    target = Target.of(directory, CONFORMANCE_SWEEP, roots)
    with rebuilt_dir(target) as staging:
        atomic_write_text(staging / MATRIX_MD, markdown)
        atomic_write_text(staging / MATRIX_HTML, report.render_html(document))
        atomic_write_text(staging / MATRIX_JSON, json.dumps(summary, indent=2) + "\n")
    return Matrix(target.path, summary, markdown)


def scenario_rows(harness: Mapping[str, Any]) -> Sequence[tuple[str, str, str, str]]:
    """``(scenario, verdict, process, failing checks)`` per scenario, for a summary table."""
    return [
        (
            r["scenario"],
            r["verdict"],
            process_problem(r) or "exit 0",
            ", ".join(r["failing_checks"]) or "-",
        )
        for r in harness["scenarios"]
    ]
