"""Aggregate metrics against hand-computed values."""

from __future__ import annotations

import math

import pytest

from gym_assets.rollouts.collection.inputs import RolloutInput
from gym_assets.rollouts.collection.metrics import (
    HistogramBin,
    Outcomes,
    aggregate,
    pass_at_k,
    summarize,
    summary_rows,
)
from gym_assets.rollouts.collection.planned import Planned


def _input(task, rollout, server):
    row = {
        "task_id": {"taskset": "t", "task_id": f"task-{task}"},
        "task_input": {},
        "_ng_task_index": task,
        "_ng_rollout_index": rollout,
        "_ng_environment_server": server,
    }
    return RolloutInput.of(row, "t")


def _record(task, rollout, **fields):
    return {
        "_ng_task_index": task,
        "_ng_rollout_index": rollout,
        "agent_ref": {"name": "a"},
        **fields,
    }


def test_per_server_metrics_match_hand_computed_values():
    inputs = [_input(t, r, "s1") for t in (0, 1) for r in range(3)]
    inputs += [_input(2, 0, "s2"), _input(3, 0, "s2")]
    records = summary_rows(
        [
            _record(0, 0, reward=1.0, score=2, mask_sample=False),
            _record(0, 1, reward=0.0, score=4, mask_sample=False),
            _record(0, 2, reward=1.0, score=6, mask_sample=False, response={"usage": 9}),
            _record(1, 0, reward=0.5, score=8, mask_sample=False, _ng_attempt_index=1),
            _record(1, 1, reward=1.0, score=100, mask_sample=True),
            _record(2, 0, tokens=5),
        ]
    )
    failures = summary_rows(
        [
            _record(1, 2, _ng_failure_class="environment_server_failed"),
            _record(1, 2, _ng_failure_class="agent_timeout", _ng_failure_kind="agent_timeout"),
        ]
    )
    first, second = aggregate(Planned.of(inputs).rollouts, records, failures)
    assert first["_ng_environment_server"] == "s1" and first["agent_ref"] == {"name": "a"}
    assert first["rollouts"] == 6
    assert first["outcomes"] == {
        "measured": 4,
        "masked": 1,
        "unscored": 0,
        "failed": 1,
        "pending": 0,
    }
    assert first["failure_kinds"] == {"agent_timeout": 1}
    metrics = first["agent_metrics"]
    assert metrics["mean/reward"] == 0.625
    assert (metrics["min/reward"], metrics["max/reward"], metrics["median/reward"]) == (0, 1, 0.75)
    assert metrics["std/reward"] == pytest.approx(math.sqrt(0.6875 / 4))
    assert metrics["mean/score"] == 5 and metrics["median/score"] == 5
    assert not any("mask_sample" in k or "_ng_" in k or "usage" in k for k in metrics)
    assert first["pass_at_k"] == pytest.approx({"pass@1": 1 / 3, "pass@2": 1.0, "pass@3": 1.0})
    assert first["key_metrics"] == pytest.approx({"mean/reward": 0.625, "pass@1": 1 / 3})
    counts = [b["count"] for b in first["reward_histogram"]]
    assert counts == [1, 0, 0, 0, 0, 1, 0, 0, 0, 2]
    assert second["outcomes"] == {
        "measured": 0,
        "masked": 0,
        "unscored": 1,
        "failed": 0,
        "pending": 1,
    }
    assert second["agent_metrics"]["mean/tokens"] == 5
    assert second["pass_at_k"] == {} and "mean/reward" not in second["key_metrics"]


