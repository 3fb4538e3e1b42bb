"""Build an eval plan from one benchmark's prepared (flat) rows, in one streaming pass.

Each row becomes a task exactly as collation makes it (``materialize_task``), so a plan's
digests are the digests of what a run dispatches. Only ids and digests are kept, never rows.

Refusals follow the reference order even though rows are read once: rows without an id are
reported first (over all rows), then ids of a type no id has (booleans, floats, lists; listed
by line), then the first row that cannot become a task, then duplicate ids, then requested ids
that do not exist. After the first problem the pass only keeps
counting ids, so the messages are complete without hashing rows that cannot be planned.

Memory does not grow with the rows: ``(id, digest)`` pairs go through an external sort
(``gym_assets.spill.SortedRuns``: sorted runs in an anonymous temp file, merged), duplicates
are then neighbours, and the sorted tasks are kept on disk beyond a buffer (``TaskLog``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.errors import UserError
from gym_assets.fileio import iter_jsonl
from gym_assets.json_shapes import is_mapping
from gym_assets.plans.canonical import digest
from gym_assets.plans.model import GymStamp, Plan, TaskLog
from gym_assets.spill import RecordLog, SortedRuns
from gym_assets.tasks.materialize import (
    ID_FIELDS,
    IdTypeTally,
    materialize_task,
    own_id_field,
    task_id_text,
    task_input_of,
)

MAX_MISSING_ROWS_SHOWN = 5
MAX_DUPLICATES_SHOWN = 10


@dataclass(frozen=True)
class PlanSpec:
    """Everything about a plan except its rows."""

    benchmark: str
    taskset: str
    gym: GymStamp
    config_paths: tuple[str, ...] = ()
    selected_task_ids: Iterable[str] | None = None


def require_one_benchmark(names: Sequence[str]) -> str:
    """The single benchmark a plan is for; a plan never spans benchmarks."""
    if len(names) != 1:
        raise UserError(
            f"A plan covers exactly one benchmark, but the config declares {len(names)}"
            f"{': ' + ', '.join(names) if names else ''}; plan each benchmark separately"
        )
    return names[0]


def refuse_prompt_template(benchmark: str, prompt_config: object | None) -> None:
    """Refuse template benchmarks: a run renders the template into each task's input after
    the rows are prepared, so digests of the prepared rows would never match the run."""
    if prompt_config is not None:
        raise UserError(
            f"Benchmark {benchmark!r} uses prompt_config {str(prompt_config)!r}, but plans do "
            "not support prompt templates yet: the template changes each task's input when the "
            "run is collated. Plan a benchmark whose rows carry their full prompt in "
            "responses_create_params."
        )


class PlanBuilder:
    """Accumulates rows one at a time; ``finish`` applies the refusals and sorts."""

    def __init__(
        self,
        benchmark: str,
        taskset: str,
        source: Path | None = None,
        spill_dir: Path | None = None,
    ):
        if not taskset:
            raise UserError(f"Benchmark {benchmark!r}: taskset must be a non-empty string")
        self.benchmark = benchmark
        self.taskset = taskset
        self.source = source
        self.spill_dir = spill_dir  # where sorted runs go (None: the system temp directory)
        self._rows = 0
        self._tasks = SortedRuns(spill_dir)  # (task_id, digest) of every plannable row
        self._missing = 0
        self._missing_shown: list[tuple[int, int | None]] = []
        self.ids = IdTypeTally()  # own IDs that are not strings, used as their str()
        self._refusal: UserError | None = None

    def add(self, row: Mapping[str, Any], line: int | None = None) -> None:
        index = self._rows
        self._rows += 1
        own_id = own_id_field(row)
        if own_id is None:
            self._missing += 1
            if len(self._missing_shown) < MAX_MISSING_ROWS_SHOWN:
                self._missing_shown.append((index, line))
            return
        self.ids.note(own_id, index if line is None else line)
        if self._missing or self._refusal is not None:
            return
        try:
            task_id = task_id_text(*own_id)  # a task_id object raises: already materialized
            # An ordinary flat row (own id, no task envelope) takes task_input_of directly,
            # skipping the envelope materialize_task would build (a sixth of the per-row
            # time); any other row gets the full conversion, which raises its own refusal.
            if task_id and "task_input" not in row and not is_mapping(row.get("task_id")):
                task_input = task_input_of(row)
            else:
                task_input = materialize_task(row, self.taskset)["task_input"]
            task_digest = digest(task_input)
        except ValueError as exc:  # MaterializeError, or a string that cannot be hashed
            self._refusal = UserError(
                f"Benchmark {self.benchmark!r}: {exc} (row {index})",
                path=self.source,
                line=line,
            )
            return
        self._tasks.add((task_id, task_digest))

    def finish(
        self, selection: Iterable[str] | None = None
    ) -> tuple[TaskLog, tuple[str, ...] | None]:
        """The sorted tasks (only the selected ones) and the normalised selection."""
        if self._missing:
            raise self._missing_ids_refusal()
        if self._refusal is not None:
            raise self._refusal
        selected = None if selection is None else tuple(sorted(set(selection)))
        wanted = None if selected is None else set(selected)
        kept = RecordLog(self.spill_dir)
        shown: list[str] = []  # the first duplicated ids, which in id order are the smallest
        duplicated = 0
        previous = repeated = None
        for task_id, task_digest in self._tasks:
            if task_id == previous:  # sorted: the rows of one id are neighbours
                if task_id != repeated:
                    repeated = task_id
                    duplicated += 1
                    if len(shown) < MAX_DUPLICATES_SHOWN:
                        shown.append(task_id)
                continue
            previous = task_id
            if wanted is None or task_id in wanted:
                kept.append((task_id, task_digest))
        self._tasks.close()
        if duplicated:
            more = duplicated - len(shown)
            raise UserError(
                f"Benchmark {self.benchmark!r}: task ids are not unique: {shown!r}"
                f"{f' (and {more} more)' if more else ''}. Each row needs its own id; remove "
                "or rename the repeated rows in the benchmark's data",
                path=self.source,
            )
        if selected is not None and len(kept) < len(selected):
            found = {task_id for task_id, _ in kept}
            unknown = [task_id for task_id in selected if task_id not in found]
            raise UserError(
                f"Benchmark {self.benchmark!r} has no tasks with ids {unknown!r}; check the "
                "requested ids against the benchmark's rows",
                path=self.source,
            )
        return TaskLog(self.taskset, kept), selected

    def _missing_ids_refusal(self) -> UserError:
        rows = [index for index, _ in self._missing_shown]
        more = self._missing - len(rows)
        lines = [line for _, line in self._missing_shown if line is not None]
        return UserError(
            f"Benchmark {self.benchmark!r}: {self._missing} of {self._rows} tasks have no task "
            f"id (none of the top-level fields {', '.join(ID_FIELDS)} is set): rows {rows}"
            f"{f' and {more} more' if more else ''}"
            f"{f' (file lines {lines})' if lines else ''}. Add a task_id field to every row in "
            "the benchmark's prepare script or data file; plans never fall back to row "
            "positions, which name a different task once rows are reordered",
            path=self.source,
        )


def _plan(builder: PlanBuilder, spec: PlanSpec) -> Plan:
    tasks, selected = builder.finish(spec.selected_task_ids)
    return Plan(
        gym=spec.gym,
        benchmark=spec.benchmark,
        config_paths=tuple(spec.config_paths),
        selected_task_ids=selected,
        tasks=tasks,
    )


def build_plan(rows: Iterable[Mapping[str, Any]], spec: PlanSpec) -> Plan:
    """Plan already-parsed flat rows (any order gives the same plan)."""
    builder = PlanBuilder(spec.benchmark, spec.taskset)
    for row in rows:
        builder.add(row)
    return _plan(builder, spec)


def _read(path: str | Path, benchmark: str, taskset: str) -> PlanBuilder:
    path = Path(path)
    builder = PlanBuilder(benchmark, taskset, source=path)
    for line, row in iter_jsonl(path):
        builder.add(row, line)
    return builder


def build_plan_from_file(
    path: str | Path, spec: PlanSpec, warn: Callable[[str], None] | None = None
) -> Plan:
    """Plan a JSONL file of flat rows, streaming; errors name the file and line. ``warn``
    hears about integer ids, which the plan lists as their digits."""
    builder = _read(path, spec.benchmark, spec.taskset)
    note = builder.ids.warning(path)
    if note is not None and warn is not None:
        warn(note)
    return _plan(builder, spec)


def file_tasks(path: str | Path, benchmark: str, taskset: str) -> TaskLog:
    """Every task of a rows file as a plan would list it (all refusals except selection)."""
    tasks, _ = _read(path, benchmark, taskset).finish()
    return tasks
