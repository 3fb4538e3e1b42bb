"""Dataset metrics: classification, summaries, hooks, sidecar comparison (reference 23-26)."""

from __future__ import annotations

import json
import math
import statistics

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gym_assets.tasks.metrics import (
    EXAMPLES,
    TASK_INPUT_WORDS,
    TASKS,
    WORDS,
    CategoricalSummary,
    DatasetMetrics,
    NumericSummary,
    metrics_differences,
    word_count,
)
from gym_assets.tasks.schemas import MetricsHookError

TASK_ID = {"taskset": "t", "task_id": "a"}


def metrics_of(rows: list[dict], repeats: int = 1, hook=None) -> dict:
    metrics = DatasetMetrics(hook, "owner")
    for row in rows:
        metrics.add_row(row, repeats)
    return metrics.to_dict()


def test_word_count_uses_default_json_dumps() -> None:
    value = {"a": [1, 2], "b": "two words", "c": "é"}
    assert json.dumps(value) == '{"a": [1, 2], "b": "two words", "c": "\\u00e9"}'
    assert word_count(value) == 8


_text = st.text(alphabet=st.sampled_from(list(' \t\n\r\x0b\x0c\x1c\x85\xa0\u3000ab:,[]{}"\\é')))
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=500, deadline=None)
@given(_values)
def test_word_count_equals_default_dumps_split(value: object) -> None:
    assume(not (isinstance(value, float) and math.isinf(value)))
    try:
        expected = len(json.dumps(value, allow_nan=False).split())
    except ValueError:  # infinities inside containers: not JSON
        return
    assert word_count(value) == expected


def test_rows_without_request_count_their_whole_content() -> None:
    rows = [
        {"task_id": "a", "resolved_row": {"persona": "short"}},
        {"task_id": "a", "resolved_row": {"persona": "a much longer persona text"}},
    ]
    out = metrics_of(rows)
    assert out[EXAMPLES] == 2
    assert TASKS not in out
    words = out[TASK_INPUT_WORDS]
    assert words["Min"] < words["Max"]


def test_run_request_rows_keep_their_historical_keys() -> None:
    out = metrics_of([{"responses_create_params": {"input": "x"}, "expected_answer": "4"}])
    assert out[EXAMPLES] == 1
    assert TASKS not in out and TASK_INPUT_WORDS not in out
    assert out["Number of turns"]["Total # non-null values"] == 1
    assert out[WORDS]["Average"] == word_count({"input": "x"})
    assert out["expected_answer"] == {"unique_count": 1, "total_count": 1}


def test_repeats_count_every_emitted_row() -> None:
    rows = [
        {"responses_create_params": {"input": "x", "temperature": 0.5}},
        {"invalid": "sample"},
    ]
    out = metrics_of(rows, repeats=2)
    assert out[EXAMPLES] == 4
    assert out["Temperature"]["Total # non-null values"] == 2
    assert out[TASK_INPUT_WORDS]["Total # non-null values"] == 2
    assert out["invalid"] == {"unique_count": 1, "total_count": 2}


def test_request_fields_are_measured() -> None:
    rcp = {
        "input": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
        ],
        "tools": [{"type": "function", "name": "f"}],
        "temperature": 0.25,
    }
    out = metrics_of([{"responses_create_params": rcp, "score": True, "tags": ["x", "y", 3]}])
    assert out["Number of turns"]["Max"] == 2.0
    assert out["Number of tools"]["Max"] == 1.0
    assert out["Temperature"]["Average"] == 0.25
    assert out["score"]["Average"] == 1.0
    # a field keeps the kind of its first value: the number in "tags" is not counted
    assert out["tags"] == {"unique_count": 2, "total_count": 2}


def test_invalid_request_counts_as_other_object() -> None:
    out = metrics_of([{"responses_create_params": {"input": 123}, "q": "x"}])
    assert out[EXAMPLES] == 1
    assert out[WORDS]["Total # non-null values"] == 0
    assert out[TASK_INPUT_WORDS]["Total # non-null values"] == 1


def test_tasks_are_counted_with_their_taskset_and_hook_metrics() -> None:
    task = {"task_id": TASK_ID, "task_input": {"expected_resolution": "refund"}, "_ng_x": 1}

    def hook(task_input):
        return {"Resolution": task_input["expected_resolution"], "Score": [1, 2], "none": None}

    out = metrics_of([task], repeats=2, hook=hook)
    assert out[EXAMPLES] == 2 and out[TASKS] == 2
    assert out["Tasksets"] == {"counts": {"t": 2}, "unique_count": 1, "total_count": 2}
    assert out["Resolution"]["counts"] == {"refund": 2}
    assert out["Score"]["Total # non-null values"] == 4
    assert "none" not in out


