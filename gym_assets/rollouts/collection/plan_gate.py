"""The plan gate: a task is dispatched only if its input hashes to its digest in the plan.

The plan (``data_root/plans/<benchmark>/plan.json``) pins what each task's input must be. Every
task a run is about to dispatch is hashed the way the plan was (``plans.canonical.digest`` of
the task input; for flat rows, of the row without routing and collector keys) and compared. A
task whose digest differs, or which the plan does not list, is refused as a terminal
``plan_mismatch`` failure — re-running cannot fix it — unless the run allows drift.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gym_assets.plans.canonical import digest
from gym_assets.plans.model import Plan
from gym_assets.rollouts.collection.inputs import RolloutInput

PLAN_MISMATCH = "plan_mismatch"


@dataclass
class PlanGate:
    """Decides per task index (each task hashed once, however many rollouts it has)."""

    plan: Plan
    allow_drift: bool = False
    _verdicts: dict[int, tuple[tuple[str, str], str | None]] = field(default_factory=dict)

    def refusal(self, item: RolloutInput) -> str | None:
        """Why ``item`` must not be dispatched, or None. Drift is always detected, and
        refused unless ``allow_drift``."""
        index = item.key[0]
        if index not in self._verdicts:
            self._verdicts[index] = (item.task_key, self._compare(item))
        return None if self.allow_drift else self._verdicts[index][1]

    def drifted(self) -> list[tuple[str, str]]:
        """Tasks seen so far whose input differs from the plan (or that it lacks), sorted."""
        return sorted({key for key, reason in self._verdicts.values() if reason is not None})

    def _compare(self, item: RolloutInput) -> str | None:
        reason = departure(self.plan, item)
        if reason is None:
            return None
        return f"{reason}; re-plan the benchmark or pass --allow-plan-drift"


def departure(plan: Plan, item: RolloutInput) -> str | None:
    """How ``item``'s input departs from what ``plan`` pins, or None when it is as pinned."""
    taskset, task_id = item.task_key
    expected = plan.digests.get(item.task_key)
    selected = plan.selected_task_ids
    if expected is None or (selected is not None and task_id not in selected):
        return (
            f"task {task_id} (taskset {taskset}) is not in the plan of benchmark '{plan.benchmark}'"
        )
    try:
        found = digest(item.task_input())
    except ValueError as exc:
        return f"task {task_id} (taskset {taskset}) cannot be hashed: {exc}"
    if found != expected:
        return (
            f"task {task_id} (taskset {taskset}) input digest {found} differs from the plan's "
            f"{expected} (the taskset changed since it was planned)"
        )
    return None
