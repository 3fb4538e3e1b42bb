"""Checks over a finished run's files, as plain functions (the Dagster asset checks call them)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from gym_assets.check_outcome import CheckOutcome
from gym_assets.limits import DEFAULT_MAX_UNMEASURED_SHARE
from gym_assets.plans.model import Plan
from gym_assets.records import keys
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets.rollouts.collection.inputs import RolloutInput
from gym_assets.rollouts.collection.ledger import Key
from gym_assets.rollouts.collection.manifest import planned_keys
from gym_assets.rollouts.collection.metrics import row_key, summarize, summary_rows
from gym_assets.rollouts.collection.plan_gate import PlanGate

MAX_LISTED = 20


def _inventory(files: RunFiles, flat_taskset: str) -> Iterator[RolloutInput]:
    """The run's planned rollouts, a line at a time: a check holds none of their rows."""
    return (RolloutInput.of(row, flat_taskset) for row in read_jsonl(files.materialized_inputs))


def _ids(keys: set[tuple[str, str]] | list[tuple[str, str]]) -> list[str]:
    return [task_id for _, task_id in sorted(keys, key=lambda k: (k[1], k[0]))][:MAX_LISTED]


def rollouts_cover_plan(plan: Plan, files: RunFiles, flat_taskset: str) -> CheckOutcome:
    """Every planned task was run, and each of its rollouts ended in a record or a failure."""
    rollouts: dict[tuple[str, str], list[Key]] = defaultdict(list)
    for item in _inventory(files, flat_taskset):
        rollouts[item.task_key].append(item.key)
    ended = {row_key(row) for path in (files.records, files.failures) for row in read_jsonl(path)}
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
    seen: set[tuple[str, str]] = set()
    for item in _inventory(files, flat_taskset):
        gate.refusal(item)
        seen.add(item.task_key)
    drifted, tasks = gate.drifted(), len(seen)
    description = (
        f"the inputs of all {tasks} tasks match the plan"
        if not drifted
        else f"{len(drifted)} of {tasks} tasks differ from the plan or are not in it"
    )
    return CheckOutcome(not drifted, description, {"tasks": tasks, "differ": _ids(drifted)})


def unmeasured_share(
    files: RunFiles, flat_taskset: str, threshold: float = DEFAULT_MAX_UNMEASURED_SHARE
) -> CheckOutcome:
    """At most ``threshold`` of the planned rollouts went unmeasured: masked, failed or never
    run. Each is a failure of our machinery (or the model endpoint's), never the model's, and a
    mean that leaves out more than a few does not measure the benchmark; the description names
    the kinds that cost the measurements."""
    totals = summarize(
        planned_keys(files),
        summary_rows(read_jsonl(files.records)),
        summary_rows(read_jsonl(files.failures)),
    )
    outcomes, kinds = totals.outcomes, totals.unmeasured_kinds
    share = outcomes.unmeasured_share
    description = (
        f"{outcomes.unmeasured} of {outcomes.planned} planned rollouts unmeasured ({share:.1%}; "
        f"budget {threshold:.0%}): {totals.headline}"
    )
    named = ", ".join(f"{kind} {count}" for kind, count in kinds.items())
    return CheckOutcome(
        share <= threshold,
        f"{description}; by kind: {named}" if named else description,
        {"unmeasured": outcomes.unmeasured, "share": share, "unmeasured_kinds": kinds},
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
