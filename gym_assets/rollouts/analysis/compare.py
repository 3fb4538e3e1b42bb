"""Two runs of a benchmark compared task by task.

Tasks pair when they have the same task index AND the same input digest: a task whose input
changed between the runs is not the same question, so it is listed as not comparable instead
of counted as a change in score. Over the paired tasks measured in both runs, the difference
is B − A of each task's mean reward, with its mean, standard error and seeded bootstrap
interval (``bootstrap``). A task flips when it is solved (at least half its measured rollouts
pass) in one run and measured but not solved in the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from gym_assets.errors import UserError
from gym_assets.plans.canonical import short_digest
from gym_assets.rollouts.analysis.bootstrap import Interval, estimate
from gym_assets.rollouts.analysis.tables import run_table
from gym_assets.rollouts.collection.manifest import Run

LISTED = 20  # tasks listed per kind of change (the counts are always whole)


@dataclass(frozen=True)
class TaskRef:
    task_index: int
    task_id: str
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"task_index": self.task_index, "task_id": self.task_id}
        if self.detail:
            entry["detail"] = self.detail
        return entry

    def describe(self) -> str:
        text = f"task {self.task_index} ({self.task_id})"
        return f"{text}: {self.detail}" if self.detail else text


@dataclass(frozen=True)
class Listed:
    """How many tasks changed one way, and the first ``LISTED`` of them by task index."""

    count: int
    tasks: tuple[TaskRef, ...]

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "tasks": [t.to_json() for t in self.tasks]}


@dataclass(frozen=True)
class Comparison:
    tasks_a: int
    tasks_b: int
    paired: int
    reward_delta: Interval  # B − A over paired tasks measured in both
    flipped_to_fail: Listed
    flipped_to_pass: Listed
    inputs_changed: Listed
    only_in_a: Listed
    only_in_b: Listed

    def to_json(self) -> dict[str, Any]:
        return {
            "tasks_a": self.tasks_a,
            "tasks_b": self.tasks_b,
            "paired": self.paired,
            "reward_delta": self.reward_delta.to_json(),
            "flipped_to_fail": self.flipped_to_fail.to_json(),
            "flipped_to_pass": self.flipped_to_pass.to_json(),
            "inputs_changed": self.inputs_changed.to_json(),
            "only_in_a": self.only_in_a.to_json(),
            "only_in_b": self.only_in_b.to_json(),
        }

    def sections(self, a: str = "A", b: str = "B") -> list[tuple[str, Listed]]:
        """Each kind of change with its title; ``a`` and ``b`` name the two runs."""
        return [
            ("flipped pass → fail", self.flipped_to_fail),
            ("flipped fail → pass", self.flipped_to_pass),
            ("inputs changed (not comparable)", self.inputs_changed),
            (f"only in {a}", self.only_in_a),
            (f"only in {b}", self.only_in_b),
        ]

    def lines(self) -> list[str]:
        lines = [
            f"tasks: {self.tasks_a} in A, {self.tasks_b} in B, {self.paired} paired "
            "(same task index and input digest)",
            f"reward difference (B − A) {self.reward_delta.describe()}",
        ]
        for title, listed in self.sections():
            lines.append(f"{title}: {listed.count}")
            lines += [f"  {task.describe()}" for task in listed.tasks]
            if listed.count > len(listed.tasks):
                lines.append(f"  ... {listed.count - len(listed.tasks)} more")
        return lines


def _listed(rows: pd.DataFrame, detail: Any = None) -> Listed:
    rows = rows.sort_values("task_index")
    refs = tuple(
        TaskRef(int(row["task_index"]), str(row["task_id"]), detail(row) if detail else "")
        for row in rows.head(LISTED).to_dict("records")
    )
    return Listed(len(rows), refs)


def _where(frame: pd.DataFrame, mask: Any) -> pd.DataFrame:
    """The rows of ``frame`` where ``mask`` holds (a DataFrame, for the type checker too)."""
    return pd.DataFrame(frame.loc[mask])


def compare_tables(a: pd.DataFrame, b: pd.DataFrame) -> Comparison:
    """Run B against run A (each a per-task table of one run)."""
    columns = ["task_index", "task_id", "input_digest", "measured", "reward_mean", "solved"]
    merged = a[columns].merge(
        b[columns], on="task_index", how="outer", suffixes=("_a", "_b"), indicator=True
    )
    both = _where(merged, merged["_merge"] == "both")
    changed = _where(both, both["input_digest_a"] != both["input_digest_b"])
    paired = _where(both, both["input_digest_a"] == both["input_digest_b"])
    measured = _where(paired, (paired["measured_a"] > 0) & (paired["measured_b"] > 0))
    delta = measured["reward_mean_b"] - measured["reward_mean_a"]
    solved_a, solved_b = measured["solved_a"].astype(bool), measured["solved_b"].astype(bool)
    to_fail = _where(measured, solved_a & ~solved_b).rename(columns={"task_id_b": "task_id"})
    to_pass = _where(measured, ~solved_a & solved_b).rename(columns={"task_id_b": "task_id"})
    return Comparison(
        tasks_a=len(a),
        tasks_b=len(b),
        paired=len(paired),
        reward_delta=estimate(delta.to_numpy()),
        flipped_to_fail=_listed(to_fail, _rewards),
        flipped_to_pass=_listed(to_pass, _rewards),
        inputs_changed=_listed(
            changed.rename(columns={"task_id_b": "task_id"}),
            lambda r: f"{short_digest(r['input_digest_a'])} → {short_digest(r['input_digest_b'])}",
        ),
        only_in_a=_listed(
            _where(merged, merged["_merge"] == "left_only").rename(columns={"task_id_a": "task_id"})
        ),
        only_in_b=_listed(
            _where(merged, merged["_merge"] == "right_only").rename(
                columns={"task_id_b": "task_id"}
            )
        ),
    )


def compare_runs(a: Run, b: Run, *, allow_different_benchmarks: bool = False) -> Comparison:
    """Run B against run A, refused when they ran different benchmarks unless allowed."""
    first, second = a.manifest.benchmark, b.manifest.benchmark
    if first != second and not allow_different_benchmarks:
        raise UserError(
            f"{a.files.out_dir} is a run of benchmark '{first}' and {b.files.out_dir} of "
            f"'{second}': their task indexes name different questions; compare runs of one "
            "benchmark, or pass --allow-different-benchmarks"
        )
    return compare_tables(run_table(a), run_table(b))


def _rewards(row: Any) -> str:
    return f"reward {row['reward_mean_a']:.3f} → {row['reward_mean_b']:.3f}"
