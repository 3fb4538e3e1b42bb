"""The one check executor and the P0 gate."""

from __future__ import annotations

import json

import pytest

from gym_assets.conformance.engine import (
    Check,
    CheckDefinitionError,
    Kind,
    Results,
    Row,
    Status,
    Tier,
    Verdict,
    gate_passes,
)

STRING = {"type": "string"}
ARRAY_OF_IDS = {"type": "array", "items": {"type": "object", "properties": {"id": STRING}}}


def schema_check(id: str, value, schema=STRING, **kw) -> Check:
    kw.setdefault("reason", "expected a string")
    kw.setdefault("tier", "P0")
    return Check(id=id, kind="schema", location="$.x", schema=schema, value=value, **kw)


def predicate_check(id: str, predicate, **kw) -> Check:
    kw.setdefault("reason", "predicate failed")
    kw.setdefault("tier", "P0")
    return Check(id=id, kind="semantic", location="$.y", predicate=predicate, **kw)


def test_case_62_blocked_dependency_is_not_evaluated() -> None:
    def explode() -> bool:
        raise AssertionError("predicate must not run when blocked")

    results = Results()
    results.run(schema_check("calls.present", None))
    owner = results.run(
        predicate_check(
            "calls.owner", explode, depends_on=("calls.present",), reason="unresolved call owner"
        )
    )
    results.run(schema_check("tools.present", "a string"))
    assert [r.id for r in results.rows()] == ["calls.present", "calls.owner", "tools.present"]
    assert owner.status is Status.FAIL
    assert owner.blocked_by == ("calls.present",)
    assert owner.reasons == ("blocked by calls.present; unresolved call owner",)
    assert results.status("tools.present") is Status.PASS


def test_case_63_not_applicable_wins_over_everything() -> None:
    broken_schema = {"type": 12}
    results = Results()
    na = results.run(
        schema_check(
            "a", None, schema=broken_schema, applies=False, available=False, depends_on=("zz",)
        )
    )
    assert na.status is Status.NOT_APPLICABLE and na.reasons == ()
    unavailable = results.run(schema_check("b", "x", schema=broken_schema, available=False))
    assert unavailable.status is Status.FAIL
    assert unavailable.reasons == ("required input is unavailable; expected a string",)
    missing_dep = results.run(schema_check("c", "x", schema=broken_schema, depends_on=("zz",)))
    assert missing_dep.status is Status.FAIL and missing_dep.blocked_by == ("zz",)


def test_case_63_not_applicable_dependency_blocks() -> None:
    results = Results()
    results.run(schema_check("dep", "x", applies=False))
    assert results.run(schema_check("c", "x", depends_on=("dep",))).status is Status.FAIL


def test_case_64_rerun_merges_worst_status() -> None:
    results = Results()
    for value in ("call", None, "call"):
        results.run(schema_check("call.id", value))
    assert results.status("call.id") is Status.FAIL
    assert len(results.rows()) == 1
    results.run(schema_check("tool.id", "ok"))
    assert results.status("tool.id") is Status.PASS
    row = results.run(schema_check("tool.id", "ok", available=False))
    assert row.status is Status.FAIL
    assert row.reasons == ("required input is unavailable; expected a string",)


def test_rerun_not_applicable_does_not_hide_pass() -> None:
    results = Results()
    results.run(schema_check("a", "x"))
    assert results.run(schema_check("a", "x", applies=False)).status is Status.PASS


@pytest.mark.parametrize("tier", ["P3", None, "p0", ""])
def test_case_66_bad_tier_is_a_construction_error(tier) -> None:
    with pytest.raises(CheckDefinitionError):
        Check(id="x", tier=tier, kind="schema", location="$", reason="r", schema=STRING)


def test_case_66_missing_tier_is_a_construction_error() -> None:
    with pytest.raises(CheckDefinitionError):
        Check(id="x", kind="schema", location="$", reason="r", schema=STRING)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "weird", "schema": STRING},
        {"kind": "schema"},
        {"kind": "schema", "schema": STRING, "predicate": lambda: True},
        {"kind": "semantic", "schema": STRING},
        {"kind": "schema", "schema": STRING, "reason": ""},
        {"kind": "schema", "schema": STRING, "id": " "},
    ],
)
def test_malformed_checks_are_construction_errors(kwargs) -> None:
    base = {"id": "x", "tier": "P0", "location": "$", "reason": "r"}
    with pytest.raises(CheckDefinitionError):
        Check(**{**base, **kwargs})


@pytest.mark.parametrize(
    "rerun",
    [
        lambda: schema_check("x", "s", tier="P1", evidence=("TE-1",)),
        lambda: predicate_check("x", lambda: True, evidence=("TE-1",)),
        lambda: schema_check("x", "s", evidence=("TE-2",)),
    ],
)
def test_case_67_conflicting_definition(rerun) -> None:
    results = Results()
    results.run(schema_check("x", "s", evidence=("TE-1",)))
    with pytest.raises(CheckDefinitionError, match="conflicting definition"):
        results.run(rerun())


def _row(status: str, tier: str = "P0", evidence: tuple[str, ...] = ()) -> Row:
    return Row("x", Kind.SEMANTIC, Tier(tier), Status(status), evidence, ("$",), (), ())


def test_case_68_gate_is_per_tier_and_ignores_te_labels() -> None:
    rows = [_row("pass", "P0"), _row("fail", "P1"), _row("fail", "P2")]
    assert gate_passes(rows, "P0")
    assert not gate_passes(rows, "P1") and not gate_passes(rows, "P2")
    rows += [_row("fail", "P0", ("TE-8",)), _row("pass", "P0", ("TE-9",))]
    assert not gate_passes(rows)


@pytest.mark.parametrize("rows", [[], [_row("not_applicable")], [_row("pass", "P1")]])
def test_case_69_gate_over_nothing_applicable_fails(rows) -> None:
    assert not gate_passes(rows)


def test_case_70_schema_errors_become_locations_without_payloads() -> None:
    canary = "payload-canary-7f3a"
    check = Check(
        id="calls.ids",
        tier="P0",
        kind="schema",
        location="$.ng_trajectory.model_calls",
        reason="ids must be strings",
        schema=ARRAY_OF_IDS,
        value=[{"id": {"secret": canary}}],
    )
    row = Results().run(check)
    assert row.status is Status.FAIL
    assert row.locations == ("$.ng_trajectory.model_calls", "$.ng_trajectory.model_calls[0].id")
    serialized = json.dumps(row.to_dict())
    assert canary not in serialized
    assert "schema" not in row.to_dict() and "value" not in row.to_dict()


def test_predicate_verdict_locations_and_pass_has_no_reason() -> None:
    results = Results()
    failed = results.run(predicate_check("a", lambda: Verdict(False, ("$.y[3]",))))
    assert failed.locations == ("$.y", "$.y[3]") and failed.reasons == ("predicate failed",)
    passed = results.run(predicate_check("b", lambda: True))
    assert passed.status is Status.PASS and passed.reasons == ()


def test_predicate_must_return_a_boolean() -> None:
    with pytest.raises(CheckDefinitionError):
        Results().run(predicate_check("a", lambda: "yes"))
