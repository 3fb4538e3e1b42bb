"""Judge one finished episode: artifact, behavioral and health checks over what the episode
left on disk, and ``scenario_result.json``.

The record is the one normal row of ``rollouts.jsonl`` (read strictly); the witness is
``witness.json``; the health engine reads ``rollouts.jsonl`` and the failure sidecar and leaves
its reports in ``health/``. All rows go through one P0 gate. How the process ended (return
code, timeout) is kept apart as execution status and never becomes a check. A scenario that
fails also gets one named cause (``ScenarioFailure``), the line a report leads with: the
sidecar's failure kind and text when the episode left one (a harness that answered and then
never exited is ``hung_after_answer``, not a bare timeout; a crash is ``agent_crashed``),
else a timeout, a missing record, or the failing checks. When a record
exists, the standalone bundle inspector also publishes its content-addressed report under
``evidence/``. If inspecting itself fails, the result says so (``checker_error``) and the run
counts it as an execution error.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gym_assets.conformance.behavioral_checks import behavioral_source
from gym_assets.conformance.bundle import iter_bundle_rows
from gym_assets.conformance.checker import check_record, select_record
from gym_assets.conformance.engine import Kind, Row, Status
from gym_assets.conformance.health import (
    HealthInput,
    health_source,
    judge_rollout,
    read_health_inputs,
)
from gym_assets.conformance.inspection import InspectionOptions, inspect_bundle
from gym_assets.conformance.result import TeStatus, te_verdicts
from gym_assets.conformance.witness import Witness, load_witness
from gym_assets.errors import UserError
from gym_assets.fileio import atomic_write_text
from gym_assets.records import keys
from gym_assets.suite.layout import (
    EVIDENCE_DIR,
    FAILURES_FILE,
    HEALTH_DIR,
    HEALTH_SUMMARY,
    HEALTH_VERDICTS,
    LAUNCH_FILE,
    RECORDS_FILE,
    RESULT_FILE,
    RUNTIME_FILE,
    WITNESS_FILE,
)
from gym_assets.suite.scenarios import Scenario
from gym_assets.suite.supervise import Execution

Verdict = Literal["fulfilled", "not_fulfilled"]
# What "could not inspect" covers: input, I/O and decoding failures of our own reading.
INSPECTION_ERRORS = (UserError, OSError, ValueError, TypeError, KeyError, AttributeError,
                     RecursionError)  # fmt: skip


TIMEOUT_KIND = "agent_timeout"
HUNG_AFTER_ANSWER = "hung_after_answer"


@dataclass(frozen=True)
class ScenarioFailure:
    """Why a scenario failed, in one line: a failure kind and its reason."""

    kind: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "reason": self.reason}


def scenario_failure(
    execution: Execution,
    witness: Witness | None,
    sidecar: Mapping[str, Any] | None,
    record: Mapping[str, Any] | None,
    failing: int,
) -> ScenarioFailure | None:
    """The cause a failed scenario leads with (None when it passed and exited cleanly): the
    failure row's, else the record's own when the model's output failed the rollout (a
    measured record scored 0 with its ``failure_kind``)."""
    if sidecar:
        kind = sidecar.get(keys.FAILURE_KIND) or sidecar.get(keys.FAILURE_CLASS)
        said = str(sidecar.get(keys.FAILURE_MESSAGE) or "")
    elif record and (failing or execution.timed_out or execution.failed):
        kind = record.get("failure_kind")
        said = str(record.get("failure_reason") or "")
    else:
        kind, said = None, ""
    timed_out = execution.timed_out or kind == TIMEOUT_KIND
    if timed_out and witness is not None and witness.finished:
        reason = "the harness gave the final answer, then did not exit"
        return ScenarioFailure(HUNG_AFTER_ANSWER, f"{reason}: {said}" if said else reason)
    if kind:
        return ScenarioFailure(str(kind), said)
    if execution.timed_out:
        return ScenarioFailure("episode_timed_out", "the episode ran past its budget")
    if record is None:
        return ScenarioFailure("no_record", "the episode left no rollout record or failure row")
    if failing:
        return ScenarioFailure("checks_failed", f"{failing} checks failed")
    if execution.failed:
        return ScenarioFailure("episode_exit", f"the episode exited {execution.returncode}")
    return None


@dataclass
class ScenarioResult:
    scenario: str
    exercised: bool
    verdict: Verdict
    failing_checks: list[str]
    execution: Execution
    result_path: Path
    issues: list[str] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    behavioral_status: Literal["pass", "fail"] = "fail"
    delivery: Literal["rollout", "failure_record", "missing"] = "missing"
    model_attempts: int = 0
    evidence: dict[str, dict[str, str]] = field(default_factory=dict)
    artifact_report: str | None = None
    health_report: str | None = None
    hashes: dict[str, str] = field(default_factory=dict)
    checker_error: str | None = None
    failure: ScenarioFailure | None = None

    @property
    def execution_failed(self) -> bool:
        return self.execution.failed or self.checker_error is not None

    def te_verdict(self, label: str) -> str | None:
        entry = self.evidence.get(label)
        return entry["verdict"] if entry else None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "scenario": self.scenario,
            "exercised": self.exercised,
            "verdict": self.verdict,
            "failing_checks": self.failing_checks,
            "issues": self.issues,
            "checks": self.checks,
            "behavioral_status": self.behavioral_status,
            "execution": self.execution.to_json(),
            "delivery": self.delivery,
            "model_attempts": self.model_attempts,
            "evidence": self.evidence,
            "artifact_report": self.artifact_report,
            "health_report": self.health_report,
            "hashes": self.hashes,
            "failure": None if self.failure is None else self.failure.to_json(),
        }
        if self.checker_error is not None:
            data["checker_error"] = self.checker_error
        return data


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _delivery(directory: Path, record: Any) -> Literal["rollout", "failure_record", "missing"]:
    if record is not None:
        return "rollout"
    failures = directory / FAILURES_FILE
    return "failure_record" if failures.is_file() and failures.stat().st_size else "missing"


def write_health_reports(directory: Path, inputs: list[HealthInput]) -> Path:
    """``health/rollout_verdicts.jsonl`` (one line per input row) and ``quality_summary.json``
    (verdict counts per check), as the health engine judged the episode's rollout files."""
    health = directory / HEALTH_DIR
    health.mkdir(exist_ok=True)
    lines, tally = [], {}
    for item in inputs:
        verdicts = judge_rollout(item)
        lines.append(json.dumps({"source": item.source, "verdicts": verdicts}, sort_keys=True))
        for check_id, verdict in verdicts.items():
            tally.setdefault(check_id, Counter())[verdict] += 1
    atomic_write_text(health / HEALTH_VERDICTS, "".join(line + "\n" for line in lines))
    summary = {
        "rollouts": len(inputs),
        "checks": {check_id: dict(sorted(c.items())) for check_id, c in sorted(tally.items())},
    }
    atomic_write_text(health / HEALTH_SUMMARY, json.dumps(summary, indent=2) + "\n")
    return health / HEALTH_SUMMARY


