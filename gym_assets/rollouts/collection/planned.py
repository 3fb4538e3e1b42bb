"""The inventory as the end of a run reads it: each planned rollout's key, environment server
and agent, and each task's identity and input digest, without the input rows.

The summaries, the per-task table and the report need no rollout's input, only which task it
is and where it went. A rollout's row is about 2 KB on ``units`` and far more on a benchmark
with long prompts; this view is about 100 bytes a rollout and 250 a task (traced), so a merge
of a partition's shards reads it from the inventory file line by line (``read_planned``)
instead of holding the rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from gym_assets.plans.canonical import digest
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets.rollouts.collection.inputs import RolloutInput

Key = tuple[int, int]


class Keyed(Protocol):
    """A planned rollout of either view: a ``RolloutInput`` or a ``PlannedRollout``."""

    @property
    def key(self) -> Key: ...


@dataclass(frozen=True, slots=True)
class PlannedRollout:
    task: int
    rollout: int
    server: str
    agent: str | None  # the name in its input row's ``agent_ref``, if any

    @property
    def key(self) -> Key:
        return self.task, self.rollout


@dataclass(frozen=True, slots=True)
class PlannedTask:
    """A task as its first rollout (by key) has it."""

    server: str
    taskset: str
    task_id: str
    input_digest: str


@dataclass(frozen=True)
class Planned:
    rollouts: list[PlannedRollout]  # in inventory order
    tasks: dict[int, PlannedTask]

    @classmethod
    def of(cls, inputs: Iterable[RolloutInput]) -> Planned:
        """The view of ``inputs`` (a list in memory, or rows streamed from a file). Each task's
        input is hashed once, from its first rollout by key."""
        names: dict[str, str] = {}  # one string object per server, taskset or agent name
        rollouts: list[PlannedRollout] = []
        tasks: dict[int, PlannedTask] = {}
        first: dict[int, int] = {}
        for item in inputs:
            task, rollout = item.key
            server = names.setdefault(item.server, item.server)
            agent = agent_name(item.row)
            agent = agent if agent is None else names.setdefault(agent, agent)
            rollouts.append(PlannedRollout(task, rollout, server, agent))
            if task not in first or rollout < first[task]:
                first[task] = rollout
                taskset = names.setdefault(item.taskset, item.taskset)
                tasks[task] = PlannedTask(server, taskset, item.task_id, input_digest(item))
        return cls(rollouts, tasks)


def read_planned(files: RunFiles, flat_taskset: str) -> Planned:
    """The view of the run's inventory file, read a line at a time (check it first)."""
    return Planned.of(
        RolloutInput.of(row, flat_taskset) for row in read_jsonl(files.materialized_inputs)
    )


def agent_name(row: dict[str, Any]) -> str | None:
    ref = row.get("agent_ref")
    name = ref.get("name") if isinstance(ref, dict) else None
    return name if isinstance(name, str) else None


def input_digest(item: RolloutInput) -> str:
    """The SHA-256 of the rollout's input as a plan pins it."""
    try:
        return digest(item.task_input())
    except ValueError:  # an input no plan could hash either: it pairs with nothing
        return "unhashable"
