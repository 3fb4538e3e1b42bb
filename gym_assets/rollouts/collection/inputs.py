"""Preprocessing: a collated taskset becomes one materialized input row per rollout.

Each row keeps the taskset row as it is (a materialized task or a flat row) and gains the
collector stamps: ``_ng_task_index`` (caller-provided, else identical lines share one, in
first-seen order), ``_ng_rollout_index`` (a running counter per task), and
``_ng_environment_server`` (the route of its taskset, else the benchmark's server). A flat row
runs on the agent its ``agent_ref`` or ``task_source`` names, and is refused (file:line) when
that server does not front it; it gets ``agent_ref`` when it lacks one. Repeats: collation
already wrote ``num_repeats`` copies of each task, so by default every copy is one rollout;
``repeats`` overrides that with an exact number of rollouts per task. Order is ``aabbcc``;
``limit`` keeps the first N tasks. Run-level overrides (``overrides.py``) change flat rows and
are refused for materialized ones.

The repeats of a task share their values: each rollout's row is a dict of its own (its
``_ng_rollout_index``), whose values are the task's, held once, whether the repeats come from
``repeats`` or are the identical lines collation wrote, and when the inventory is read back
(``shared_repeats``). A run holds its whole inventory, so ``num_repeats: 16`` would otherwise
hold each task's prompt and data sixteen times. Nothing changes a row's values in place (the
plan gate would refuse the rollout that saw them changed).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.errors import UserError
from gym_assets.fileio import iter_jsonl
from gym_assets.limits import MAX_PRODUCT_NESTING, MAX_REPEATS
from gym_assets.plans.canonical import canonical_json
from gym_assets.records import keys
from gym_assets.records.ids import make_rollout_id
from gym_assets.rollouts.collection.overrides import RunOverrides
from gym_assets.tasks.catalog import Benchmark
from gym_assets.tasks.materialize import is_materialized, source_task_id, task_input_of
from gym_assets.tasks.row_routing import FlatRowAgents, environment_server_for_row

TASK_INDEX = keys.TASK_INDEX
ROLLOUT_INDEX = keys.ROLLOUT_INDEX
ATTEMPT_INDEX = keys.ATTEMPT_INDEX
ROLLOUT_ID = keys.ROLLOUT_ID
ENVIRONMENT_SERVER = keys.ENVIRONMENT_SERVER
RESULT_TYPE = keys.RESULT_TYPE
TASK_ID = keys.TASK_ID


@dataclass(frozen=True)
class RolloutInput:
    """One planned rollout: its materialized input row and what is derived from it."""

    row: dict[str, Any]
    taskset: str
    task_id: str

    @classmethod
    def of(cls, row: dict[str, Any], flat_taskset: str) -> RolloutInput:
        """Read a stamped row (fresh or from the inventory file of an earlier run)."""
        if is_materialized(row):
            task = row["task_id"]
            return cls(row, str(task["taskset"]), str(task["task_id"]))
        own = source_task_id(row)
        return cls(row, flat_taskset, own if own is not None else str(row[TASK_INDEX]))

    @property
    def key(self) -> tuple[int, int]:
        """The resume key ``(task, rollout)``."""
        return self.row[TASK_INDEX], self.row[ROLLOUT_INDEX]

    @property
    def task_key(self) -> tuple[str, str]:
        """The plan key ``(taskset, task_id)``."""
        return self.taskset, self.task_id

    @property
    def server(self) -> str:
        return self.row[ENVIRONMENT_SERVER]

    @property
    def materialized(self) -> bool:
        return is_materialized(self.row)

    def task_input(self) -> dict[str, Any]:
        """What a run dispatches as the task's input (and what the plan hashed)."""
        return self.row["task_input"] if self.materialized else task_input_of(self.row)

    def rollout_id(self, attempt: int = 0) -> str:
        task_index, rollout_index = self.key
        return make_rollout_id(task_index, rollout_index, attempt, self.row.get(ROLLOUT_ID))


