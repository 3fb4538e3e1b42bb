"""Behavioral checks: retained evidence against the independent witness."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gym_assets.conformance.behavioral_checks import (
    BEHAVIORAL_SPECS,
    Prescription,
    witnessed_usage,
)
from gym_assets.conformance.engine import Kind, Status, Tier
from gym_assets.conformance.fingerprint import canonical_json, exchange_fingerprint
from gym_assets.conformance.witness import WitnessedAttempt
from gym_assets_tests.conformance import fixtures as fx
from gym_assets_tests.conformance.witness_fixtures import (
    SCENARIOS,
    baseline_witness,
    behavioral,
    failing,
    reasons,
)

EXCHANGE_CHECKS = {"model.saved_exchanges", "model.response_metadata", "model.token_counts"}
ALL_IDS = [spec.id for spec in BEHAVIORAL_SPECS]


def canonical_fp(request, status, response):
    """The injected fingerprint of the reference tests: canonical JSON itself (readable)."""
    return canonical_json([request, status, response])


def test_catalogue_is_twenty_one_p0_behavioral_checks_with_unique_ids():
    assert len(ALL_IDS) == 21 == len(set(ALL_IDS))
    rows = behavioral(fx.baseline_record(), baseline_witness()).rows()
    assert {r.tier for r in rows} == {Tier.P0}
    assert {r.kind for r in rows} == {Kind.BEHAVIORAL}


def test_baseline_passes_every_applicable_check():
    results = behavioral(fx.baseline_record(), baseline_witness())
    statuses = {row.id: row.status for row in results.rows()}
    assert statuses.keys() == set(ALL_IDS)
    not_applicable = {"model.error_sequence", "model.retry_request", "model.terminal_error"}
    assert {k for k, v in statuses.items() if v == Status.NOT_APPLICABLE} == not_applicable
    assert failing(results) == set()


# ------------------------------------------------------------------ model exchanges (71-74, 77, 85)


def _delete_calls(rec):
    del fx.trajectory(rec)["model_calls"]


def _fabricate(field):
    def mutate(rec):
        fx.calls(rec)[0]["response_metadata"][field] = "fabricated"

    return mutate


def _prompt_999(rec):
    fx.calls(rec)[0]["token_stats"]["prompt_tokens"] = 999


def _delete_token_stats(rec):
    del fx.calls(rec)[0]["token_stats"]


def _reverse_input(rec):
    fx.calls(rec)[1]["request"]["input"].reverse()


@pytest.mark.parametrize(
    "mutate",
    [
        _delete_calls,
        _fabricate("response_id"),
        _fabricate("finish_reason"),
        _prompt_999,
        _delete_token_stats,
        _reverse_input,
    ],
)
def test_saved_exchange_mutations_fail_only_exchange_checks(mutate):
    witness = baseline_witness()
    record = fx.baseline_record()
    mutate(record)
    for fingerprint in (exchange_fingerprint, canonical_fp):
        found = failing(behavioral(record, witness, fingerprint=fingerprint))
        assert found and found <= EXCHANGE_CHECKS


def _error_call(response_id=None):
    call = fx.baseline_call(1)
    call["model_call_id"] = "attempt-400"
    call["response"] = {"error": {"message": "bad request", "type": "invalid_request_error"}}
    call["response_metadata"].update(
        status_code=400,
        response_id=response_id,
        response_status=None,
        error_category="http_error",
    )
    call["token_stats"] = {}
    return call


def test_retained_error_attempt_without_response_id_matches_the_witness():
    record = fx.baseline_record()
    fx.add_call(record, _error_call(), index=0, own=True)
    witness = baseline_witness(record)
    assert witness.attempts[0].status_code == 400
    assert failing(behavioral(record, witness)) == set()

    invented = fx.baseline_record()
    fx.add_call(invented, _error_call("invented"), index=0, own=True)
    assert failing(behavioral(invented, witness)) == {"model.response_metadata"}


def _chat_call(usage):
    call = fx.baseline_call(1)
    call["request"] = {"model": fx.MODEL_NAME, "messages": [{"role": "user", "content": "hi"}]}
    call["response"] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
    }
    if usage:
        call["response"]["usage"] = usage
    call["response_metadata"].update(
        dialect="chat", response_id="chatcmpl-1", response_status=None, finish_reason="stop"
    )
    return call


def test_chat_exchange_without_usage_must_keep_null_counts():
    record = fx.baseline_record()
    call = _chat_call(usage=None)
    call["token_stats"] = dict.fromkeys(fx.ev.TOKEN_FIELDS)
    fx.calls(record)[0] = call
    witness = baseline_witness(record)
    assert failing(behavioral(record, witness)) == set()

    call["token_stats"] = dict.fromkeys(fx.ev.TOKEN_FIELDS, 0)
    assert failing(behavioral(record, witness)) == {"model.token_counts"}


def test_chat_usage_is_read_from_chat_fields():
    usage = {
        "prompt_tokens": 20,
        "completion_tokens": 8,
        "total_tokens": 28,
        "completion_tokens_details": {"reasoning_tokens": 2},
        "prompt_tokens_details": {"cached_tokens": 3},
    }
    call = _chat_call(usage)
    assert witnessed_usage(call["request"], call["response"]) == [20, 8, 2, 28, 3]
    assert witnessed_usage({"input": []}, {"usage": fx.USAGE}) == [10, 5, 3, 15, 2]
    assert witnessed_usage({"input": []}, {"status": "completed"}) == [None] * 5


def _distinct_second_call(record):
    usage = {**fx.USAGE, "input_tokens": 30, "total_tokens": 35}
    fx.calls(record)[1]["response"]["usage"] = usage
    fx.calls(record)[1]["token_stats"].update(prompt_tokens=30, total_tokens=35)


def test_swapping_token_stats_between_calls_fails_token_counts():
    record = fx.baseline_record()
    _distinct_second_call(record)
    witness = baseline_witness(record)
    assert failing(behavioral(record, witness)) == set()
    first, second = fx.calls(record)
    first["token_stats"], second["token_stats"] = second["token_stats"], first["token_stats"]
    assert failing(behavioral(record, witness)) == {"model.token_counts"}


def test_duplicate_witness_attempt_fails_saved_exchanges_and_mentions_canonical():
    witness = baseline_witness()
    doubled = dataclasses.replace(witness, attempts=(*witness.attempts, witness.attempts[0]))
    results = behavioral(fx.baseline_record(), doubled)
    assert "model.saved_exchanges" in failing(results)
    assert any("canonical" in r for r in reasons(results))


def test_multiplicity_matters_dropping_one_of_two_identical_retries_fails():
    record = fx.baseline_record()
    for _ in range(2):
        fx.add_call(record, _error_call(), index=0, own=True)
    fx.calls(record)[1]["model_call_id"] = "attempt-429b"
    witness = baseline_witness(record)
    assert failing(behavioral(record, witness)) == set()
    del fx.calls(record)[1]
    assert "model.saved_exchanges" in failing(behavioral(record, witness))


def test_changed_witness_usage_total_fails_token_counts_and_mentions_canonical():
    witness = baseline_witness()
    response = json.loads(json.dumps(witness.attempts[0].response))
    response["usage"]["total_tokens"] = 16
    first = dataclasses.replace(witness.attempts[0], response=response)
    changed = dataclasses.replace(witness, attempts=(first, *witness.attempts[1:]))
    results = behavioral(fx.baseline_record(), changed, fingerprint=lambda *a: "same")
    assert failing(results) == {"model.token_counts"}
    assert any("canonical" in r for r in reasons(results))


def test_fingerprint_is_injectable():
    record = fx.baseline_record()
    fx.calls(record)[0]["response"]["output"] = []
    assert "model.saved_exchanges" in failing(behavioral(record, baseline_witness()))
    blind = behavioral(record, baseline_witness(), fingerprint=lambda *a: "same")
    assert "model.saved_exchanges" not in failing(blind)


def test_chat_fingerprint_ignores_created_only_for_chat_completions():
    body = _chat_call(None)["response"]
    without = {k: v for k, v in body.items() if k != "created"}
    request = {"messages": []}
    assert exchange_fingerprint(request, 200, body) == exchange_fingerprint(request, 200, without)
    other = {**body, "object": "response"}
    assert exchange_fingerprint(request, 200, other) != exchange_fingerprint(
        request, 200, {k: v for k, v in other.items() if k != "created"}
    )
    assert exchange_fingerprint(request, 200, body) != exchange_fingerprint(request, 500, body)
    assert exchange_fingerprint(request, 200, {"x": float("nan")}) == exchange_fingerprint(
        request, 200, {"x": float("nan")}
    )


# ------------------------------------------------------------------ tools (75, 76, 79, 81)


def _drop_conversation_items(record, call_id):
    conversation = fx.invocation(record)["conversation"]
    conversation[:] = [item for item in conversation if item.get("call_id") != call_id]


def test_removing_a_tool_request_from_the_conversation_breaks_join_and_request_only():
    record = fx.baseline_record()
    _drop_conversation_items(record, "tool-1")
    results = behavioral(record, baseline_witness())
    assert results.status("tools.witness_join") == Status.FAIL
    assert results.status("tools.witness_request") == Status.FAIL
    assert results.get("tools.witness_request").blocked_by == ("tools.witness_join",)
    assert results.status("tools.witness_status") == Status.PASS
    assert results.status("tools.witness_output") == Status.PASS


def test_witness_without_outputs_fails_output_with_its_reason():
    witness = baseline_witness()
    tool0 = dataclasses.replace(witness.tool_calls[0], outputs=())
    witness = dataclasses.replace(witness, tool_calls=(tool0, *witness.tool_calls[1:]))
    results = behavioral(fx.baseline_record(), witness)
    assert failing(results) == {"tools.witness_output"}
    assert results.get("tools.witness_output").reasons == (
        "retained tool output differs from the independent tool witness",
    )


def _drop_tool_2(rec):
    fx.tool_calls(rec).pop()
    _drop_conversation_items(rec, "tool-2")


def _duplicate_tool(rec):
    fx.tool_calls(rec).append(dict(fx.tool_calls(rec)[0]))


def _extra_tool(rec):
    fx.tool_calls(rec).append({**fx.tool_calls(rec)[0], "tool_call_id": "tool-3"})


def _conversation_item(rec, call_id, kind):
    return next(
        item
        for item in fx.invocation(rec)["conversation"]
        if item.get("call_id") == call_id and item["type"] == kind
    )


def _arguments(rec):
    _conversation_item(rec, "tool-1", "function_call")["arguments"] = '{"key": "other"}'


def _name(rec):
    _conversation_item(rec, "tool-1", "function_call")["name"] = "write_value"
    fx.tool_calls(rec)[0]["tool_name"] = "write_value"


def _output(rec):
    _conversation_item(rec, "tool-1", "function_call_output")["output"] = "changed"
    fx.tool_calls(rec)[0]["output"] = "changed"


def _status(rec):
    fx.tool_calls(rec)[0]["status"] = "failed"


def _invocation(rec):
    fx.tool_calls(rec)[0]["invocation_id"] = "another-invocation"


TOOL_MUTATIONS = {
    "missing": _drop_tool_2,
    "duplicate": _duplicate_tool,
    "extra": _extra_tool,
    "arguments": _arguments,
    "name": _name,
    "output": _output,
    "status": _status,
    "invocation": _invocation,
}


@pytest.mark.parametrize("name", TOOL_MUTATIONS)
def test_tool_mutations_fail_a_tool_witness_check_not_the_model_ones(name):
    record = fx.baseline_record()
    TOOL_MUTATIONS[name](record)
    results = behavioral(record, baseline_witness())
    assert failing(results) and not failing(results) & EXCHANGE_CHECKS
    assert any("retained tool" in r for r in reasons(results))
    assert not any("retained model attempts differ" in r for r in reasons(results))


@pytest.mark.parametrize(
    ("saved", "outcome"), [("failed", Status.PASS), ("completed", Status.FAIL)]
)
def test_tool_status_follows_the_prescribed_exit_code(saved, outcome):
    witness = baseline_witness()
    tool0 = dataclasses.replace(witness.tool_calls[0], exit_code=7)
    witness = dataclasses.replace(witness, tool_calls=(tool0, *witness.tool_calls[1:]))
    record = fx.baseline_record()
    fx.tool_calls(record)[0]["status"] = saved
    results = behavioral(record, witness)
    assert results.status("tools.witness_status") == outcome
    if outcome == Status.FAIL:
        assert any(r.startswith("retained tool status differs") for r in reasons(results))


def test_namespaced_tool_request_matches_the_prefixed_witness_name():
    record = fx.baseline_record()
    for k in fx.STEPS:
        _conversation_item(record, f"tool-{k}", "function_call")["namespace"] = "functions"
    witness = baseline_witness()
    renamed = tuple(dataclasses.replace(t, name=f"functions__{t.name}") for t in witness.tool_calls)
    results = behavioral(record, dataclasses.replace(witness, tool_calls=renamed))
    assert results.status("tools.witness_request") == Status.PASS
    assert behavioral(record, witness).status("tools.witness_request") == Status.FAIL


def test_tool_ids_must_be_strings():
    record = fx.baseline_record()
    fx.tool_calls(record)[0]["tool_call_id"] = ["tool-1"]
    results = behavioral(record, baseline_witness())
    assert results.status("tools.witness_ids") == Status.FAIL
    for dependent in ("tools.witness_join", "tools.witness_status", "tools.witness_output"):
        assert results.get(dependent).blocked_by == ("tools.witness_ids",)


# ------------------------------------------------------------------ witness-only checks


def test_missing_witness_makes_every_check_fail_or_not_applicable():
    results = behavioral(fx.baseline_record(), None)
    assert {r.status for r in results.rows()} == {Status.FAIL, Status.NOT_APPLICABLE}
    for row in results.rows():
        if row.status == Status.FAIL:
            assert row.reasons[0].startswith("required input is unavailable")


def test_missing_record_fails_only_the_checks_that_compare_with_it():
    results = behavioral(None, baseline_witness())
    record_checks = {s.id for s in BEHAVIORAL_SPECS if s.needs_record}
    assert failing(results) == record_checks
    assert "model.saved_exchanges" in record_checks and "episode.initialized" not in record_checks


@pytest.mark.parametrize(
    ("change", "check"),
    [
        ({"seeded": 2}, "episode.initialized"),
        ({"seeded": 0}, "episode.initialized"),
        ({"attempts": ()}, "model.reached"),
        ({"violations": ("request after the final answer",)}, "model.protocol"),
        ({"finished": False}, "model.finished"),
        ({"verifications": ()}, "verifier.outcome"),
    ],
)
def test_witness_facts(change, check):
    witness = dataclasses.replace(baseline_witness(), **change)
    assert check in failing(behavioral(fx.baseline_record(), witness))


def test_verifier_checks():
    witness = baseline_witness()
    twice = dataclasses.replace(witness, verifications=witness.verifications * 2)
    assert {"verifier.outcome", "verifier.answer"} <= failing(
        behavioral(fx.baseline_record(), twice)
    )
    unseen = dataclasses.replace(
        witness, verifications=(dataclasses.replace(witness.verifications[0], answer_seen=False),)
    )
    assert failing(behavioral(fx.baseline_record(), unseen)) == {"verifier.answer"}
    wrong = dataclasses.replace(witness.verifications[0], reward=1.0)
    graded = dataclasses.replace(witness, verifications=(wrong,))
    assert failing(behavioral(fx.baseline_record(), graded)) == {"verifier.outcome"}


@pytest.mark.parametrize(
    ("reward", "passes"),
    [(0.0, True), (0, True), (1.0, False), (False, False), (None, False), ("0.0", False)],
)
def test_saved_reward_must_equal_the_expected_number(reward, passes):
    record = fx.baseline_record()
    record["reward"] = reward
    status = behavioral(record, baseline_witness()).status("verifier.saved_reward")
    assert status == (Status.PASS if passes else Status.FAIL)


def test_tools_executed_needs_every_prescribed_execution_seen():
    witness = baseline_witness()
    for change in ({"executed": False}, {"result_seen": False}):
        tool0 = dataclasses.replace(witness.tool_calls[0], **change)
        broken = dataclasses.replace(witness, tool_calls=(tool0, *witness.tool_calls[1:]))
        assert "tools.executed" in failing(behavioral(fx.baseline_record(), broken))
    one = dataclasses.replace(witness, tool_calls=witness.tool_calls[:1])
    assert "tools.executed" in failing(behavioral(fx.baseline_record(), one))


# ------------------------------------------------------------------ errors and retries


def _with_error_attempts(witness, statuses, requests=None):
    requests = requests or [witness.attempts[0].request] * len(statuses)
    errors = tuple(
        WitnessedAttempt(f"error-{i}", request, {"error": {"code": str(s)}}, s)
        for i, (s, request) in enumerate(zip(statuses, requests, strict=True))
    )
    return dataclasses.replace(witness, attempts=errors + witness.attempts)


def test_error_sequence_and_retry_request_for_retry_429():
    scenario = SCENARIOS["retry_429"]
    witness = _with_error_attempts(baseline_witness(), [429, 429])
    results = behavioral(fx.baseline_record(), witness, scenario)
    assert results.status("model.error_sequence") == Status.PASS
    assert results.status("model.retry_request") == Status.PASS

    changed = [{"input": []}, {"input": [{"role": "user", "content": "x"}]}]
    altered = _with_error_attempts(baseline_witness(), [429, 429], changed)
    assert "model.retry_request" in failing(behavioral(fx.baseline_record(), altered, scenario))

    wrong = _with_error_attempts(baseline_witness(), [429, 500])
    assert "model.error_sequence" in failing(behavioral(fx.baseline_record(), wrong, scenario))


def test_retry_request_is_unavailable_without_enough_attempts():
    short = dataclasses.replace(baseline_witness(), attempts=baseline_witness().attempts[:1])
    results = behavioral(fx.baseline_record(), short, SCENARIOS["retry_429"])
    row = results.get("model.retry_request")
    assert row.status == Status.FAIL
    assert row.reasons[0].startswith("required input is unavailable")


def test_terminal_error_requires_every_attempt_to_get_the_last_error():
    scenario = SCENARIOS["model_error"]
    base = dataclasses.replace(baseline_witness(), attempts=(), tool_calls=(), finished=False)
    terminal = _with_error_attempts(base, [400, 400, 400], [{"input": []}] * 3)
    results = behavioral(None, terminal, scenario)
    assert results.status("model.terminal_error") == Status.PASS
    assert results.status("model.error_sequence") == Status.PASS
    recovered = dataclasses.replace(
        terminal, attempts=(*terminal.attempts, baseline_witness().attempts[0])
    )
    assert "model.terminal_error" in failing(behavioral(None, recovered, scenario))
    assert "model.terminal_error" in failing(behavioral(None, base, scenario))


# ------------------------------------------------------------------ applicability per scenario

APPLIES = {
    "model.error_sequence": {"retry_429", "retry_500", "model_error"},
    "model.retry_request": {"retry_429"},
    "model.terminal_error": {"model_error"},
}
NOT_FOR_MODEL_ERROR = {
    "model.finished",
    "verifier.outcome",
    "verifier.answer",
    "verifier.saved_reward",
    "tools.executed",
    "tools.witness_ids",
    "tools.witness_join",
    "tools.witness_request",
    "tools.witness_status",
    "tools.witness_output",
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_applicability_comes_from_the_scenario_alone(scenario):
    results = behavioral(None, None, SCENARIOS[scenario])
    applicable = {r.id for r in results.rows() if r.status != Status.NOT_APPLICABLE}
    for check in ALL_IDS:
        if check in APPLIES:
            expected = scenario in APPLIES[check]
        else:
            expected = not (scenario == "model_error" and check in NOT_FOR_MODEL_ERROR)
        assert (check in applicable) == expected, check


def test_a_scenario_object_with_the_prescription_attributes_fits():
    @dataclasses.dataclass(frozen=True)
    class Scenario:
        name: str = "retry_500"
        tool_steps: int = 2
        tool_exit_code: int = 0
        http_errors: tuple[int, ...] = (500,)
        terminal_error: bool = False
        expected_reward: float = 0.0
        steps: bool = True
        create_params: dict = dataclasses.field(default_factory=dict)
        model: str | None = None

    witness = _with_error_attempts(baseline_witness(), [500])
    assert failing(behavioral(fx.baseline_record(), witness, Scenario())) == {
        "model.saved_exchanges",
        "model.response_metadata",
        "model.token_counts",
    }
    assert Prescription().tool_steps == 2
