"""The eval-plan v1 format: strict pydantic models, the JSON Schema, and the in-memory plan.

Two representations on purpose. The pydantic models are the contract: they generate the JSON
Schema printed by ``gym-assets plan --schema`` and validate documents strictly (unknown keys
refused). But a pydantic object per task costs over 1 KB, so a million-task plan would need
more than a gigabyte; plans are therefore built, rendered and compared as a lean ``Plan``
whose tasks are plain strings (``TaskLog`` for a built plan, on disk beyond a buffer;
``TaskTable`` for a loaded one), and converted to a document only to validate it.
"""

from __future__ import annotations

import abc
import functools
import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Literal, NamedTuple, cast, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gym_assets.errors import UserError
from gym_assets.fileio import read_json_file
from gym_assets.json_shapes import is_list, is_mapping
from gym_assets.limits import MAX_PLAN_BYTES
from gym_assets.plans.canonical import DIGEST_PREFIX, canonical_json
from gym_assets.spill import RecordLog

SCHEMA_LABEL = "nemo-gym.eval-plan.v1"
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"

_STRICT = ConfigDict(extra="forbid", frozen=True)


class TaskId(BaseModel):
    """Identifies one task within a run-qualified taskset."""

    model_config = _STRICT

    taskset: str = Field(
        min_length=1,
        description="Taskset the task belongs to; by convention `<environment>:<taskset>` "
        "when several environments are blended in one run.",
    )
    task_id: str = Field(min_length=1, description="The task's own id within its taskset.")


class PlanTask(BaseModel):
    """One planned task: who it is and what its input must hash to."""

    model_config = _STRICT

    task_id: TaskId
    digest: str = Field(
        pattern=DIGEST_PATTERN,
        description='"sha256:" + SHA-256 of the task input as canonical JSON: 64 lowercase hex '
        "characters of the input written with sorted keys, no whitespace, non-ASCII kept literal.",
    )


class PlanGym(BaseModel):
    """The software that wrote the plan."""

    model_config = _STRICT

    version: str = Field(description="The package version string (of gym-assets).")
    commit: str | None = Field(
        description="Git commit of the checkout that ran the command, with `-dirty` appended "
        "when the working tree has uncommitted changes; null when unknown (outside a git "
        "checkout)."
    )


class PlanBenchmark(BaseModel):
    """The benchmark the plan covers."""

    model_config = _STRICT

    name: str = Field(description="The benchmark dataset name (not the selector token).")
    config_paths: list[str] = Field(
        description="Config files the benchmark was selected with: those declaring it (its "
        "dataset's server, its environment server and agents), relative to the project root "
        "when inside it."
    )


class EvalPlan(BaseModel):
    # The description is the schema's, written once here rather than as a multi-line docstring.
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        json_schema_extra={
            "description": "The tasks of one benchmark, each listed once and sorted by task "
            "id, with the digest its input must have when a run dispatches it."
        },
    )

    schema_: Literal["nemo-gym.eval-plan.v1"] = Field(
        default=SCHEMA_LABEL, alias="schema", title="Schema"
    )
    gym: PlanGym
    benchmark: PlanBenchmark
    selected_task_ids: list[str] | None = Field(
        default=None,
        description="The requested subset of task ids, sorted ascending and de-duplicated; "
        "null when the plan covers every task.",
    )
    tasks: list[PlanTask]


