"""materialize_task: task-ID precedence, task_input contents, refusals (reference cases 1-11)."""

from __future__ import annotations

import copy

import pytest
from pydantic import ValidationError

from gym_assets.tasks.materialize import materialize_task
from gym_assets.tasks.task_inputs import SingleAgentTurnTaskInput

RCP = {"input": [{"role": "user", "content": "hi"}]}

ID_CASES = [
    ({"task_id": 0, "problem_id": "problem", "instance_id": "instance"}, 5, "0"),
    ({"task_id": None, "problem_id": "problem", "instance_id": "instance"}, 5, "problem"),
    ({"problem_id": None, "instance_id": "instance"}, 5, "instance"),
    ({"_ng_task_index": 0}, 5, "0"),
    ({}, 5, "5"),
]


@pytest.mark.parametrize(("fields", "index", "expected"), ID_CASES)
def test_task_id_precedence(fields: dict, index: int, expected: str) -> None:
    row = {**fields, "responses_create_params": RCP}
    task = materialize_task(row, "test", index)
    assert task["task_id"] == {"taskset": "test", "task_id": expected}


@pytest.mark.parametrize(("fields", "index", "expected"), ID_CASES)
def test_editing_the_prompt_keeps_the_task_id(fields: dict, index: int, expected: str) -> None:
    row = {**fields, "responses_create_params": RCP}
    edited = {**fields, "responses_create_params": {"input": "a different prompt"}}
    assert (
        materialize_task(row, "test", index)["task_id"]
        == materialize_task(edited, "test", index)["task_id"]
    )


def test_task_input_keeps_task_fields_and_drops_routing_and_collector_keys() -> None:
    row = {
        "task_id": "t1",
        "responses_create_params": {"input": "x", "temperature": 0.0, "instructions": None},
        "run_script": "pytest -q",
        "verifier_metadata": {"answer": None, "enabled": False},
        "agent_ref": {"name": "a"},
        "skills_ref": {"name": "s"},
        "task_source": "rs",
        "_ng_task_index": 3,
        "_ng_rollout_index": 1,
        "_ng_attempt_index": 2,
        "_ng_rollout_id": "r",
        "_ng_custom_metadata": {"k": 1},
    }
    before = copy.deepcopy(row)
    task = materialize_task(row, "test")
    assert task == {
        "task_id": {"taskset": "test", "task_id": "t1"},
        "task_input": {
            "responses_create_params": {"input": "x", "temperature": 0.0, "instructions": None},
            "task_id": "t1",
            "run_script": "pytest -q",
            "verifier_metadata": {"answer": None, "enabled": False},
        },
    }
    assert row == before


@pytest.mark.parametrize("bad_index", [None, -1, True, "5"])
def test_bad_own_index_is_refused(bad_index: object) -> None:
    with pytest.raises(ValueError, match="non-negative task_index"):
        materialize_task({"_ng_task_index": bad_index, "responses_create_params": RCP}, "t")


def test_row_without_id_needs_an_index() -> None:
    with pytest.raises(ValueError, match="task_index"):
        materialize_task({"responses_create_params": RCP}, "t")


def test_materializing_twice_is_refused() -> None:
    task = materialize_task({"task_id": "a", "responses_create_params": RCP}, "t")
    with pytest.raises(ValueError, match="already materialized"):
        materialize_task(task, "t")


def test_empty_taskset_is_refused() -> None:
    with pytest.raises(ValueError):
        materialize_task({"task_id": "a"}, "")


def test_request_is_not_validated_by_materialization_but_by_the_protocol() -> None:
    task = materialize_task({"task_id": "task", "responses_create_params": {"input": 123}}, "t")
    assert task["task_input"]["responses_create_params"] == {"input": 123}
    with pytest.raises(ValidationError):
        SingleAgentTurnTaskInput.model_validate(task["task_input"])
