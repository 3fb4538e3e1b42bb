"""Checks over a finished run's files, as plain functions (the Dagster asset checks call them)."""

from __future__ import annotations

from collections import defaultdict

from gym_assets.check_outcome import CheckOutcome
from gym_assets.limits import DEFAULT_MAX_FAILURE_RATE, DEFAULT_MAX_MASKED_SHARE
from gym_assets.plans.model import Plan
from gym_assets.records import keys
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets.rollouts.collection.inputs import RolloutInput
from gym_assets.rollouts.collection.ledger import Key
from gym_assets.rollouts.collection.metrics import latest_rows, summarize
from gym_assets.rollouts.collection.plan_gate import PlanGate

MAX_LISTED = 20


def _inventory(files: RunFiles, flat_taskset: str) -> list[RolloutInput]:
    return [RolloutInput.of(row, flat_taskset) for row in read_jsonl(files.materialized_inputs)]


def _ids(keys: set[tuple[str, str]] | list[tuple[str, str]]) -> list[str]:
    return [task_id for _, task_id in sorted(keys, key=lambda k: (k[1], k[0]))][:MAX_LISTED]


def rollouts_cover_plan(plan: Plan, files: RunFiles, flat_taskset: str) -> CheckOutcome:
    """Every planned task was run, and each of its rollouts ended in a record or a failure."""
    rollouts: dict[tuple[str, str], list[Key]] = defaultdict(list)
    for item in _inventory(files, flat_taskset):
        rollouts[item.task_key].append(item.key)
    ended = set(latest_rows(read_jsonl(files.records))) | set(
        latest_rows(read_jsonl(files.failures))
    )
    planned = {(t.taskset, t.task_id) for t in plan.tasks}
    never_run = planned - set(rollouts)
    unfinished = {task for task in planned & set(rollouts) if not set(rollouts[task]) <= ended}
    passed = not never_run and not unfinished
    description = (
        f"all {len(planned)} planned tasks have an outcome"
        if passed
        else f"{len(never_run)} planned tasks never run, {len(unfinished)} with rollouts "
        "that have no outcome yet (resume the run)"
    )
    return CheckOutcome(
        passed,
        description,
        {"planned": len(planned), "never_run": _ids(never_run), "unfinished": _ids(unfinished)},
    )


def inputs_match_plan(plan: Plan, files: RunFiles, flat_taskset: str) -> CheckOutcome:
    """Every materialized input hashes to its task's digest in the plan."""
    gate = PlanGate(plan)
    inputs = _inventory(files, flat_taskset)
    for item in inputs:
        gate.refusal(item)
    drifted = gate.drifted()
    tasks = len({item.task_key for item in inputs})
    description = (
        f"the inputs of all {tasks} tasks match the plan"
        if not drifted
        else f"{len(drifted)} of {tasks} tasks differ from the plan or are not in it"
    )
    return CheckOutcome(not drifted, description, {"tasks": tasks, "differ": _ids(drifted)})


def failure_rate(
    files: RunFiles, flat_taskset: str, threshold: float = DEFAULT_MAX_FAILURE_RATE
) -> CheckOutcome:
    """At most ``threshold`` of the rollouts failed (an advisory)."""
    inputs = _inventory(files, flat_taskset)
    totals = summarize(
        inputs, latest_rows(read_jsonl(files.records)), latest_rows(read_jsonl(files.failures))
    )
    failed = totals.outcomes.failed
    rate = failed / len(inputs) if inputs else 0.0
    return CheckOutcome(
        rate <= threshold,
        f"{failed} of {len(inputs)} rollouts failed ({rate:.1%}; threshold {threshold:.0%})",
        {"failed": failed, "rate": rate, "failure_kinds": dict(totals.failure_kinds)},
        warn_only=True,
    )


def masked_share(
    files: RunFiles, flat_taskset: str, threshold: float = DEFAULT_MAX_MASKED_SHARE
) -> CheckOutcome:
    """At most ``threshold`` of the rollouts were masked. Masking is for failures outside the
    model's answers (our machinery, or a model endpoint that refused the calls); a mean that
    leaves out more than a few rollouts does not measure the benchmark."""
    inputs = _inventory(files, flat_taskset)
    totals = summarize(
        inputs, latest_rows(read_jsonl(files.records)), latest_rows(read_jsonl(files.failures))
    )
    masked = totals.outcomes.masked
    share = masked / len(inputs) if inputs else 0.0
    kinds = ", ".join(f"{kind} {count}" for kind, count in totals.masked_kinds.items())
    description = (
        f"{masked} of {len(inputs)} rollouts were masked ({share:.1%}; threshold {threshold:.0%})"
    )
    return CheckOutcome(
        share <= threshold,
        f"{description}; by kind: {kinds}" if kinds else description,
        {"masked": masked, "share": share, "masked_kinds": dict(totals.masked_kinds)},
    )


def evidence_present(files: RunFiles) -> CheckOutcome:
    """Every success record carries an ``ng_trajectory`` with at least one model call."""
    records = 0
    missing: list[str] = []
    for record in read_jsonl(files.records):
        records += 1
        trajectory = record.get(keys.TRAJECTORY)
        if not (isinstance(trajectory, dict) and trajectory.get("model_calls")):
            missing.append(f"{record.get(keys.TASK_INDEX)}-{record.get(keys.ROLLOUT_INDEX)}")
    return CheckOutcome(
        not missing,
        f"{records - len(missing)} of {records} records carry trajectory evidence",
        {"records": records, "without_evidence": missing[:MAX_LISTED]},
    )