def shared_repeats(rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``rows`` (an inventory as written, read back on resume and by each shard), each row
    that differs from the one before only in its rollout index holding that row's values."""
    previous: dict[str, Any] | None = None
    for row in rows:
        if previous is not None and ROLLOUT_INDEX in row:
            same = {**previous, ROLLOUT_INDEX: row[ROLLOUT_INDEX]}
            if same == row:
                row = same
        yield row
        previous = row


def _stamped(
    row: dict[str, Any],
    config: Mapping[str, Any],
    benchmark: Benchmark,
    agents: FlatRowAgents,
    line: int,
    path: Path,
) -> dict[str, Any]:
    server = environment_server_for_row(config, row) or benchmark.environment_server
    if server is None:
        if benchmark.fronting.error is not None:
            raise benchmark.fronting.error
        raise UserError(
            f"no environment server runs the rows of benchmark '{benchmark.name}'; route its "
            "taskset or front its agent with an environment server",
            path=path,
            line=line,
        )
    stamped = {k: v for k, v in row.items() if k != ATTEMPT_INDEX}
    stamped[ENVIRONMENT_SERVER] = server
    if is_materialized(row):
        return stamped
    agent = agents.agent_of(row, server, path=path, line=line)
    if agent is None and len(benchmark.agents) == 1:
        agent = benchmark.agents[0]
    if "agent_ref" not in row and agent is not None:
        stamped["agent_ref"] = {"name": agent}
    return stamped


def _rollouts_of(
    rows: list[tuple[int, dict[str, Any]]],
    repeats: int | None,
    overrides: RunOverrides,
    path: Path,
) -> Iterable[dict[str, Any]]:
    copies = [rows[0]] * repeats if repeats is not None else rows
    for rollout_index, (line, row) in enumerate(copies):
        if not is_materialized(row):
            row = overrides.apply_flat(row, rollout_index, path, line)
        yield {**row, ROLLOUT_INDEX: rollout_index}


def materialize_inputs(
    taskset_path: Path,
    benchmark: Benchmark,
    config: Mapping[str, Any],
    *,
    repeats: int | None = None,
    limit: int | None = None,
    overrides: RunOverrides | None = None,
) -> list[RolloutInput]:
    """One stamped input per rollout of the collated taskset at ``taskset_path``, with the
    run-level ``overrides`` applied to flat rows (and refused for materialized ones)."""
    overrides = overrides or RunOverrides()
    if repeats is not None and not 1 <= repeats <= MAX_REPEATS:
        raise UserError(f"repeats must be from 1 to {MAX_REPEATS:,}, got {repeats}")
    if limit is not None and limit < 0:
        raise UserError(f"limit must not be negative, got {limit}")
    agents = FlatRowAgents(config, {benchmark.instance: benchmark.dataset.agent})
    tasks: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    index_of_line: dict[str, int] = {}
    next_index = 0
    for line, row in iter_jsonl(taskset_path, max_depth=MAX_PRODUCT_NESTING):
        own = row.get(TASK_INDEX)
        if own is not None:
            if isinstance(own, bool) or not isinstance(own, int) or own < 0:
                raise UserError(
                    f"{TASK_INDEX} must be a non-negative integer, got {own!r}",
                    path=taskset_path,
                    line=line,
                )
            index = own
        else:
            identity = canonical_json(row)  # identical rows are one task
            if identity not in index_of_line:
                while next_index in tasks:
                    next_index += 1
                index_of_line[identity] = next_index
            index = index_of_line[identity]
        if index not in tasks:
            if limit is not None and len(tasks) >= limit:
                continue
            tasks[index] = []
        if is_materialized(row):
            overrides.refuse_materialized(taskset_path, line)
        stamped = {
            **_stamped(row, config, benchmark, agents, line, taskset_path),
            TASK_INDEX: index,
        }
        copies = tasks[index]
        if copies and copies[-1][1] == stamped:  # a repeat collation wrote: share its values
            stamped = copies[-1][1]
        copies.append((line, stamped))
    flat_taskset = benchmark.taskset
    return [
        RolloutInput.of(row, flat_taskset)
        for copies in tasks.values()
        for row in _rollouts_of(copies, repeats, overrides, taskset_path)
    ]