def _te_summary(rows: tuple[Row, ...], scenario: Scenario) -> dict[str, dict[str, str]]:
    scope = scenario.scope()
    every = te_verdicts(rows, scope)
    artifact = te_verdicts((r for r in rows if r.kind in (Kind.SCHEMA, Kind.SEMANTIC)), scope)
    return {
        label: {
            "verdict": str(every[label].verdict),
            "artifact_verdict": str(artifact[label].verdict),
        }
        for label in scenario.evidence
    }


def inspect_episode(directory: Path, scenario: Scenario, execution: Execution) -> ScenarioResult:
    """Judge ``directory`` and write its ``scenario_result.json``."""
    try:
        result = _inspect(directory, scenario, execution)
    except INSPECTION_ERRORS as exc:
        result = ScenarioResult(
            scenario=scenario.name,
            exercised=False,
            verdict="not_fulfilled",
            failing_checks=[],
            execution=execution,
            result_path=directory / RESULT_FILE,
            issues=["could not inspect this episode's artifacts"],
            evidence={
                label: {"verdict": "not_fulfilled", "artifact_verdict": "not_fulfilled"}
                for label in scenario.evidence
            },
            checker_error=type(exc).__name__,
            failure=ScenarioFailure(
                "checker_error",
                f"could not inspect this episode's artifacts ({type(exc).__name__})",
            ),
        )
    atomic_write_text(result.result_path, json.dumps(result.to_json(), indent=2) + "\n")
    return result


def _inspect(directory: Path, scenario: Scenario, execution: Execution) -> ScenarioResult:
    witness = load_witness(directory / WITNESS_FILE)
    records_file = directory / RECORDS_FILE
    rows = [row for _, row in iter_bundle_rows(records_file)] if records_file.is_file() else []
    record = select_record(rows)
    inputs = list(read_health_inputs(directory))
    health_report = write_health_reports(directory, inputs)
    scope = scenario.scope()
    checked = check_record(
        record,
        scope,
        source=f"{RECORDS_FILE}:1",
        extra_checks=(
            behavioral_source(witness, scenario),
            health_source(inputs, scenario.health_expectations),
        ),
    )
    artifact_report = None
    if record is not None:
        inspection = inspect_bundle(
            records_file,
            directory / EVIDENCE_DIR,
            InspectionOptions(scope=scope),
        )
        artifact_report = str(
            (inspection.report_dir / "evidence_summary.json").relative_to(directory)
        )
    failing = [row for row in checked.rows if row.status is Status.FAIL]
    behavioral = [row for row in checked.rows if row.kind is Kind.BEHAVIORAL]
    hashes = {
        name: _sha256(directory / name)
        for name in (RECORDS_FILE, FAILURES_FILE, WITNESS_FILE, RUNTIME_FILE, LAUNCH_FILE)
        if (directory / name).is_file()
    }
    hashes[HEALTH_SUMMARY] = _sha256(health_report)
    sidecars = [i.record for i in inputs if i.source.startswith(f"{FAILURES_FILE}:") and i.record]
    return ScenarioResult(
        scenario=scenario.name,
        exercised=record is not None,
        verdict="fulfilled" if checked.verdict is TeStatus.FULFILLED else "not_fulfilled",
        failing_checks=[row.id for row in failing],
        execution=execution,
        result_path=directory / RESULT_FILE,
        issues=[reason for row in failing for reason in row.reasons],
        checks=[row.to_dict() for row in checked.rows],
        behavioral_status="fail" if any(r.status is Status.FAIL for r in behavioral) else "pass",
        delivery=_delivery(directory, record),
        model_attempts=0 if witness is None else len(witness.attempts),
        evidence=_te_summary(checked.rows, scenario),
        artifact_report=artifact_report,
        health_report=str(health_report.relative_to(directory)),
        hashes=hashes,
        failure=scenario_failure(
            execution,
            witness,
            sidecars[-1] if sidecars else None,
            record if isinstance(record, Mapping) else None,
            len(failing),
        ),
    )
