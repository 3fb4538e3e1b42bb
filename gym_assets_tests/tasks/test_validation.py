"""Task-data validation: normalization, composition, report (reference cases 29-39)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from gym_assets.errors import UserError
from gym_assets.tasks.schemas import (
    SINGLE_AGENT_SCHEMA,
    SchemaLoadError,
    TaskSchema,
    load_metrics_hook,
    load_task_schema,
    task_schema,
)
from gym_assets.tasks.task_inputs import request_is_valid
from gym_assets.tasks.validation import (
    TaskDataValidator,
    normalize_row,
    resolve_validation_mode,
)

TASK_ID = {"taskset": "t", "task_id": "a"}


class QA(BaseModel):
    question: str
    expected_answer: str


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    expected_answer: str


class Dialogue(BaseModel):
    persona: str


class City(BaseModel):
    expected_city: str = Field(json_schema_extra={"legacy_location": "verifier_metadata"})


def validate(
    rows: list[dict[str, Any]],
    owner: type | None = None,
    environment: TaskSchema | None = None,
) -> TaskDataValidator:
    validator = TaskDataValidator(
        server_name="test",
        dataset_fpath="data.jsonl",
        environment=environment,
        owner=task_schema("owner", owner) if owner is not None else None,
    )
    for line, row in enumerate(rows, start=1):
        validator.validate(row, line)
    return validator


def test_normalize_strips_framework_keys() -> None:
    row = {
        "question": "q",
        "agent_ref": {"name": "a"},
        "task_source": "rs",
        "_ng_task_index": 1,
        "_ng_rollout_index": 0,
    }
    assert normalize_row(row).fields == {"question": "q"}


def test_verifier_metadata_is_spliced_to_the_top_level() -> None:
    row = {"responses_create_params": {}, "verifier_metadata": {"label": "safe", "type": "h"}}
    normalized = normalize_row(row)
    assert normalized.fields == {"responses_create_params": {}, "label": "safe", "type": "h"}
    assert normalized.conflicts == []


def test_differing_value_in_verifier_metadata_is_a_conflict_and_top_level_wins() -> None:
    normalized = normalize_row({"label": "safe", "verifier_metadata": {"label": "unsafe"}})
    assert normalized.fields == {"label": "safe"}
    assert normalized.conflicts == ["label"]


def test_undeclared_field_is_reported_unknown_not_an_error() -> None:
    validator = validate([{"question": "q", "expected_answer": "a", "difficulty": 3}], QA)
    report = validator.report
    assert report.error_rows == 0
    assert not report.clean
    assert dict(report.unknown_keys) == {"difficulty": 1}
    assert "keys not declared by the schema" in report.summary()


def test_id_fields_are_identity_not_unknown_task_data() -> None:
    report = validate([{"task_id": "x", "expected_answer": "a"}], Answer).report
    assert report.clean


def test_materialized_nested_task_data() -> None:
    good = {
        "task_id": TASK_ID,
        "task_input": {
            "responses_create_params": {"input": "x"},
            "task_data": {"question": "q", "expected_answer": "a"},
        },
    }
    assert validate([good], QA, SINGLE_AGENT_SCHEMA).report.clean
    bad = {"task_id": TASK_ID, "task_input": {"task_data": {"question": 1}}}
    assert validate([bad], QA).report.error_rows == 1


def test_environment_schema_skips_materialized_rows_but_not_plain_ones() -> None:
    materialized = {"task_id": TASK_ID, "task_input": {"question": "q", "expected_answer": "a"}}
    plain = {"question": "q", "expected_answer": "a"}
    report = validate([materialized, plain], QA, SINGLE_AGENT_SCHEMA).report
    assert report.error_rows == 1
    assert report.errors[0].startswith("2: ")
    assert "responses_create_params" in report.errors[0]


def test_differing_task_data_and_task_input_field_is_a_conflict() -> None:
    row = {
        "task_id": TASK_ID,
        "task_input": {"task_data": {"question": "q", "expected_answer": "a"}, "question": "d"},
    }
    assert dict(validate([row], QA).report.conflicting_keys) == {"question": 1}


@pytest.mark.parametrize(
    ("bad", "name"),
    [("bad", "str"), ([], "list"), ("", "str"), (0, "int"), (False, "bool"), (None, "null")],
)
def test_non_object_task_data_in_a_task_is_an_error(bad: object, name: str) -> None:
    report = validate([{"task_id": TASK_ID, "task_input": {"task_data": bad}}], QA).report
    assert report.errors == [f"1: task_input.task_data must be an object, got {name}"]


def test_non_object_task_input_is_an_error() -> None:
    report = validate([{"task_id": TASK_ID, "task_input": [1]}], QA).report
    assert report.errors == ["1: task_input must be an object, got list"]


def test_legacy_location_fields_must_be_inside_verifier_metadata() -> None:
    top = validate([{"expected_city": "Paris"}], City).report
    assert dict(top.misplaced_keys) == {"expected_city": 1}
    assert "the server will not see them" in top.summary()
    inside = {"verifier_metadata": {"expected_city": "Paris"}}
    both = {"expected_city": "Paris", "verifier_metadata": {"expected_city": "Paris"}}
    nested = {"task_data": {}, "expected_city": "Paris"}
    for row in (inside, both, nested):
        assert not validate([row], City).report.misplaced_keys


def test_owner_schema_that_forbids_extras_never_sees_the_request() -> None:
    rcp = {"input": "x"}
    assert validate(
        [{"responses_create_params": rcp, "expected_answer": "4"}], Answer, SINGLE_AGENT_SCHEMA
    ).report.clean
    report = validate([{"expected_answer": "4"}], Answer, SINGLE_AGENT_SCHEMA).report
    assert report.error_rows == 1
    assert "SingleAgentTaskData: responses_create_params: Field required" in report.errors[0]


def test_both_schemas_report_their_errors() -> None:
    dialogue = task_schema("dialogue", Dialogue)
    assert validate([{"persona": "p", "expected_answer": "4"}], Answer, dialogue).report.clean
    report = validate([{"question": "q"}], Answer, dialogue).report
    assert report.error_rows == 1
    assert "Dialogue: persona: Field required" in report.errors[0]
    assert "Answer: expected_answer: Field required" in report.errors[0]


def test_owner_schema_alone() -> None:
    assert validate([{"expected_answer": "4"}], Answer).report.clean
    report = validate([{"answer": "4"}], Answer).report
    assert report.error_rows == 1
    assert "expected_answer" in report.errors[0]


def test_report_lists_five_errors_then_counts_the_rest() -> None:
    report = validate([{"question": i} for i in range(8)], QA).report
    assert report.error_rows == 8
    assert len(report.errors) == 5
    summary = report.summary()
    assert summary.startswith("data.jsonl: 8/8 rows failed task_data validation against the `test`")
    assert "  ... and 3 more rows" in summary
    assert report.to_dict()["errors"] == report.errors


@pytest.mark.parametrize(
    ("requested", "collation_mode", "expected"),
    [
        ("auto", "example_validation", "error"),
        ("auto", "train_preparation", "warn"),
        ("warn", "example_validation", "warn"),
        ("off", "train_preparation", "off"),
        ("error", "train_preparation", "error"),
    ],
)
def test_validation_mode(requested: str, collation_mode: str, expected: str) -> None:
    assert resolve_validation_mode(requested, collation_mode) == expected


def test_unknown_validation_mode_is_a_user_error() -> None:
    with pytest.raises(UserError, match="unknown task_data validation mode 'strict'"):
        resolve_validation_mode("strict", "train_preparation")


def test_union_schema_declares_the_fields_of_every_member(schema_package) -> None:
    package = schema_package(
        "resources_servers",
        "mixed",
        "task_data",
        """
        from typing import Literal, Union
        from pydantic import BaseModel, Field

        class A(BaseModel):
            kind: Literal["a"]
            alpha: str = Field(json_schema_extra={"legacy_location": "verifier_metadata"})

        class B(BaseModel):
            kind: Literal["b"]
            beta: int

        TaskData = Union[A, B]
        """,
    )
    schema = load_task_schema("resources_servers", "mixed", package=package)
    assert schema is not None
    assert schema.fields == {"kind", "alpha", "beta"}
    assert schema.legacy_fields == {"alpha"}


def test_missing_and_broken_schema_modules(schema_package) -> None:
    package = schema_package("resources_servers", "broken", "task_data", "raise RuntimeError('x')")
    schema_package("resources_servers", "empty", "task_data", "X = 1")
    schema_package("resources_servers", "odd", "task_data", "TaskData = object()")
    assert load_task_schema("resources_servers", "absent", package=package) is None
    with pytest.raises(SchemaLoadError, match="Failed to import"):
        load_task_schema("resources_servers", "broken", package=package)
    with pytest.raises(SchemaLoadError, match="does not export `TaskData`"):
        load_task_schema("resources_servers", "empty", package=package)
    with pytest.raises(SchemaLoadError, match="TypeAdapter-compatible"):
        load_task_schema("resources_servers", "odd", package=package)


def test_single_agent_environments_use_the_builtin_schema() -> None:
    for impl in ("single_agent_turn", "single_agent_turn_legacy", "legacy_agent"):
        assert load_task_schema("environment_servers", impl) is SINGLE_AGENT_SCHEMA


def test_bundled_schemas_load() -> None:
    humaneval = load_task_schema("resources_servers", "humaneval")
    assert humaneval is not None
    assert humaneval.legacy_fields == {"prompt", "entry_point", "test", "canonical_solution"}
    exact = load_task_schema("resources_servers", "exact_match")
    assert exact is not None and exact.fields == {"expected_answer", "aliases"}
    conversation = load_task_schema("environment_servers", "conversation")
    assert conversation is not None
    assert conversation.fields == {"scenario", "user_profile", "opening_message"}
    hook = load_metrics_hook("resources_servers", "support_desk")
    assert hook is not None and hook({"expected_resolution": "refund"}) == {"Resolution": "refund"}
    assert load_metrics_hook("resources_servers", "arith") is None


def test_request_is_valid_is_pydantics_verdict() -> None:
    assert request_is_valid({"input": "x", "temperature": 0.5, "stream": False, "other": {"a": 1}})
    assert request_is_valid({"temperature": 1})  # an integer is a valid float
    for bad in ({"input": 3}, {"stream": True}, {"tools": {}}, [], None, "x"):
        assert not request_is_valid(bad)


class OwnsTheRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    responses_create_params: dict[str, int]


_json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
_json = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
_requests = st.dictionaries(
    st.sampled_from(["input", "tools", "temperature", "stream", "x"]), _json, max_size=4
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "responses_create_params": _requests | _json,
            "expected_answer": _json,
            "verifier_metadata": st.fixed_dictionaries(
                {}, optional={"responses_create_params": _requests, "expected_answer": _json}
            ),
        },
    )
)
def test_a_known_valid_request_gives_the_report_full_validation_gives(row: dict) -> None:
    # collation passes request_is_valid(row request) so the single-agent schema is not run
    # twice; whatever the row, the report must be the one full validation writes
    for owner in (None, Answer, OwnsTheRequest):
        reports = []
        for known in (request_is_valid(row.get("responses_create_params")), False):
            validator = TaskDataValidator(
                server_name="test",
                dataset_fpath="data.jsonl",
                environment=SINGLE_AGENT_SCHEMA,
                owner=task_schema("owner", owner) if owner is not None else None,
            )
            validator.validate(row, 1, valid_request=known)
            reports.append(validator.report.to_dict())
        assert reports[0] == reports[1]
