"""Per-task snapshots of the runs made in one run directory, for comparing run to run.

    <run>/history/<UTC time>.jsonl    the per-task table of one run (``tables.table_rows``)

A run's records are replaced by the next fresh run; its snapshot stays, so the next run (and
the Dagster compare view) can pair its tasks with the previous run's. ``history/`` is a
product directory of ours: at most ``KEEP`` snapshots are kept, and pruning deletes only
files named as this module names them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd

from gym_assets.errors import UserError, reported
from gym_assets.fileio import iter_jsonl
from gym_assets.limits import MAX_NESTING
from gym_assets.outputs.claims import claim_dir
from gym_assets.outputs.markers import RUN_HISTORY
from gym_assets.outputs.targets import Roots, Target
from gym_assets.rollouts.analysis.tables import iter_table_rows, table_of_rows
from gym_assets.rollouts.collection.files import SNAPSHOT_FILE, RunFiles, write_jsonl_atomic

KEEP = 20
_STAMP = "%Y%m%dT%H%M%S.%fZ"


def snapshots(files: RunFiles) -> list[Path]:
    """The run dir's snapshots, oldest first (names sort in time order)."""
    directory = files.history_dir
    if not directory.is_dir():
        return []
    with reported(directory):
        names = (p for p in directory.iterdir() if SNAPSHOT_FILE.fullmatch(p.name))
        return sorted(p for p in names if p.is_file())


def read_snapshot(path: Path) -> pd.DataFrame:
    """A snapshot's per-task table; a damaged one is a ``UserError`` naming it."""
    try:
        return table_of_rows([row for _, row in iter_jsonl(path, max_depth=MAX_NESTING)])
    except ValueError as exc:
        raise UserError(f"not a per-task snapshot ({exc}); delete the file", path=path) from None


def _next_name(existing: list[str], now: datetime) -> str:
    """``now`` as a snapshot name; after the newest one even if the clock was set back."""
    moment = now.astimezone(UTC)
    if existing:
        latest = datetime.strptime(existing[-1].removesuffix(".jsonl"), _STAMP)
        moment = max(moment, latest.replace(tzinfo=UTC) + timedelta(microseconds=1))
    return f"{moment.strftime(_STAMP)}.jsonl"


def write_snapshot(files: RunFiles, table: pd.DataFrame, roots: Roots, now: datetime) -> Path:
    """Add ``table`` as the newest snapshot (named by ``now``), then keep the newest ``KEEP``."""
    claim_dir(Target.of(files.history_dir, RUN_HISTORY, roots))
    path = files.history_dir / _next_name([p.name for p in snapshots(files)], now)
    write_jsonl_atomic(path, iter_table_rows(table))
    with reported(files.history_dir):
        for old in snapshots(files)[:-KEEP]:
            old.unlink()
    return path