def test_summary_rows_keep_only_what_the_summaries_read_and_sum_up_the_same():
    evidence = {"ng_trajectory": {"turns": [1]}, "ng_model_call_capture": {"calls": []},
                "ng_agent_observations": {}, "responses_create_params": {"input": "q"},
                "response": {"usage": {"total_tokens": 9}}}  # fmt: skip
    echoed = {"prompt": "p" * 1000, "aliases": ["a"], "meta": {"n": 1}, "passed_tests": True}
    inputs = [_input(0, r, "s") for r in range(4)]
    records = [
        _record(0, 0, reward=1.0, tokens=3, **evidence, **echoed),
        _record(0, 1, reward=0.0, tokens=5, mask_sample=False, **evidence, **echoed),
        _record(0, 3, reward=0.0, mask_sample=True, failure_kind="model_refused", **echoed),
    ]
    failures = [
        _record(0, 2, _ng_failure_class="environment_server_failed"),
        _record(0, 2, _ng_failure_class="agent_timeout", _ng_failure_message="m", **evidence),
    ]
    slim = summary_rows(records)
    assert all(not (set(evidence) | set(echoed)) & set(row) for row in slim.values())
    assert slim[(0, 1)] == _record(0, 1, reward=0.0, tokens=5, mask_sample=False)
    assert slim[(0, 3)]["failure_kind"] == "model_refused"
    assert slim[(0, 0)]["agent_ref"] is slim[(0, 1)]["agent_ref"]  # one object per agent
    assert summary_rows(failures)[(0, 2)] == _record(0, 2, _ng_failure_class="agent_timeout")
    whole = {(row["_ng_task_index"], row["_ng_rollout_index"]): row for row in records}
    (entry,) = aggregate(Planned.of(inputs).rollouts, slim, summary_rows(failures))
    assert entry == aggregate(Planned.of(inputs).rollouts, whole, summary_rows(failures))[0]
    assert entry["agent_metrics"]["mean/tokens"] == 4 and entry["outcomes"]["failed"] == 1
    assert entry["masked_kinds"] == {"model_refused": 1}


def test_pass_at_k_is_the_unbiased_estimator():
    # n=5, c=2: pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10
    assert pass_at_k({0: [True, True, False, False, False]}, 2) == pytest.approx(
        {"pass@1": 0.4, "pass@2": 0.7}
    )


def test_rewards_out_of_range_get_their_own_bins():
    inputs = [_input(0, r, "s") for r in range(3)]
    records = summary_rows([_record(0, r, reward=v) for r, v in enumerate((-1.0, 1.0, 2.5))])
    (entry,) = aggregate(Planned.of(inputs).rollouts, records, {})
    bins = entry["reward_histogram"]
    assert (bins[0]["lo"], bins[0]["count"]) == (None, 1)
    assert (bins[-1]["hi"], bins[-1]["count"]) == (None, 1)
    assert bins[-2]["count"] == 1  # 1.0 falls in the last closed bin


def test_run_totals_are_typed_and_write_the_files_entry():
    inputs = [_input(0, r, "s") for r in range(4)]
    records = summary_rows(
        [
            _record(0, 0, reward=1.0),
            _record(0, 1, reward=0.0),
            _record(0, 2, mask_sample=True, failure_kind="agent_request_failed"),
        ]
    )
    failures = summary_rows([_record(0, 3, _ng_failure_class="agent_timeout")])
    totals = summarize((item.key for item in inputs), records, failures)
    assert totals.masked_kinds == {"agent_request_failed": 1}
    assert totals.outcomes == Outcomes(measured=2, masked=1, failed=1)
    assert totals.outcomes.produced == 3
    assert (totals.reward_mean, totals.pass_at_1, totals.passed) == (0.5, 0.5, 1)
    assert totals.failure_kinds == {"agent_timeout": 1}
    assert totals.reward_histogram[0] == HistogramBin(0.0, 0.1, 1)
    (entry,) = aggregate(Planned.of(inputs).rollouts, records, failures)
    assert list(entry) == ["agent_ref", "_ng_environment_server", *totals.to_json()]
    assert totals.headline == "mean 0.500 over 2 of 4 planned; 1 masked; 1 failed"
    assert totals.unmeasured_kinds == {"agent_request_failed": 1, "agent_timeout": 1}
    assert list(totals.to_json()) == [
        "summary",
        "rollouts",
        "passed",
        "outcomes",
        "failure_kinds",
        "masked_kinds",
        "model_failure_kinds",
        "key_metrics",
        "agent_metrics",
        "pass_at_k",
        "reward_histogram",
    ]
    assert entry["outcomes"] == {
        "measured": 2,
        "masked": 1,
        "unscored": 0,
        "failed": 1,
        "pending": 0,
    }
    assert entry["reward_histogram"][-1] == {"lo": 0.9, "hi": 1.0, "count": 1}
