"""The bootstrap over tasks and the statistics block, on small tables computed by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from gym_assets.rollouts.analysis.bootstrap import estimate
from gym_assets.rollouts.analysis.estimates import grouped_statistics, run_statistics


def _table(rewards, benchmark="b", harness="h", pass1=None):
    return pd.DataFrame(
        {
            "benchmark": benchmark,
            "harness": harness,
            "task_index": range(len(rewards)),
            "reward_mean": pd.Series(rewards, dtype="float64"),
            "pass@1": pd.Series(pass1 if pass1 is not None else rewards, dtype="float64"),
        }
    )


def test_stderr_is_the_sample_deviation_over_root_n():
    stats = run_statistics(_table([0.0, 0.5, 1.0, 1.0]))
    # mean 0.625; squared deviations 0.390625 + 0.015625 + 2 * 0.140625 = 0.6875 over n - 1 = 3
    assert stats.reward.mean == pytest.approx(0.625)
    assert stats.reward.stderr == pytest.approx(math.sqrt(0.6875 / 3) / 2)
    assert stats.reward.n == 4 and stats.tasks == 4


def test_the_interval_holds_the_mean_and_is_seeded():
    values = np.tile([0.0, 0.25, 1.0, 1.0, 0.5], 8)
    first, again = estimate(values), estimate(values)
    assert first == again  # same seed, same resamples: the same interval
    assert first.ci_low < first.mean < first.ci_high
    other = estimate(values, seed=7)
    assert other != first and other.ci_low < other.mean < other.ci_high


def test_the_interval_narrows_as_tasks_are_added():
    widths = []
    for n in (10, 100, 1000):
        interval = estimate(np.tile([0.0, 1.0], n // 2))
        assert interval.mean == pytest.approx(0.5)
        widths.append(interval.ci_high - interval.ci_low)
    assert widths[0] > widths[1] > widths[2] > 0


def test_no_task_one_task_and_equal_rewards_give_no_nan():
    none, one, equal = (run_statistics(_table(rewards)) for rewards in ([], [0.4], [0.5, 0.5, 0.5]))
    assert none.reward.mean is None and none.reward.n == 0 and none.pass_at_k == {}
    assert one.reward.mean == 0.4 and one.reward.stderr is None and one.reward.ci_low is None
    assert "no interval" in one.reward.describe()
    assert equal.reward.stderr == 0.0 and equal.reward.ci_low == equal.reward.ci_high == 0.5
    for stats in (none, one, equal):
        json.dumps(stats.to_json(), allow_nan=False)  # raises on NaN or infinity


def test_unmeasured_tasks_are_left_out_of_the_estimates():
    stats = run_statistics(_table([1.0, float("nan"), 0.0], pass1=[1.0, float("nan"), 0.0]))
    assert stats.tasks == 3 and stats.reward.n == 2 and stats.reward.mean == 0.5


def test_groups_are_benchmark_by_harness_across_runs():
    groups = grouped_statistics(
        [_table([1.0, 0.0]), _table([1.0, 1.0], harness="other"), _table([0.0], benchmark="c")]
    )
    assert sorted(groups) == [("b", "h"), ("b", "other"), ("c", "h")]
    assert groups[("b", "other")].reward.mean == 1.0 and groups[("c", "h")].reward.n == 1
    with pytest.raises(ValueError, match="same task"):
        grouped_statistics([_table([1.0]), _table([0.0])])
