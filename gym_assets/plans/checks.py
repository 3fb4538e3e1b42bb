"""Checks over a written plan file, as plain functions (the Dagster asset checks call them)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import jsonschema
from pydantic import ValidationError

from gym_assets.check_outcome import CheckOutcome
from gym_assets.errors import UserError
from gym_assets.plans.model import (
    Plan,
    TaskKey,
    describe_validation_error,
    plan_json_schema,
    validate_plan,
)
from gym_assets.plans.pipeline import collated_tasks, plan_benchmark
from gym_assets.plans.render import plan_text
from gym_assets.plans.verify import verify_plan
from gym_assets.tasks.catalog import Benchmark

MAX_LISTED = 20


def _ids(keys: Iterable[TaskKey]) -> list[str]:
    return [key.task_id for key in keys][:MAX_LISTED]


def plan_schema_valid(path: Path) -> CheckOutcome:
    """The plan file validates against the v1 JSON Schema and the strict v1 model."""
    try:
        document = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        return CheckOutcome(False, f"{path} is not readable JSON: {type(exc).__name__}")
    errors = sorted(
        # The stub's second, deprecated overload of iter_errors is unannotated.
        jsonschema.Draft202012Validator(plan_json_schema()).iter_errors(document),  # pyright: ignore[reportUnknownMemberType]
        key=lambda error: list(error.absolute_path),
    )
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "(root)"
        return CheckOutcome(
            False, f"{len(errors)} schema errors; first at {where}", {"errors": len(errors)}
        )
    try:
        plan = validate_plan(document)
    except ValidationError as exc:
        return CheckOutcome(False, describe_validation_error(exc))
    return CheckOutcome(
        True, f"valid {document['schema']} with {len(plan.tasks)} tasks", {"tasks": len(plan.tasks)}
    )


def plan_deterministic(path: Path, benchmark: Benchmark) -> CheckOutcome:
    """Rendering the parsed plan, and rebuilding it from the rows, give the file's exact bytes."""
    written = path.read_bytes()
    plan = validate_plan(json.loads(written))
    if plan_text(plan).encode("utf-8") != written:
        return CheckOutcome(False, "re-rendering the parsed plan changes its bytes")
    try:
        rebuilt = plan_benchmark(benchmark, plan.selected_task_ids)
    except UserError as exc:
        return CheckOutcome(False, f"the plan cannot be rebuilt: {exc.render()}")
    if plan_text(rebuilt).encode("utf-8") != written:
        diff = verify_plan(plan, iter(rebuilt.tasks))
        return CheckOutcome(
            False,
            "rebuilding the plan from the same rows gives different bytes",
            {"changed": _ids(diff.changed), "added": _ids(diff.added)},
        )
    return CheckOutcome(True, f"{len(written)} bytes, identical when re-rendered and rebuilt")


def plan_covers_taskset(plan: Plan, collated: Path) -> CheckOutcome:
    """Every task of the collated taskset is planned, with the digest of its exact input."""
    diff = verify_plan(plan, collated_tasks(plan, collated))
    metadata = {
        "planned": len(plan.tasks),
        "not_in_plan": _ids(diff.added),
        "missing_from_taskset": _ids(diff.removed),
        "digest_differs": _ids(diff.changed),
        "unchecked_rows": diff.unchecked_rows,
    }
    if diff.matches:
        return CheckOutcome(
            True, f"all {len(plan.tasks)} planned tasks match the taskset", metadata
        )
    counts = (
        f"{len(diff.added)} not in plan, {len(diff.removed)} missing from taskset, "
        f"{len(diff.changed)} with a different digest, {diff.unchecked_rows} unchecked"
    )
    return CheckOutcome(False, f"plan and taskset differ: {counts}", metadata)


def plan_drift(previous: Plan | None, current: Plan) -> CheckOutcome:
    """What changed since the previous plan of this benchmark (an advisory, never blocking)."""
    if previous is None:
        return CheckOutcome(True, "first plan of this benchmark", {"tasks": len(current.tasks)})
    diff = verify_plan(previous, iter(current.tasks))
    metadata = {
        "added": _ids(diff.added),
        "removed": _ids(diff.removed),
        "changed": _ids(diff.changed),
        "previous_tasks": len(previous.tasks),
        "tasks": len(current.tasks),
    }
    if not (diff.added or diff.removed or diff.changed):
        return CheckOutcome(
            True, "no task added, removed or changed since the previous plan", metadata
        )
    return CheckOutcome(
        False,
        f"since the previous plan: {len(diff.added)} added, {len(diff.removed)} removed, "
        f"{len(diff.changed)} changed",
        metadata,
        warn_only=True,
    )