def test_malformed_tasks_are_left_out() -> None:
    metrics = DatasetMetrics()
    assert not metrics.add_row({"task_id": {"taskset": ""}, "task_input": {}})
    assert not metrics.add_row({"task_id": TASK_ID, "task_input": "x"})
    assert metrics.malformed_tasks == 2
    assert metrics.to_dict()[EXAMPLES] == 0


@pytest.mark.parametrize(
    ("result", "error", "match"),
    [
        ([1], TypeError, "must return a mapping"),
        ({1: "x"}, TypeError, "non-string metric name"),
        ({"": "x"}, MetricsHookError, "empty metric name"),
        ({"Number of examples": 1}, MetricsHookError, "cannot replace framework metric"),
        ({"tasksets": "x"}, MetricsHookError, "cannot replace framework metric"),
        ({"m": {"a": 1}}, TypeError, "unsupported value"),
        ({"m": ["a", 1]}, TypeError, "mixes categorical and numeric"),
    ],
)
def test_bad_hook_results(result: object, error: type, match: str) -> None:
    task = {"task_id": TASK_ID, "task_input": {}}
    with pytest.raises(error, match=match):
        metrics_of([task], hook=lambda _: result)


def test_numeric_summary_matches_statistics_and_merges() -> None:
    values = [3.0, 1.5, 10.0, 7.25, 0.5]
    whole, left, right = NumericSummary(), NumericSummary(), NumericSummary()
    for v in values:
        whole.add(v)
    for v in values[:2]:
        left.add(v)
    for v in values[2:]:
        right.add(v)
    left.merge(right)
    for summary in (whole, left):
        out = summary.to_dict()
        assert out["Total # non-null values"] == 5
        assert out["Average"] == round(statistics.mean(values), 2)
        assert out["Standard deviation"] == round(statistics.stdev(values), 2)
        assert (out["Min"], out["Max"]) == (0.5, 10.0)


def test_numeric_summary_rounding_and_empty() -> None:
    small = NumericSummary()
    small.add(0.12345)
    assert small.to_dict()["Average"] == 0.123
    assert small.to_dict()["Standard deviation"] == 0.0
    assert NumericSummary().to_dict() == {
        "Total # non-null values": 0,
        "Average": 0.0,
        "Min": 0.0,
        "Max": 0.0,
        "Standard deviation": 0.0,
    }
    assert not math.isinf(NumericSummary().to_dict()["Min"])


def test_categorical_keeps_100_labels_then_overflows() -> None:
    summary = CategoricalSummary()
    for i in range(105):
        summary.add(f"label{i:03d}")
    summary.add("label000")
    out = summary.to_dict()
    assert len(out["counts"]) == 101
    assert out["counts"]["Other"] == 5
    assert out["counts"]["label000"] == 2
    assert out["total_count"] == 106
    assert list(out["counts"])[:2] == ["label000", "label001"]
    real_other = CategoricalSummary()
    real_other.add("Other")
    for i in range(100):
        real_other.add(str(i))
    assert real_other.to_dict()["counts"]["Other (overflow)"] == 1


def test_merge_combines_every_summary() -> None:
    a, b = DatasetMetrics(), DatasetMetrics()
    a.add_row({"responses_create_params": {"input": "x"}, "q": "one"})
    b.add_row({"responses_create_params": {"input": "x y"}, "q": "two"})
    a.merge(b)
    out = a.to_dict()
    assert out[EXAMPLES] == 2
    assert out[WORDS]["Total # non-null values"] == 2
    assert out["q"] == {"unique_count": 2, "total_count": 2}


def test_differences_tolerate_float_noise_and_new_keys() -> None:
    old = {"a": 1.0, "b": {"c": 0.1234}, "d": [1, {"x": 2}], "e": "s"}
    new = {"a": 1.004, "b": {"c": 0.1237, "new": 1}, "d": [{"x": 2}, 1], "e": "s", "f": 2}
    assert metrics_differences(old, new) == []
    assert metrics_differences({"a": 1.0}, {"a": 1.01}) == ["a: stored 1.0 != computed 1.01"]
    assert metrics_differences({"b": {"c": 0.1}}, {"b": {"c": 0.1006}})
    assert metrics_differences({"x": 1}, {}) == ["x: missing from the new metrics"]
    assert metrics_differences({"d": [1, 1, 2]}, {"d": [1, 2, 2]})
    assert metrics_differences({"n": 3}, {"n": 3.0}) == []
    assert metrics_differences({"n": 3}, {"n": 4})
