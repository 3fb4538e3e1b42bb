"""The rollouts asset's statistics, per-task table, report path and compare view as metadata.

Numbers are numeric metadata (so the UI plots them over materializations); a field with no
value (one task has no interval) is left out rather than written as NaN. Strings from data
are HTML-escaped before they go into markdown.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

import dagster as dg

from gym_assets.defs.metadata import markdown_table, page_link

if TYPE_CHECKING:  # the analysis modules import pandas: loading the definitions must not
    from gym_assets.rollouts.analysis.bootstrap import Interval
    from gym_assets.rollouts.analysis.publish import Analysis

TABLE_COLUMNS = [
    ("task_index", "int", "one of the tasks with the lowest mean reward (unmeasured first)"),
    ("task_id", "string", "the task's id"),
    ("input_digest", "string", "sha256 of the task input (shortened; full in report.html)"),
    ("rollouts", "int", "planned rollouts"),
    ("measured", "int", "rollouts with a reward that are not masked"),
    ("masked", "int", "rollouts masked by the verifier or the collector"),
    ("failed", "int", "rollouts without a result"),
    ("passes", "int", "measured rollouts with reward >= 1"),
    ("reward_mean", "float", "mean reward over measured rollouts (empty: none measured)"),
    ("solved", "bool", "at least half the measured rollouts pass"),
]


def _floats(
    mean: str, interval: Interval, prefix: str | None = None
) -> dict[str, dg.MetadataValue]:
    """``mean`` and ``<prefix>_stderr``, ``_ci_low``, ``_ci_high`` (prefix: ``mean``)."""
    prefix = prefix or mean
    values = {
        mean: interval.mean,
        f"{prefix}_stderr": interval.stderr,
        f"{prefix}_ci_low": interval.ci_low,
        f"{prefix}_ci_high": interval.ci_high,
    }
    return {k: dg.MetadataValue.float(v) for k, v in values.items() if v is not None}


def _task_table(analysis: Analysis) -> dg.MetadataValue:
    rows = analysis.worst_tasks()
    total = len(analysis.table)
    columns = [dg.TableColumn(name, kind, description=text) for name, kind, text in TABLE_COLUMNS]
    columns[0] = dg.TableColumn(
        "task_index",
        "int",
        description=f"{len(rows)} of {total} tasks, lowest mean reward first; every task is "
        "in report.html",
    )
    records = [dg.TableRecord({name: row[name] for name, _, _ in TABLE_COLUMNS}) for row in rows]
    return dg.MetadataValue.table(records, schema=dg.TableSchema(columns=columns))


def _compare(analysis: Analysis) -> dict[str, dg.MetadataValue]:
    comparison = analysis.comparison
    if comparison is None:
        return {"compare": dg.MetadataValue.md("no previous run to compare")}
    previous = analysis.previous.name if analysis.previous else ""
    metadata = _floats("compare_reward_delta", comparison.reward_delta)
    for name in ("flipped_to_fail", "flipped_to_pass", "inputs_changed"):
        metadata[name] = dg.MetadataValue.int(getattr(comparison, name).count)
    rows = [
        [escape(title), listed.count, escape(", ".join(str(t.task_id) for t in listed.tasks))]
        for title, listed in comparison.sections("the previous run", "this run")
    ]
    summary = (
        f"Against the previous materialization (snapshot `{escape(previous)}`), "
        f"{comparison.paired} tasks paired by task index and input digest; reward difference "
        f"(this − previous) {escape(comparison.reward_delta.describe())}.\n\n"
        + markdown_table(["change", "tasks", "first listed"], rows)
    )
    metadata["compare"] = dg.MetadataValue.md(summary)
    return metadata


def analysis_metadata(analysis: Analysis) -> dict[str, dg.MetadataValue]:
    """Statistics, the worst tasks, the report path and the compare view of one run."""
    statistics = analysis.statistics
    metadata = _floats("reward_mean", statistics.reward, prefix="reward")
    metadata["reward_mean_tasks"] = dg.MetadataValue.int(statistics.reward.n)
    for name, interval in statistics.pass_at_k.items():
        metadata.update(_floats(name, interval))
    if statistics.reward.n < 2:
        metadata["statistics_note"] = dg.MetadataValue.text(
            f"{statistics.reward.n} measured task(s): no standard error or interval"
        )
    metadata["worst_tasks"] = _task_table(analysis)
    metadata["report"] = page_link(analysis.report)
    metadata.update(_compare(analysis))
    return metadata
