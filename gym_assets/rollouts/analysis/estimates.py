"""The statistics block: reward mean and pass@k with standard errors and bootstrap intervals.

Every estimate is over tasks (each task's mean reward, each task's pass@k estimate), so a
task counts once however many rollouts it has. With the same number of measured rollouts in
every task the reward mean equals the aggregate file's ``mean/reward`` (a mean over rollouts)
and pass@k equals its ``pass_at_k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from gym_assets.rollouts.analysis.bootstrap import CONFIDENCE, RESAMPLES, SEED, Interval, estimate
from gym_assets.rollouts.analysis.tables import KEY_COLUMNS, pass_at_k_columns

GROUP_COLUMNS = ("benchmark", "harness")


@dataclass(frozen=True)
class RunStatistics:
    """The estimates of one group of tasks."""

    tasks: int
    reward: Interval
    pass_at_k: dict[str, Interval]

    def to_json(self) -> dict[str, Any]:
        return {
            "unit": "task",
            "tasks": self.tasks,
            "tasks_measured": self.reward.n,
            "reward": self.reward.to_json(),
            "pass_at_k": {name: value.to_json() for name, value in self.pass_at_k.items()},
            "bootstrap": {"confidence": CONFIDENCE, "resamples": RESAMPLES, "seed": SEED},
        }

    def lines(self) -> list[str]:
        """One line per estimate, as the command line prints them."""
        lines = [f"reward mean {self.reward.describe()}"]
        lines += [f"{name} {value.describe()}" for name, value in self.pass_at_k.items()]
        return lines


def run_statistics(table: pd.DataFrame) -> RunStatistics:
    """The estimates over every task of ``table`` (one group)."""
    return RunStatistics(
        tasks=len(table),
        reward=estimate(table["reward_mean"]),
        pass_at_k={
            name: estimate(table[name])
            for name in pass_at_k_columns(table)
            if bool(table[name].notna().to_numpy().any())
        },
    )


def grouped_statistics(
    tables: Sequence[pd.DataFrame], by: Sequence[str] = GROUP_COLUMNS
) -> dict[tuple[str, ...], RunStatistics]:
    """The estimates per group (default benchmark × harness) over several runs' tables."""
    combined = pd.concat(list(tables), ignore_index=True)
    if combined.duplicated(subset=[*by, *(c for c in KEY_COLUMNS if c not in by)]).any():
        raise ValueError("two tables hold the same task of the same group; pass each run once")
    return {
        tuple(str(k) for k in (key if isinstance(key, tuple) else (key,))): run_statistics(group)
        for key, group in combined.groupby(list(by), sort=True)
    }
