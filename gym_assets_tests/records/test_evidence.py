"""Evidence models: strictness, invariants, derived JSON Schemas, identity, gap codes."""

from __future__ import annotations

import copy

import pytest
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from gym_assets.records import evidence as ev
from gym_assets.records.ids import make_rollout_id
from gym_assets_tests.conformance.fixtures import baseline_record, calls, set_path, turns


def test_baseline_round_trips_through_the_models() -> None:
    row = baseline_record()
    model = ev.RolloutRecord.model_validate(row)
    assert model.to_row() == row
    assert isinstance(model.ng_trajectory, ev.TrajectoryRecord)


def test_json_schemas_are_valid_2020_12_and_accept_the_baseline() -> None:
    schemas = ev.json_schemas()
    assert {"ng_trajectory", "ng_agent_observations", "ng_model_call_capture"} <= set(schemas)
    for schema in schemas.values():
        Draft202012Validator.check_schema(schema)
    row = baseline_record()
    for name in ("ng_trajectory", "ng_agent_observations", "ng_model_call_capture"):
        assert not list(Draft202012Validator(schemas[name]).iter_errors(row[name])), name
    assert Draft202012Validator(schemas["rollout"]).is_valid(row)


def test_schema_rejects_an_invalid_reference() -> None:
    schema = ev.json_schemas()["model_call_ref"]
    assert not Draft202012Validator(schema).is_valid({"response_id": "r"})
    assert Draft202012Validator(schema).is_valid({"model_call_id": "a"})


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("ng_trajectory.model_calls[0].token_stats.prompt_tokens", True),
        ("ng_trajectory.model_calls[0].token_stats.prompt_tokens", -1),
        ("ng_trajectory.model_calls[0].token_stats.prompt_tokens", "10"),
        ("ng_trajectory.model_calls[0].response_metadata.dialect", "soap"),
        ("ng_trajectory.model_calls[0].model_call_id", " "),
        ("ng_trajectory.turns[0].turn_no", 0),
        ("ng_trajectory.turns[0].model_calls", []),
        ("ng_trajectory.turns[0].rollout_id", "other"),
        ("ng_trajectory.turns[1].turn_no", 1),
        ("ng_trajectory.invocations[0].model_calls[0]", {"response_id": "r"}),
        ("ng_trajectory.schema_version", "2.0"),
        ("ng_trajectory.unknown_key", 1),
        ("reward", float("nan")),
        ("mask_sample", "false"),
    ],
)
def test_models_refuse_what_a_producer_must_not_write(path: str, value) -> None:
    with pytest.raises(ValidationError):
        ev.RolloutRecord.model_validate(set_path(baseline_record(), path, value))


def test_duplicate_call_ids_and_missing_resolution_are_refused() -> None:
    row = baseline_record()
    calls(row).append(copy.deepcopy(calls(row)[0]))
    with pytest.raises(ValidationError):
        ev.RolloutRecord.model_validate(row)
    row = baseline_record()
    del turns(row)[0]["resolved"]
    with pytest.raises(ValidationError):
        ev.RolloutRecord.model_validate(row)


def test_observation_records_are_discriminated_by_kind() -> None:
    bundle = ev.AgentObservations.model_validate(
        {
            "source": "agent",
            "records": [
                {"kind": "sandbox", "role": "agent", "sandbox_id": "s", "outcome": "oom"},
                {"kind": "context_compaction", "invocation_id": "i"},
            ],
        }
    )
    assert isinstance(bundle.records[0], ev.SandboxObservation)
    assert isinstance(bundle.records[1], ev.ContextCompaction)
    with pytest.raises(ValidationError):
        ev.AgentObservations.model_validate({"source": "a", "records": [{"kind": "mystery"}]})


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((0, 0), "0-0"),
        ((3, 1, 0), "3-1"),
        ((3, 1, 2), "3-1-a2"),
        ((3, 1, 0, "run.A_1"), "run.A_1"),
        ((3, 1, 1, "run"), "run-a1"),
    ],
)
def test_rollout_id(args, expected: str) -> None:
    assert make_rollout_id(*args) == expected


@pytest.mark.parametrize("explicit", ["", "-x", "a/b", "a b", ".hidden"])
def test_malformed_explicit_rollout_id_is_refused(explicit: str) -> None:
    with pytest.raises(ValueError):
        make_rollout_id(0, 0, explicit=explicit)


@pytest.mark.parametrize(
    ("code", "effect"),
    [
        ("model_call_capture_incomplete", ev.GapEffect.CAPTURE),
        ("model_call_capture_gap_invalid", ev.GapEffect.CAPTURE),
        ("agent_observation_join_failed", ev.GapEffect.CAPTURE),
        ("model_call_reference_ambiguous", ev.GapEffect.OWNERSHIP),
        ("model_call_ownership_unavailable", ev.GapEffect.OWNERSHIP),
        ("turns_unavailable", ev.GapEffect.STEPS),
        ("turn_evidence_incomplete", ev.GapEffect.STEPS),
        ("trajectory_projection_failed", ev.GapEffect.STEPS),
        ("turn_model_call_scope_incomplete", ev.GapEffect.STEP_ACCOUNTING),
        ("tool_timing_unavailable", None),
        ("conversation_unavailable", None),
        ("multimodal_history_redacted", None),
        ("model_calls_unavailable", None),
    ],
)
def test_gap_effects(code: str, effect) -> None:
    assert ev.gap_effect(code) is effect


def test_failure_sidecar_rows() -> None:
    row = {"_ng_failure_class": "judge_failed", "_ng_failure_terminal": True, "_ng_task_index": 0}
    model = ev.FailureSidecarRow.model_validate(row)
    assert model.failure_class == "judge_failed" and model.failure_terminal is True
    assert ev.is_failure_row(row) and not ev.is_failure_row(baseline_record())
    with pytest.raises(ValidationError):
        ev.FailureSidecarRow.model_validate({"_ng_failure_class": " "})
