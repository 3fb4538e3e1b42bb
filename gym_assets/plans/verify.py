"""Compare a plan with the tasks a run would dispatch (or did dispatch).

Tasks come from a collated taskset (materialized rows, one per repeat) or from a benchmark's
prepared rows, turned into tasks the way the plan was. A plan with ``selected_task_ids`` only
speaks for those ids, so tasks outside the selection are not compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gym_assets.errors import UserError
from gym_assets.fileio import iter_jsonl
from gym_assets.json_shapes import is_mapping
from gym_assets.limits import MAX_PRODUCT_NESTING
from gym_assets.plans.canonical import digest
from gym_assets.plans.model import (
    Plan,
    PlannedTask,
    TaskId,
    TaskKey,
    describe_validation_error,
)
from gym_assets.tasks.materialize import source_task_id, task_input_of


def _by_id(keys: Iterable[tuple[str, str]]) -> tuple[TaskKey, ...]:
    return tuple(TaskKey(*key) for key in sorted(keys, key=lambda key: (key[1], key[0])))


@dataclass(frozen=True)
class PlanDiff:
    """What differs between a plan and a set of tasks (each list sorted by task id)."""

    added: tuple[TaskKey, ...]  # tasks present but not planned
    removed: tuple[TaskKey, ...]  # planned tasks that are absent
    changed: tuple[TaskKey, ...]  # planned and present, but an input hashes differently
    inconsistent: tuple[TaskKey, ...] = ()  # repeats of one task whose inputs disagree
    unchecked_rows: int = 0  # flat rows: no task envelope, so nothing to compare

    @property
    def matches(self) -> bool:
        return not (
            self.added or self.removed or self.changed or self.inconsistent or self.unchecked_rows
        )


def verify_plan(plan: Plan, tasks: Iterable[PlannedTask | None]) -> PlanDiff:
    """Diff ``plan`` against ``tasks``; ``None`` stands for a row that cannot be checked."""
    planned = plan.digests
    selection = None if plan.selected_task_ids is None else set(plan.selected_task_ids)
    # Plain tuple keys: exact tuples of strings are untracked by the garbage collector.
    seen: dict[tuple[str, str], str] = {}
    inconsistent: set[tuple[str, str]] = set()
    unchecked = 0
    for task in tasks:
        if task is None:
            unchecked += 1
            continue
        if selection is not None and task.task_id not in selection:
            continue
        key = (task.taskset, task.task_id)
        if seen.setdefault(key, task.digest) != task.digest:
            inconsistent.add(key)
    return PlanDiff(
        added=_by_id(key for key in seen if key not in planned),
        removed=_by_id(key for key in planned if key not in seen),
        changed=_by_id(
            key
            for key, found in seen.items()
            if key in planned and (found != planned[key] or key in inconsistent)
        ),
        inconsistent=_by_id(inconsistent),
        unchecked_rows=unchecked,
    )


def _task_of(row: Mapping[str, Any]) -> PlannedTask:
    task_id = TaskId.model_validate(row["task_id"])
    task_input = row["task_input"]
    if not isinstance(task_input, dict):
        raise ValueError(f"task_input must be a JSON object, got {type(task_input).__name__}")
    return PlannedTask(task_id.taskset, task_id.task_id, digest(task_input))


def _flat_task(row: Mapping[str, Any], taskset: str | None) -> PlannedTask | None:
    """A flat row as the task it stands for: its own id and its input without routing keys.

    A flat dataset's rows are dispatched as they are, so what a run sends is exactly the input
    the plan hashed; only rows without an id (or with no taskset to file them under) are
    uncheckable.
    """
    own_id = source_task_id(row)
    if taskset is None or own_id is None:
        return None
    return PlannedTask(taskset, own_id, digest(task_input_of(row)))


def taskset_tasks(
    path: str | Path, flat_taskset: str | None = None
) -> Iterator[PlannedTask | None]:
    """The tasks of a collated taskset file, streaming.

    Flat rows (a dataset without a taskset) are filed under ``flat_taskset`` (the plan's
    taskset for such a benchmark is its name); without one, each yields ``None``.
    """
    for line, row in iter_jsonl(path, max_depth=MAX_PRODUCT_NESTING):
        has_envelope = is_mapping(row.get("task_id")), "task_input" in row
        if not any(has_envelope):
            yield _flat_task(row, flat_taskset)
            continue
        if not all(has_envelope):
            raise UserError(
                "a task row needs both a task_id object and a task_input; this row has only one",
                path=path,
                line=line,
            )
        try:
            yield _task_of(row)
        except ValidationError as exc:
            detail = describe_validation_error(exc, "task_id")
            raise UserError(f"malformed task ({detail})", path=path, line=line) from None
        except ValueError as exc:
            raise UserError(f"malformed task: {exc}", path=path, line=line) from None
