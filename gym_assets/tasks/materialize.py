"""Turn a flat dataset row into an environment-neutral task with a stable ID.

A task is ``{"task_id": {"taskset", "task_id"}, "task_input": {...}}``. Its ID comes from the
row's own ID field when it has one, so editing a prompt never changes which task it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gym_assets.records import keys

ID_FIELDS = ("task_id", "problem_id", "instance_id")
ROUTING_KEYS = frozenset({"agent_ref", "task_source", "skills_ref"})
ALREADY_MATERIALIZED = "Expected a flat dataset row, not an already materialized task"
LISTED_ID_ROWS = 10


class MaterializeError(ValueError):
    """A row cannot become a task (already a task, or no usable ID)."""


class TaskIdTypeError(MaterializeError):
    """A row's own ID is neither a string nor an integer."""


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


_ID_KINDS: dict[type[object], str] = {
    bool: "a boolean",
    float: "a fractional number",
    list: "a list",
}


def task_id_text(key: str, value: object) -> str:
    """An ID field's value as the task ID: a string as is, an integer in decimal.

    The decimal form is the reference's normalization (``7`` -> ``"7"``; collation and plans
    report rows that rely on it). Anything else raises: ``str()`` of a boolean, a float or a
    list (``"True"``, ``"1.0"``, ``"[1]"``) would be an ID nobody wrote. A ``task_id`` object is
    an already materialized task.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if key == "task_id" and isinstance(value, Mapping):
        raise MaterializeError(ALREADY_MATERIALIZED)
    raise TaskIdTypeError(f"{key} is {_ID_KINDS.get(type(value), 'an object')}")


def source_task_id(row: Mapping[str, Any]) -> str | None:
    """The row's own ID as text (see ``task_id_text``), or None when the row has none."""
    found = own_id_field(row)
    return None if found is None else task_id_text(*found)


@dataclass
class IdTypeTally:
    """The rows of one file whose own ID is not a string: integers are counted (they are used
    in decimal, which a report should say), other types are listed for one refusal naming every
    bad line (the first ``LISTED_ID_ROWS``) rather than stopping at the first."""

    integers: int = 0
    first_integer_line: int | None = None
    refused: int = 0
    listed: list[str] = field(default_factory=list[str])

    def accepts(self, found: tuple[str, Any], line: int) -> bool:
        """Whether the ID ``(field, value)`` on ``line`` has a usable type. A ``task_id``
        object passes: it marks an already materialized task, which flat datasets carry as is
        and materialization refuses with its own message."""
        key, value = found
        if isinstance(value, str) or (key == "task_id" and isinstance(value, Mapping)):
            return True
        try:
            task_id_text(*found)
        except TaskIdTypeError as exc:
            self.refused += 1
            if len(self.listed) < LISTED_ID_ROWS:
                self.listed.append(f"{line} ({exc})")
            return False
        self.integers += 1
        if self.first_integer_line is None:
            self.first_integer_line = line
        return True

    def problem(self, where: str = "lines") -> str | None:
        """The refusal listing the refused rows (by ``where``: lines or rows), or None."""
        if not self.refused:
            return None
        more = self.refused - len(self.listed)
        return (
            f"a task ID must be a string (or an integer), but {_rows(self.refused)} another "
            f"type: {where} {'; '.join(self.listed)}{f'; and {more} more' if more else ''}. "
            "Write each ID as a string"
        )

    def warning(self, source: str | Path) -> str | None:
        """The note that integer IDs were used as text, or None when there were none."""
        if not self.integers:
            return None
        return (
            f"{source}: {_rows(self.integers)} an integer task ID (first on line "
            f'{self.first_integer_line}); each is used as its digits, so 7 and "7" are the '
            "same task. Write the IDs as strings to say so"
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
