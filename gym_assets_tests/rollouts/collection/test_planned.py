"""The inventory as the end of a run reads it."""

from __future__ import annotations

from gym_assets.plans.canonical import digest
from gym_assets.rollouts.collection.inputs import RolloutInput
from gym_assets.rollouts.collection.planned import Planned, PlannedRollout, PlannedTask


def _input(task, rollout, question, agent=None):
    row = {
        "task_id": {"taskset": "t", "task_id": f"task-{task}"},
        "task_input": {"question": question},
        "_ng_task_index": task,
        "_ng_rollout_index": rollout,
        "_ng_environment_server": "env",
    }
    if agent is not None:
        row["agent_ref"] = {"name": agent}
    return RolloutInput.of(row, "t")


def test_a_task_is_what_its_first_rollout_by_key_says_wherever_it_comes_in_the_inventory():
    inputs = [_input(0, 1, "later"), _input(0, 0, "first"), _input(1, 0, "other", agent="a")]
    planned = Planned.of(inputs)
    assert [r.key for r in planned.rollouts] == [(0, 1), (0, 0), (1, 0)]  # inventory order
    assert planned.tasks[0] == PlannedTask("env", "t", "task-0", digest({"question": "first"}))
    assert planned.rollouts[2] == PlannedRollout(1, 0, "env", "a")
    assert planned.rollouts[0].agent is None  # a row without agent_ref names none


def test_the_view_holds_one_string_per_name_not_one_per_rollout():
    rows = []
    for task in range(3):
        row = dict(_input(task, 0, "q", agent="a").row)
        # each row with string objects of its own, as rows parsed from a file have
        row["_ng_environment_server"] = "".join(["e", "nv"])
        row["agent_ref"] = {"name": "".join(["ag", "ent"])}
        rows.append(RolloutInput.of(row, "t"))
    assert len({id(row.server) for row in rows}) == 3
    assert len({id(row.row["agent_ref"]["name"]) for row in rows}) == 3
    planned = Planned.of(rows)
    assert len({id(rollout.server) for rollout in planned.rollouts}) == 1
    assert len({id(rollout.agent) for rollout in planned.rollouts}) == 1
    assert len({id(task.server) for task in planned.tasks.values()}) == 1
