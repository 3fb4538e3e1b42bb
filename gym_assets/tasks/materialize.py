"""Turn a flat dataset row into an environment-neutral task with a stable ID.

A task is ``{"task_id": {"taskset", "task_id"}, "task_input": {...}}``. Its ID comes from the
row's own ID field when it has one, so editing a prompt never changes which task it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ID_FIELDS = ("task_id", "problem_id", "instance_id")
ROUTING_KEYS = frozenset({"agent_ref", "task_source", "skills_ref"})
COLLECTOR_PREFIX = "_ng_"
IDENTITY_KEYS = ("_ng_task_index", "_ng_rollout_index", "_ng_rollout_id", "_ng_attempt_index")


class MaterializeError(ValueError):
    """A row cannot become a task (already a task, or no usable ID)."""


def is_materialized(row: Mapping[str, Any]) -> bool:
    """A row is a task when its ``task_id`` is a mapping and it has a ``task_input`` key.

    The test is purely structural so that a malformed ``task_input`` still takes the task path
    and fails validation loudly instead of being treated as a flat row.
    """
    return isinstance(row.get("task_id"), Mapping) and "task_input" in row


def source_task_id(row: Mapping[str, Any]) -> str | None:
    """The row's own ID: the first non-null of ``task_id``, ``problem_id``, ``instance_id``."""
    for field in ID_FIELDS:
        value = row.get(field)
        if value is not None:
            return str(value)
    return None


def task_input_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """Every key of the row except routing keys and collector (``_ng_``) keys."""
    return {
        key: value
        for key, value in row.items()
        if key not in ROUTING_KEYS and not key.startswith(COLLECTOR_PREFIX)
    }


def _index_id(row: Mapping[str, Any], task_index: int | None) -> str:
    index = row.get("_ng_task_index", task_index)
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise MaterializeError(
            "A flat row without a task ID requires a non-negative task_index "
            f"(got {index!r}); give the row a task_id, problem_id or instance_id"
        )
    return str(index)


def materialize_task(
    row: Mapping[str, Any], taskset: str, task_index: int | None = None
) -> dict[str, Any]:
    """Return the task for ``row`` under ``taskset``; the row itself is never modified.

    ID precedence: own ID field > the row's ``_ng_task_index`` (if the key is present) >
    ``task_index`` (the collation-wide position). Identity keys are not copied; the caller puts
    them back at the top level so that shards and retries keep their capture keys.
    """
    if "task_input" in row or isinstance(row.get("task_id"), Mapping):
        raise MaterializeError("Expected a flat dataset row, not an already materialized task")
    if not isinstance(taskset, str) or not taskset:
        raise MaterializeError("taskset must be a non-empty string")
    task_id = source_task_id(row)
    if task_id is None:
        task_id = _index_id(row, task_index)
    if not task_id:
        raise MaterializeError("task ID must be a non-empty string")
    return {"task_id": {"taskset": taskset, "task_id": task_id}, "task_input": task_input_of(row)}
