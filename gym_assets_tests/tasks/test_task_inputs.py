"""SingleAgentTurnTaskInput: flat and nested shapes are equivalent (reference cases 40-42)."""

from __future__ import annotations

import copy

import pytest
from pydantic import ValidationError

from gym_assets.tasks.task_inputs import (
    SingleAgentTaskData,
    SingleAgentTurnTaskInput,
    TaskId,
)

RCP = {"input": "x"}


def test_flat_and_nested_shapes_give_the_same_task_data() -> None:
    fields = {"instance_id": "i1", "verifier_metadata": {"answer": "ok"}}
    flat = {"responses_create_params": RCP, **fields}
    nested = {"responses_create_params": RCP, "task_data": fields}
    before = copy.deepcopy(flat)
    for shape in (flat, nested):
        parsed = SingleAgentTurnTaskInput.model_validate(shape)
        assert parsed.task_data == fields
        assert parsed.responses_create_params.input == "x"
    assert flat == before


def test_flat_fields_join_nested_ones_and_differing_duplicates_conflict() -> None:
    row = {"responses_create_params": RCP, "task_data": {"answer": "ok"}, "instance_id": "i1"}
    assert SingleAgentTurnTaskInput.model_validate(row).task_data == {
        "answer": "ok",
        "instance_id": "i1",
    }
    same = {**row, "answer": "ok"}
    assert SingleAgentTurnTaskInput.model_validate(same).task_data["answer"] == "ok"
    with pytest.raises(ValidationError, match="Conflicting task field 'answer'"):
        SingleAgentTurnTaskInput.model_validate({**row, "answer": "wrong"})


@pytest.mark.parametrize("bad", [None, [], "bad", False])
def test_task_data_must_be_an_object(bad: object) -> None:
    with pytest.raises(ValidationError):
        SingleAgentTurnTaskInput.model_validate({"responses_create_params": RCP, "task_data": bad})


def test_request_is_required_and_streaming_is_refused() -> None:
    with pytest.raises(ValidationError):
        SingleAgentTurnTaskInput.model_validate({"task_data": {}})
    with pytest.raises(ValidationError):
        SingleAgentTurnTaskInput.model_validate(
            {"responses_create_params": {"input": "x", "stream": True}}
        )


def test_environment_schema_fields_plus_task_data_equal_the_runtime_model() -> None:
    assert set(SingleAgentTaskData.model_fields) | {"task_data"} == set(
        SingleAgentTurnTaskInput.model_fields
    )


def test_task_id_is_non_empty_and_closed() -> None:
    assert TaskId(taskset="t", task_id="a").model_dump() == {"taskset": "t", "task_id": "a"}
    for bad in ({"taskset": "", "task_id": "a"}, {"taskset": "t", "task_id": "a", "x": 1}):
        with pytest.raises(ValidationError):
            TaskId.model_validate(bad)
