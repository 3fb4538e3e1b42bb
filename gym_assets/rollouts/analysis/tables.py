"""The per-task table of a run: one row per (benchmark, harness, task index).

Outcomes follow ``collection.metrics`` exactly (``rollout_outcome``, ``passed``,
``pass_at_k_estimate``): masked, unscored, failed and pending rollouts are not measured, so
a task's ``reward_mean`` is over its measured rollouts (NaN when it has none), and its
``pass@k`` is the unbiased estimate when it has at least k measured rollouts (else NaN).
A task is ``solved`` when at least half its measured rollouts pass; compare flips on that.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd

from gym_assets.rollouts.collection.ledger import Key
from gym_assets.rollouts.collection.manifest import Run
from gym_assets.rollouts.collection.metrics import (
    pass_at_k_estimate,
    passed,
    rollout_outcome,
)
from gym_assets.rollouts.collection.planned import Keyed, Planned

KEY_COLUMNS = ["benchmark", "harness", "task_index"]
TASK_COLUMNS = [
    *KEY_COLUMNS,
    "environment_server",
    "taskset",
    "task_id",
    "input_digest",
    "rollouts",
    "measured",
    "masked",
    "failed",
    "passes",
    "reward_mean",
    "solved",
]
ROLLOUT_COLUMNS = ["task_index", "rollout_index", "outcome", "kind", "reward", "passed"]


def _rollout_frame(
    planned: Iterable[Keyed],
    records: dict[Key, dict[str, Any]],
    failures: dict[Key, dict[str, Any]],
) -> pd.DataFrame:
    """One row per planned rollout: how it ended and, when measured, its reward."""
    rows = []
    for item in sorted(planned, key=lambda i: i.key):
        record = records.get(item.key)
        outcome, kind = rollout_outcome(record, failures.get(item.key))
        if record is not None and outcome == "measured":
            rows.append((*item.key, outcome, kind, float(record["reward"]), passed(record)))
        else:
            rows.append((*item.key, outcome, kind, np.nan, False))
    return pd.DataFrame(rows, columns=ROLLOUT_COLUMNS)


def task_table(
    planned: Planned,
    records: dict[Key, dict[str, Any]],
    failures: dict[Key, dict[str, Any]],
    *,
    benchmark: str,
    harness: str,
) -> pd.DataFrame:
    """The per-task table (see the module docstring), sorted by task index."""
    rollouts = _rollout_frame(planned.rollouts, records, failures)
    first = planned.tasks
    grouped = rollouts.groupby("task_index", sort=True)
    outcome = rollouts["outcome"]
    table = pd.DataFrame(
        {
            "rollouts": grouped.size(),
            "measured": (outcome == "measured").groupby(rollouts["task_index"]).sum(),
            "masked": (outcome == "masked").groupby(rollouts["task_index"]).sum(),
            "failed": (outcome == "failed").groupby(rollouts["task_index"]).sum(),
            "passes": grouped["passed"].sum(),
            "reward_mean": grouped["reward"].mean(),
        }
    ).reset_index()
    table.insert(0, "benchmark", benchmark)
    table.insert(1, "harness", harness)
    index = table["task_index"]
    table.insert(3, "environment_server", [first[i].server for i in index])
    table.insert(4, "taskset", [first[i].taskset for i in index])
    table.insert(5, "task_id", [first[i].task_id for i in index])
    table.insert(6, "input_digest", [first[i].input_digest for i in index])
    table["solved"] = (table["measured"] > 0) & (2 * table["passes"] >= table["measured"])
    return with_pass_at_k(_typed(table))


def _typed(table: pd.DataFrame) -> pd.DataFrame:
    counts = ["task_index", "rollouts", "measured", "masked", "failed", "passes"]
    table = table.astype({name: "int64" for name in counts})
    table["reward_mean"] = table["reward_mean"].astype("float64")
    table["solved"] = table["solved"].astype(bool)
    return table.reindex(columns=TASK_COLUMNS)


def pass_at_k_columns(table: pd.DataFrame) -> list[str]:
    return [name for name in table.columns if name.startswith("pass@")]


def with_pass_at_k(table: pd.DataFrame) -> pd.DataFrame:
    """Add ``pass@k`` for k in 1..the most rollouts a task has (as ``metrics.pass_at_k``)."""
    max_k = int(table["rollouts"].to_numpy().max()) if len(table) else 0
    counts = list(zip(table["measured"], table["passes"], strict=True))
    columns = {
        f"pass@{k}": [
            pass_at_k_estimate(int(n), int(c), k) if n >= k else np.nan for n, c in counts
        ]
        for k in range(1, max_k + 1)
    }
    # One frame of every k at once: a column added at a time fragments the frame (pandas
    # warns on the user's terminal past a hundred repeats, and each insert copies).
    added = pd.DataFrame(columns, index=table.index, dtype="float64")
    return pd.concat([table, added], axis=1)


def run_table(run: Run) -> pd.DataFrame:
    """The per-task table of a run read whole and checked (``manifest.read_run``)."""
    manifest = run.manifest
    return task_table(
        Planned.of(run.inputs),
        run.records,
        run.failures,
        benchmark=manifest.benchmark,
        harness=manifest.harness,
    )


def table_rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The table as JSON-ready rows (NaN as None), for snapshots and ``--json``."""
    rows = table.astype(object).where(table.notna(), None).to_dict("records")
    return [{str(k): _plain(v) for k, v in row.items()} for row in rows]


def iter_table_rows(table: pd.DataFrame, chunk: int = 4096) -> Iterator[dict[str, Any]]:
    """``table_rows`` a chunk of tasks at a time: a table of a million tasks written out holds
    a chunk's rows, not a million dicts."""
    for start in range(0, len(table), chunk):
        yield from table_rows(table.iloc[start : start + chunk])


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def table_of_rows(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A table read back from ``table_rows`` (a snapshot)."""
    if not rows:
        return pd.DataFrame(columns=TASK_COLUMNS)
    table = pd.DataFrame(rows)
    missing = [name for name in TASK_COLUMNS if name not in table.columns]
    if missing:
        raise ValueError(f"snapshot rows lack {', '.join(missing)}")
    table["reward_mean"] = pd.to_numeric(table["reward_mean"], errors="coerce")
    for name in pass_at_k_columns(table):
        table[name] = pd.to_numeric(table[name], errors="coerce")
    return table
