"""Model-call reference grammar and resolution, and the item-schema cases."""

from __future__ import annotations

import copy
import json

import pytest

from gym_assets.conformance.artifact_checks import ARTIFACT_CHECKS
from gym_assets.conformance.engine import schema_error_locations
from gym_assets.conformance.refs import is_valid_ref, matching_calls, resolve_unique
from gym_assets_tests.conformance.fixtures import (
    add_call,
    baseline_call,
    baseline_record,
    calls,
    failing,
    full_ref,
    model_ref,
    run,
    set_path,
    te,
    turns,
)

DEFINITIONS = {check.id: check for check in ARTIFACT_CHECKS}
REF = model_ref()
OTHER = model_ref("other-model")

VALID_FORMS = [
    {"model_call_id": "attempt-1"},
    {"model_call_id": "attempt-1", "model_ref": None, "response_id": None},
    {"model_ref": REF, "response_id": "response-1"},
    {"model_call_id": None, "model_ref": REF, "response_id": "response-1"},
    {"model_call_id": "attempt-1", "model_ref": REF, "response_id": "response-1"},
]
INVALID_FORMS = [
    {},
    {"response_id": "response-1"},
    {"model_ref": REF},
    {"model_call_id": " \t"},
    {"model_ref": {"type": "responses_api_models", "name": " "}, "response_id": "response-1"},
    {"model_ref": REF, "response_id": ""},
    {"model_call_id": "attempt-1", "response_id": ""},
    {"model_ref": {"type": "other_models", "name": "synthetic-model"}, "response_id": "r"},
    "attempt-1",
    None,
]


def item_valid(check_id: str, item) -> bool:
    """Does one array item satisfy a catalogue schema check?"""
    return not schema_error_locations(DEFINITIONS[check_id].schema, [item], "$")


@pytest.mark.parametrize("ref", VALID_FORMS)
def test_case_48_every_supported_ref_form_resolves(ref) -> None:
    assert is_valid_ref(ref)
    rec = baseline_record()
    turns(rec)[0]["model_calls"] = [copy.deepcopy(ref)]
    result = run(rec)
    assert te(result, "TE-9") == "fulfilled" and str(result.verdict) == "fulfilled"


@pytest.mark.parametrize("ref", INVALID_FORMS)
def test_case_49_invalid_ref_forms(ref) -> None:
    assert not is_valid_ref(ref)
    assert not item_valid("steps.references", {"model_calls": [ref]})
    assert resolve_unique(ref, calls(baseline_record())) is None
    rec = baseline_record()
    turns(rec)[0]["model_calls"] = [ref]
    assert failing(run(rec)) >= {"steps.references"}


@pytest.mark.parametrize("with_call_id", [True, False])
def test_case_50_removed_call_is_not_repaired_from_capture(with_call_id: bool) -> None:
    rec = baseline_record()
    calls(rec).pop()
    if not with_call_id:
        for turn in turns(rec):
            for ref in turn["model_calls"]:
                ref["model_call_id"] = None
    assert len(rec["ng_model_call_capture"]["calls"]) == 2
    assert run(rec).status("steps.call_target") == "fail"


@pytest.mark.parametrize(
    ("key", "value"),
    [("model_call_id", "missing"), ("response_id", "missing"), ("model_ref", OTHER)],
)
def test_case_51_conflicting_extra_key_does_not_resolve(key: str, value) -> None:
    rec = baseline_record()
    turns(rec)[0]["model_calls"][0][key] = value
    result = run(rec)
    assert result.status("steps.references") == "pass"
    assert result.status("steps.call_target") == "fail"


@pytest.mark.parametrize("new_id", [False, True])
def test_case_52_duplicated_call_is_ambiguous(new_id: bool) -> None:
    rec = baseline_record()
    duplicate = baseline_call(1)
    if new_id:
        duplicate["model_call_id"] = "attempt-1-copy"
        for ref in turns(rec)[0]["model_calls"]:
            ref["model_call_id"] = None
    calls(rec).append(duplicate)
    assert run(rec).status("steps.call_target") == "fail"


def test_case_53_previous_response_is_scoped_by_server() -> None:
    rec = baseline_record()
    calls(rec)[1]["request"]["previous_response_id"] = "response-1"
    assert failing(run(rec)) == set()

    for server, expected in ((OTHER, set()), (model_ref(), {"content.previous_response"})):
        variant = copy.deepcopy(rec)
        extra = baseline_call(1)
        extra["model_call_id"] = "attempt-extra"
        extra["response_metadata"]["model_ref"] = server
        add_call(variant, extra, index=1, own=True, step=0)
        assert failing(run(variant)) == expected


def test_previous_response_needs_retained_payloads() -> None:
    rec = baseline_record()
    calls(rec)[1]["request"]["previous_response_id"] = "response-1"
    calls(rec)[0]["response"] = None
    calls(rec)[0]["response_metadata"].update(status_code=None, error_category="timeout")
    assert "content.previous_response" in failing(run(rec))


def test_previous_response_must_be_earlier() -> None:
    rec = baseline_record()
    calls(rec)[0]["request"]["previous_response_id"] = "response-2"
    assert failing(run(rec)) == {"content.previous_response"}


def test_case_54_response_id_scoped_by_model_server() -> None:
    rec = baseline_record()
    turns(rec)[0]["model_calls"][0]["model_call_id"] = None
    other = baseline_call(1)
    other["model_call_id"] = "attempt-other"
    other["response_metadata"]["model_ref"] = OTHER
    add_call(rec, other, own=True)
    assert run(rec).status("steps.call_target") == "pass"