def plan_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every v1 plan file satisfies."""
    return EvalPlan.model_json_schema(by_alias=True)


class PlannedTask(NamedTuple):
    """One task of a lean plan (field order is irrelevant to the file's key order)."""

    taskset: str
    task_id: str
    digest: str


class TaskKey(NamedTuple):
    taskset: str
    task_id: str


_str_tuple: type[tuple[str, ...]] = tuple
_new_task = functools.partial(_str_tuple.__new__, PlannedTask)  # PlannedTask(...) at C speed


class TaskSequence(Sequence[PlannedTask]):
    """A plan's tasks, sorted by task id then taskset, compared task by task."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        items = cast("Sequence[object]", other)
        return len(self) == len(items) and all(a == b for a, b in zip(self, items, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"

    @overload
    def __getitem__(self, index: int) -> PlannedTask: ...

    @overload
    def __getitem__(self, index: slice) -> TaskTable: ...

    def __getitem__(self, index: int | slice) -> PlannedTask | TaskTable:
        return self._slice(index) if isinstance(index, slice) else self._item(index)

    @abc.abstractmethod
    def _item(self, index: int) -> PlannedTask: ...

    @abc.abstractmethod
    def _slice(self, index: slice) -> TaskTable: ...


class TaskTable(TaskSequence):
    """A plan's tasks in memory (a loaded plan), stored as three columns.

    Not a tuple of ``PlannedTask``: the garbage collector never untracks tuple subclasses, so a
    million of them would be walked on every full collection for as long as the plan lives
    (measured: it doubled the time to finish a million-task plan). Columns of strings are
    invisible to the collector and take a third of the memory. Items are made on access.
    """

    __slots__ = ("_digests", "_task_ids", "_tasksets")

    def __init__(self, tasksets: Sequence[str], task_ids: Sequence[str], digests: Sequence[str]):
        if not len(tasksets) == len(task_ids) == len(digests):
            raise ValueError("task columns must have the same length")
        self._tasksets, self._task_ids, self._digests = tasksets, task_ids, digests

    @classmethod
    def of(cls, tasks: Iterable[PlannedTask]) -> TaskTable:
        """A table of ``tasks`` given in any order."""
        return cls.in_order(sorted(tasks, key=lambda task: (task.task_id, task.taskset)))

    @classmethod
    def in_order(cls, tasks: Sequence[PlannedTask]) -> TaskTable:
        """A table of ``tasks`` in the order given."""
        return cls(
            [task.taskset for task in tasks],
            [task.task_id for task in tasks],
            [task.digest for task in tasks],
        )

    def __len__(self) -> int:
        return len(self._task_ids)

    def _item(self, index: int) -> PlannedTask:
        return _new_task((self._tasksets[index], self._task_ids[index], self._digests[index]))

    def _slice(self, index: slice) -> TaskTable:
        return TaskTable(self._tasksets[index], self._task_ids[index], self._digests[index])

    def __iter__(self) -> Iterator[PlannedTask]:
        return map(_new_task, zip(self._tasksets, self._task_ids, self._digests, strict=True))


class TaskLog(TaskSequence):
    """A built plan's tasks, all of one taskset, kept as ``(task_id, digest)`` records in the
    order the builder wrote them: in memory for a small plan, on disk beyond a buffer
    (``gym_assets.spill.RecordLog``), so a plan of any size costs the same memory.

    Reading goes from the first task on: an item or slice further in is found by reading up
    to it, which suits what plans are read for (counted, previewed, written, compared).
    """

    __slots__ = ("_records", "_taskset")

    def __init__(self, taskset: str, records: RecordLog):
        self._taskset, self._records = taskset, records

    def __len__(self) -> int:
        return len(self._records)

    def _item(self, index: int) -> PlannedTask:
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError("task index out of range")
        return next(islice(self, position, None))

    def _slice(self, index: slice) -> TaskTable:
        start, stop, step = index.indices(len(self))
        tasks = list(islice(self, start, stop, step)) if step > 0 else list(self)[index]
        return TaskTable.in_order(tasks)

    def __iter__(self) -> Iterator[PlannedTask]:
        taskset = self._taskset
        return (_new_task((taskset, task_id, digest)) for task_id, digest in self._records)


@dataclass(frozen=True)
class GymStamp:
    version: str
    commit: str | None


@dataclass(frozen=True)
class Plan:
    """An eval plan in memory."""

    gym: GymStamp
    benchmark: str
    config_paths: tuple[str, ...]
    selected_task_ids: tuple[str, ...] | None
    tasks: TaskSequence

    @functools.cached_property
    def digests(self) -> dict[tuple[str, str], str]:
        """Digest by ``(taskset, task_id)`` for consumers that look tasks up (built once)."""
        return {(task.taskset, task.task_id): task.digest for task in self.tasks}

    @functools.cached_property
    def pins_digest(self) -> str:
        """``sha256:`` + the SHA-256 of what the plan pins (its benchmark, its selection, each
        task with its digest), not of its file: re-planning the same tasks keeps it."""
        pins = hashlib.sha256(canonical_json([self.benchmark, self.selected_task_ids]).encode())
        for task in self.tasks:
            pins.update(canonical_json(list(task)).encode("utf-8", "surrogatepass"))
        return DIGEST_PREFIX + pins.hexdigest()

    def header(self) -> dict[str, Any]:
        """The document without its tasks."""
        return {
            "schema": SCHEMA_LABEL,
            "gym": {"version": self.gym.version, "commit": self.gym.commit},
            "benchmark": {"name": self.benchmark, "config_paths": list(self.config_paths)},
            "selected_task_ids": (
                None if self.selected_task_ids is None else list(self.selected_task_ids)
            ),
        }

    def to_document(self) -> dict[str, Any]:
        """The whole document as plain JSON values (small plans, validation, tests)."""
        tasks = [
            {"task_id": {"taskset": t.taskset, "task_id": t.task_id}, "digest": t.digest}
            for t in self.tasks
        ]
        return {**self.header(), "tasks": tasks}


def _lean(model: EvalPlan, tasks: list[PlannedTask]) -> Plan:
    selected = model.selected_task_ids
    return Plan(
        gym=GymStamp(model.gym.version, model.gym.commit),
        benchmark=model.benchmark.name,
        config_paths=tuple(model.benchmark.config_paths),
        selected_task_ids=None if selected is None else tuple(selected),
        tasks=TaskTable.of(tasks),
    )


def _lean_task(task: PlanTask) -> PlannedTask:
    return PlannedTask(task.task_id.taskset, task.task_id.task_id, task.digest)


def validate_plan(document: Mapping[str, Any]) -> Plan:
    """Validate a v1 document strictly (unknown keys refused); pydantic ValidationError."""
    model = EvalPlan.model_validate(document)
    return _lean(model, [_lean_task(task) for task in model.tasks])


def describe_validation_error(exc: ValidationError, prefix: str = "") -> str:
    """The first problem of a validation error as `where: what` (never the input value)."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    where = f"{prefix}.{where}" if prefix and where else prefix or where
    return f"{where}: {error['msg']}" if where else error["msg"]


def load_plan(path: str | Path) -> Plan:
    """Read a plan for use: require the v1 label exactly, ignore keys v1 does not know.

    Within v1 the format only grows new optional keys, so a consumer accepts a newer v1 file
    (additive policy); a different label is a different format and is refused. Tasks are
    validated one at a time so only the lean plan stays in memory.
    """
    path = Path(path)
    document = read_json_file(path, "plan", MAX_PLAN_BYTES)
    if not is_mapping(document):
        raise UserError("not an eval plan: expected a JSON object", path=path)
    label = document.get("schema")
    if label != SCHEMA_LABEL:
        raise UserError(
            f"not a {SCHEMA_LABEL} plan (its schema label is {label!r}); write it again with "
            "`gym-assets plan`",
            path=path,
        )
    raw_tasks = document.get("tasks")
    if not is_list(raw_tasks):
        raise UserError("not a valid eval plan: 'tasks' must be a list", path=path)
    try:
        model = EvalPlan.model_validate({**document, "tasks": []}, extra="ignore")
    except ValidationError as exc:
        raise UserError(
            f"not a valid eval plan: {describe_validation_error(exc)}", path=path
        ) from None
    tasks: list[PlannedTask] = []
    for index, raw in enumerate(raw_tasks):
        try:
            task = _lean_task(PlanTask.model_validate(raw, extra="ignore"))
        except ValidationError as exc:
            detail = describe_validation_error(exc, f"tasks.{index}")
            raise UserError(f"not a valid eval plan: {detail}", path=path) from None
        if tasks:
            _require_after(tasks[-1], task, index, path)
        tasks.append(task)
    return _lean(model, tasks)


def _require_after(previous: PlannedTask, task: PlannedTask, index: int, path: Path) -> None:
    """The format's own invariant: each task once, sorted by task id (then taskset). A plan
    that breaks it was edited by hand or written by something else, and would be misread."""
    before, here = (previous.task_id, previous.taskset), (task.task_id, task.taskset)
    if before < here:
        return
    what = (
        "is listed twice"
        if before == here
        else f"is out of order (it follows '{previous.task_id}', taskset '{previous.taskset}')"
    )
    raise UserError(
        f"not a valid eval plan: tasks.{index} (task '{task.task_id}', taskset "
        f"'{task.taskset}') {what}; a plan lists each task once, sorted by task id. Write it "
        "again with `gym-assets plan`",
        path=path,
    )
