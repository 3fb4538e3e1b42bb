"""What every rollouts run writes beside its records: statistics, a snapshot, the report.

``analyse`` runs inside the run's lock once the files are final: it builds the per-task
table, estimates the run's statistics, compares with the run dir's previous snapshot, adds
this run's snapshot, and writes ``report.html`` with the per-rollout files it links to.
``aggregate_entries`` adds each environment server's statistics to the aggregate file's
entries (a run's, and a re-verified run's).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from gym_assets.errors import UserError, reported
from gym_assets.fileio import atomic_write_text, json_line
from gym_assets.outputs.claims import rebuilt_dir
from gym_assets.outputs.markers import RUN_REPORT
from gym_assets.outputs.targets import Roots, Target
from gym_assets.plans.canonical import short_digest
from gym_assets.records.keys import ENVIRONMENT_SERVER
from gym_assets.rollouts.analysis.compare import Comparison, compare_tables
from gym_assets.rollouts.analysis.estimates import (
    RunStatistics,
    grouped_statistics,
    run_statistics,
)
from gym_assets.rollouts.analysis.history import read_snapshot, snapshots, write_snapshot
from gym_assets.rollouts.analysis.report import ReportInput, render
from gym_assets.rollouts.analysis.tables import table_rows, task_table
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl, report_name
from gym_assets.rollouts.collection.ledger import Key
from gym_assets.rollouts.collection.metrics import RunTotals, aggregate, row_key
from gym_assets.rollouts.collection.planned import Planned

WORST_SHOWN = 50  # tasks in the Dagster table metadata
# Tasks the report lists, each rollout with a file of its own: a run of more lists the ones
# with the lowest mean reward, so a run of a million rollouts writes a page a browser opens
# and a few thousand files at its end, not a million (every task stays in its snapshot).
REPORT_TASKS = 1_000


def lowest_first(table: pd.DataFrame) -> pd.DataFrame:
    """The tasks by mean reward, lowest first (unmeasured before any), then by index."""
    return table.sort_values(["reward_mean", "task_index"], na_position="first", kind="stable")


@dataclass(frozen=True)
class Analysis:
    """The analysis of one run, for the command line and the asset's metadata."""

    table: pd.DataFrame
    statistics: RunStatistics  # over every task of the run
    comparison: Comparison | None  # against the previous snapshot, if any
    previous: Path | None
    snapshot: Path
    report: Path
    notes: list[str]  # what a person should know (a snapshot that could not be read)

    def worst_tasks(self, count: int = WORST_SHOWN) -> list[dict[str, Any]]:
        """The ``count`` tasks with the lowest mean reward (unmeasured first), as plain rows
        with the input digest shortened for display."""
        rows = table_rows(lowest_first(self.table).head(count))
        return [{**row, "input_digest": short_digest(row["input_digest"])} for row in rows]


def _listed(table: pd.DataFrame) -> pd.DataFrame:
    """The tasks the report lists (``REPORT_TASKS``), in task order."""
    if len(table) <= REPORT_TASKS:
        return table
    return lowest_first(table).head(REPORT_TASKS).sort_values("task_index", kind="stable")


def _links(
    planned: Planned, has_row: set[Key], listed: set[int]
) -> dict[int, list[tuple[int, str | None]]]:
    """Each listed task's rollouts with the href of their file (None: pending, nothing to
    open)."""
    links: dict[int, list[tuple[int, str | None]]] = {}
    for task, rollout in sorted(item.key for item in planned.rollouts if item.task in listed):
        href = f"report/{report_name(task, rollout)}" if (task, rollout) in has_row else None
        links.setdefault(task, []).append((rollout, href))
    return links


def _write_rollout_files(
    files: RunFiles, recorded: set[Key], listed: set[int], roots: Roots
) -> None:
    """One JSON file per rollout of a listed task with a record or a failure row (the
    report's links): its record when it has one (``recorded``), else its latest failure row,
    as the run file has it. The rows are streamed from the run's files, so a run of any size
    never holds them. The directory is rebuilt beside and swapped in whole, so a run with
    thousands of rollouts pays no fsync per file and never leaves half a set."""
    with (
        rebuilt_dir(Target.of(files.report_dir, RUN_REPORT, roots)) as staging,
        reported(staging),
    ):
        failures = (row for row in read_jsonl(files.failures) if row_key(row) not in recorded)
        for row in itertools.chain(failures, read_jsonl(files.records)):  # a later row wins
            key = row_key(row)
            if key[0] in listed:
                (staging / report_name(*key)).write_bytes(json_line(row))


def aggregate_entries(
    planned: Planned,
    records: dict[Key, dict[str, Any]],
    failures: dict[Key, dict[str, Any]],
    table: pd.DataFrame,
) -> list[dict[str, Any]]:
    """The aggregate-metrics entries (``metrics.aggregate``), each with the ``statistics``
    block of its environment server's tasks in ``table`` (the run's per-task table)."""
    by_server = grouped_statistics([table], by=["environment_server"])
    entries = aggregate(planned.rollouts, records, failures)
    for entry in entries:
        entry["statistics"] = by_server[(entry[ENVIRONMENT_SERVER],)].to_json()
    return entries


def analyse(
    files: RunFiles,
    planned: Planned,
    records: dict[Key, dict[str, Any]],
    failures: dict[Key, dict[str, Any]],
    *,
    benchmark: str,
    harness: str,
    totals: RunTotals,
    roots: Roots,
    now: datetime,
) -> Analysis:
    """Analyse the run in ``files`` and write its snapshot and report (module docstring)."""
    table = task_table(planned, records, failures, benchmark=benchmark, harness=harness)
    statistics = run_statistics(table)
    earlier = snapshots(files)
    previous = earlier[-1] if earlier else None
    comparison, notes = None, []
    if previous is not None:
        try:  # a damaged snapshot must not cost the run its aggregate file
            comparison = compare_tables(read_snapshot(previous), table)
        except UserError as exc:
            notes.append(f"{exc.render()}; this run is not compared with it")
            previous = None
    snapshot = write_snapshot(files, table, roots, now)
    listed = _listed(table)
    tasks = {int(index) for index in listed["task_index"]}
    _write_rollout_files(files, set(records), tasks, roots)
    page = ReportInput(
        benchmark=benchmark,
        harness=harness,
        totals=totals,
        statistics=statistics,
        table=listed,
        links=_links(planned, set(records) | set(failures), tasks),
        comparison=comparison,
        previous=None if previous is None else previous.name,
        tasks=len(table),
    )
    atomic_write_text(files.report, render(page))
    return Analysis(
        table=table,
        statistics=statistics,
        comparison=comparison,
        previous=previous,
        snapshot=snapshot,
        report=files.report,
        notes=notes,
    )
