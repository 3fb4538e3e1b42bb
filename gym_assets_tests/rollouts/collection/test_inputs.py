"""Preprocessing: one stamped input per rollout, indices, rollout ids, routing stamps."""

from __future__ import annotations

import json

import pytest

from gym_assets.errors import UserError
from gym_assets.rollouts.collection.inputs import RolloutInput, materialize_inputs


def _inputs(products, name, **options):
    catalog = products.catalog
    return materialize_inputs(
        products.taskset(name), catalog.get(name), catalog.loaded.data, **options
    )


def test_repeats_give_aabbcc_order_indices_and_rollout_ids(products):
    inputs = _inputs(products, "units", repeats=3)
    assert len(inputs) == 30 * 3
    assert [item.key for item in inputs[:4]] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert [item.rollout_id() for item in inputs[:3]] == ["0-0", "0-1", "0-2"]
    assert inputs[4].rollout_id(attempt=2) == "1-1-a2"
    first = inputs[0]
    assert first.task_key == ("units", "units-001")
    assert first.row["_ng_environment_server"] == "units_environment"
    assert first.row["_ng_task_index"] == 0 and first.row["_ng_rollout_index"] == 0
    assert first.materialized and "agent_ref" not in first.row
    assert first.task_input() == first.row["task_input"]


def test_default_is_one_rollout_per_collated_copy(products):
    inputs = _inputs(products, "units")
    assert [item.key for item in inputs] == [(i, 0) for i in range(30)]


def test_flat_rows_are_stamped_with_server_and_agent(products):
    inputs = _inputs(products, "arith", limit=2)
    assert [item.key for item in inputs] == [(0, 0), (1, 0)]
    row = inputs[0].row
    assert row["_ng_environment_server"] == "arith_environment"
    assert row["agent_ref"] == {"name": "arith_simple_agent"}
    assert inputs[0].task_key == ("arith", "arith-001")
    assert not inputs[0].materialized
    assert "agent_ref" not in inputs[0].task_input()
    assert not any(key.startswith("_ng_") for key in inputs[0].task_input())


def test_identical_rows_share_a_task_index_and_own_indices_are_kept(products, tmp_path):
    catalog = products.catalog
    rows = [json.loads(line) for line in products.taskset("units").read_text().splitlines()]
    a, b, c = rows[0], rows[1], {**rows[2], "_ng_task_index": 7}
    taskset = tmp_path / "benchmark.jsonl"
    taskset.write_text("".join(json.dumps(r) + "\n" for r in (a, b, a, c)))
    inputs = materialize_inputs(taskset, catalog.get("units"), catalog.loaded.data)
    assert [item.key for item in inputs] == [(0, 0), (0, 1), (1, 0), (7, 0)]
    repeated = materialize_inputs(taskset, catalog.get("units"), catalog.loaded.data, repeats=2)
    assert [item.key for item in repeated] == [(0, 0), (0, 1), (1, 0), (1, 1), (7, 0), (7, 1)]


def test_inventory_rows_read_back_the_same(products):
    for item in _inputs(products, "arith", limit=3) + _inputs(products, "units", limit=3):
        again = RolloutInput.of(json.loads(json.dumps(item.row)), item.taskset)
        assert again == item


@pytest.mark.parametrize("options", [{"repeats": 0}, {"limit": -1}])
def test_bad_options_are_refused(products, options):
    with pytest.raises(UserError):
        _inputs(products, "units", **options)