def test_resolution_narrowing_and_ambiguity() -> None:
    two = [baseline_call(1), baseline_call(1)]
    two[1]["model_call_id"] = "attempt-1b"
    by_pair = {"model_ref": REF, "response_id": "response-1"}
    assert matching_calls(by_pair, two) == [0, 1]
    assert resolve_unique(by_pair, two) is None
    assert resolve_unique({**by_pair, "model_call_id": "attempt-1b"}, two) == 1
    assert resolve_unique({**by_pair, "model_call_id": "nope"}, two) is None
    assert resolve_unique({"model_call_id": "attempt-1"}, [*two, "garbage", {}]) == 0


def test_ref_matching_is_type_exact() -> None:
    call = baseline_call(1)
    call["model_call_id"] = 1
    assert resolve_unique({"model_call_id": "1"}, [call]) is None


@pytest.mark.parametrize(
    ("dialect", "request_", "ok"),
    [
        ("responses", {"input": []}, True),
        ("responses", {"input": "prompt"}, True),
        ("responses", {"input": [42]}, False),
        ("responses", {"messages": []}, False),
        ("chat", {"messages": []}, True),
        ("chat", {"messages": "prompt"}, False),
        ("chat", {"messages": [42]}, False),
        ("messages", {"messages": []}, True),
        ("messages", {"messages": "prompt"}, False),
        ("messages", {"messages": [42]}, False),
        ("chat", {"input": []}, False),
    ],
)
def test_case_55_request_shapes(dialect: str, request_, ok: bool) -> None:
    item = {"request": request_, "response_metadata": {"dialect": dialect}}
    assert item_valid("calls.request", item) is ok


def _response_item(response, dialect: str = "chat", status=200, **meta) -> dict:
    return {
        "response": response,
        "response_metadata": {"dialect": dialect, "status_code": status, **meta},
    }


@pytest.mark.parametrize(
    ("item", "ok"),
    [
        (_response_item({"choices": [{}]}), False),
        (_response_item({"choices": [{"message": {"role": "assistant"}}]}), True),
        (_response_item({"choices": [{"message": {"role": "user"}}]}), False),
        (_response_item({"content": [{"type": "text"}]}, "messages"), True),
        (_response_item({"content": "text"}, "messages"), False),
        (_response_item({"output": []}, "responses"), True),
        (_response_item({"output": "x"}, "responses"), False),
        (_response_item("raw text", "responses"), False),
        (_response_item("raw text", "responses", 500), True),
    ],
)
def test_case_56_success_body_shapes(item, ok: bool) -> None:
    assert item_valid("calls.response", item) is ok


def _meta(status, dialect="chat", **fields) -> dict:
    return {"response_metadata": {"status_code": status, "dialect": dialect, **fields}}


@pytest.mark.parametrize(
    ("item", "ok"),
    [
        (_meta(200, finish_reason="stop"), True),
        (_meta(200, "messages", finish_reason="end_turn"), True),
        (_meta(200, finish_reason=" "), False),
        (_meta(200, "responses", response_status="incomplete"), True),
        (_meta(200, "responses", response_status="queued"), False),
        (_meta(400, error_category="http_error"), True),
        (_meta(400), False),
        (_meta(None, error_category="timeout"), True),
        (_meta(None, error_category=" "), False),
        (_meta(999, error_category="http_error"), False),
        (_meta(200, "responses", finish_reason="stop"), False),
        (_meta(200, "chat", response_status="completed"), False),
    ],
)
def test_case_57_outcome_metadata(item, ok: bool) -> None:
    assert item_valid("calls.outcome", item) is ok


@pytest.mark.parametrize("name", ["", " \t", None])
def test_case_58_model_server_name(name) -> None:
    item = {"response_metadata": {"model_ref": {"type": "responses_api_models", "name": name}}}
    assert not item_valid("calls.model", item)
    good = {"response_metadata": {"model_ref": REF}}
    assert item_valid("calls.model", good)


@pytest.mark.parametrize(
    ("metadata", "ok"),
    [
        ({}, False),
        ({"response_id": " "}, False),
        ({"response_id": "r"}, True),
        ({"error_category": "timeout"}, True),
        ({"error_category": "timeout", "response_id": None}, True),
        ({"error_category": "timeout", "response_id": " "}, False),
    ],
)
def test_case_59_response_id_rules(metadata, ok: bool) -> None:
    assert item_valid("calls.response_id", {"response_metadata": metadata}) is ok


@pytest.mark.parametrize(
    ("item", "ok"),
    [
        (_response_item(None, "responses", 200), False),
        (_response_item(None, "responses", None, error_category="timeout"), True),
        (_response_item({"error": {"code": "x"}}, "responses", None, error_category="t"), False),
        (_response_item({"error": {"code": "x"}}, "responses", 500, error_category="t"), True),
    ],
)
def test_case_60_response_presence_rules(item, ok: bool) -> None:
    assert item_valid("calls.response", item) is ok


def test_case_61_payload_never_reaches_the_result() -> None:
    canary = "payload-canary-5b1e9d"
    rec = set_path(baseline_record(), "ng_trajectory.model_calls[0].request.input", [canary])
    result = run(rec)
    assert result.status("calls.request") == "fail"
    assert canary not in json.dumps(result.to_dict())


def test_payload_canary_in_every_failing_schema_location() -> None:
    canary = "payload-canary-22c4"
    rec = baseline_record()
    calls(rec)[0]["token_stats"]["prompt_tokens"] = canary
    calls(rec)[0]["response_metadata"]["dialect"] = canary
    turns(rec)[0]["resolved"] = canary
    rec["reward"] = canary
    result = run(rec)
    assert str(result.verdict) == "not_fulfilled"
    assert canary not in json.dumps(result.to_dict())


def test_full_ref_helper_matches_fixture_refs() -> None:
    rec = baseline_record()
    assert turns(rec)[0]["model_calls"] == [full_ref(calls(rec)[0])]
