"""The plan gate: dispatch only inputs whose digest equals the plan's."""

from __future__ import annotations

import copy

from gym_assets.rollouts.collection.inputs import RolloutInput, materialize_inputs
from gym_assets.rollouts.collection.plan_gate import PlanGate


def _inputs(products, name):
    catalog = products.catalog
    return materialize_inputs(products.taskset(name), catalog.get(name), catalog.loaded.data)


def _edited(item: RolloutInput, edit) -> RolloutInput:
    row = copy.deepcopy(item.row)
    edit(row)
    return RolloutInput.of(row, item.taskset)


def test_every_task_of_a_fresh_taskset_matches_its_plan(products):
    for name in ("units", "arith", "support_dialogue"):
        gate = PlanGate(products.plan(name))
        assert all(gate.refusal(item) is None for item in _inputs(products, name)), name
        assert gate.drifted() == []


def test_changed_input_is_refused_unless_drift_is_allowed(products):
    item = _inputs(products, "units")[0]
    changed = _edited(item, lambda row: row["task_input"]["task_data"].update(expected_answer="1"))
    reason = PlanGate(products.plan("units")).refusal(changed)
    assert reason is not None and "units-001" in reason and "--allow-plan-drift" in reason
    lenient = PlanGate(products.plan("units"), allow_drift=True)
    assert lenient.refusal(changed) is None
    assert lenient.drifted() == [("units", "units-001")]


def test_task_absent_from_the_plan_is_refused(products):
    item = _inputs(products, "units")[0]
    stranger = _edited(item, lambda row: row["task_id"].update(task_id="units-999"))
    reason = PlanGate(products.plan("units")).refusal(stranger)
    assert reason is not None and "not in the plan" in reason


def test_flat_rows_hash_without_routing_and_collector_keys(products):
    item = _inputs(products, "arith")[0]
    assert "agent_ref" in item.row and "_ng_environment_server" in item.row
    gate = PlanGate(products.plan("arith"))
    assert gate.refusal(item) is None
    edited = _edited(item, lambda row: row.update(expected_answer="0"))
    assert PlanGate(products.plan("arith")).refusal(edited) is not None
