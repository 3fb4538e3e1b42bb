"""Turn a flat dataset row into an environment-neutral task with a stable ID.

A task is ``{"task_id": {"taskset", "task_id"}, "task_input": {...}}``. Its ID comes from the
row's own ID field when it has one, so editing a prompt never changes which task it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.records import keys

ID_FIELDS = ("task_id", "problem_id", "instance_id")
ROUTING_KEYS = frozenset({"agent_ref", "task_source", "skills_ref"})
ALREADY_MATERIALIZED = "Expected a flat dataset row, not an already materialized task"


class MaterializeError(ValueError):
    """A row cannot become a task (already a task, or no usable ID)."""


def is_materialized(row: Mapping[str, Any]) -> bool:
    """A row is a task when its ``task_id`` is a mapping and it has a ``task_input`` key.

    The test is purely structural so that a malformed ``task_input`` still takes the task path
    and fails validation loudly instead of being treated as a flat row.
    """
    return isinstance(row.get("task_id"), Mapping) and "task_input" in row


def own_id_field(row: Mapping[str, Any]) -> tuple[str, Any] | None:
    """``(field, value)`` of the row's own ID: the first non-null of ``ID_FIELDS``."""
    for key in ID_FIELDS:
        value = row.get(key)
        if value is not None:
            return key, value
    return None


def task_id_text(key: str, value: object) -> str:
    """An ID field's value as the task ID: Python's ``str()`` of it, as the reference does.

    A string stays as written; ``7`` -> ``"7"``, ``false`` -> ``"False"``, ``1.5`` -> ``"1.5"``,
    ``2.0`` -> ``"2.0"``, ``[1]`` -> ``"[1]"``, so a NeMo-prepared benchmark keeps the ids it
    was planned with (collation and plans report the rows that rely on this). A ``task_id``
    object is an already materialized task.
    """
    if isinstance(value, str):
        return value
    if key == "task_id" and isinstance(value, Mapping):
        raise MaterializeError(ALREADY_MATERIALIZED)
    return str(value)


def source_task_id(row: Mapping[str, Any]) -> str | None:
    """The row's own ID as text (see ``task_id_text``), or None when the row has none."""
    found = own_id_field(row)
    return None if found is None else task_id_text(*found)


@dataclass
class IdTypeTally:
    """The rows of one file whose own ID is not a string. Each is used as its ``str()``, so
    ``7`` and ``"7"`` (or ``true`` and ``"True"``) are one task: a report should say so."""

    converted: int = 0
    first_line: int | None = None

    def note(self, found: tuple[str, Any], line: int) -> None:
        """Count the ID ``(field, value)`` on ``line`` if it is not a string. A ``task_id``
        object is not an ID: it marks an already materialized task."""
        key, value = found
        if isinstance(value, str) or (key == "task_id" and isinstance(value, Mapping)):
            return
        self.converted += 1
        if self.first_line is None:
            self.first_line = line

    def warning(self, source: str | Path) -> str | None:
        """The note that IDs were used as their text, or None when every ID was a string."""
        if not self.converted:
            return None
        return (
            f"{source}: {_rows(self.converted)} a task ID that is not a string (first on line "
            f'{self.first_line}); each is used as Python\'s str() of it (7 -> "7", true -> '
            '"True", 1.5 -> "1.5"), so 7 and "7" are the same task. Write the IDs as strings to '
            "say so"
        )


def _rows(count: int) -> str:
    return "1 row has" if count == 1 else f"{count} rows have"


def task_input_of(row: Mapping[str, Any]) -> dict[str, Any]:
    """Every key of the row except routing keys and collector (``_ng_``) keys."""
    return {
        key: value
        for key, value in row.items()
        if key not in ROUTING_KEYS and not keys.is_collector_key(key)
    }


def _index_id(row: Mapping[str, Any], task_index: int | None) -> str:
    index = row.get(keys.TASK_INDEX, task_index)
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise MaterializeError(
            "A flat row without a task ID requires a non-negative task_index "
            f"(got {index!r}); give the row a task_id, problem_id or instance_id"
        )
    return str(index)


def stable_task_id(row: Mapping[str, Any]) -> str | None:
    """The task ID a row has wherever it stands: its own ID, else its own ``_ng_task_index``;
    None for a row whose ID would be its position."""
    task_id = source_task_id(row)
    if task_id is None and keys.TASK_INDEX in row:
        task_id = _index_id(row, None)
    return task_id


def materialize_task(
    row: Mapping[str, Any],
    taskset: object,
    task_index: int | None = None,
    *,
    own_id: str | None = None,
) -> dict[str, Any]:
    """Return the task for ``row`` under ``taskset``; the row itself is never modified.

    ID precedence: own ID field > the row's ``_ng_task_index`` (if the key is present) >
    ``task_index`` (the collation-wide position). Identity keys are not copied; the caller puts
    them back at the top level so that shards and retries keep their capture keys. A caller
    that has read the row's own ID and found a string passes it as ``own_id`` (collation reads
    it anyway, once per row). ``taskset`` is checked here, whatever a caller hands in.
    """
    if "task_input" in row or (own_id is None and isinstance(row.get("task_id"), Mapping)):
        raise MaterializeError(ALREADY_MATERIALIZED)  # a string own ID: task_id is no object
    if not isinstance(taskset, str) or not taskset:
        raise MaterializeError("taskset must be a non-empty string")
    task_id = own_id if own_id is not None else stable_task_id(row)
    if task_id is None:
        task_id = _index_id(row, task_index)
    if not task_id:
        raise MaterializeError("task ID must be a non-empty string")
    return {"task_id": {"taskset": taskset, "task_id": task_id}, "task_input": task_input_of(row)}
