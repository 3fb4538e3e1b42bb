"""Invariants of the artifact catalogue, and its agreement with the specification's tables."""

from __future__ import annotations

import pytest

from gym_assets.conformance.artifact_checks import ARTIFACT_CHECKS, Applies
from gym_assets.conformance.engine import Kind, Tier
from gym_assets.conformance.result import TE_NAMES

S, M = "schema", "semantic"
CALLS = ("model_calls.present",)
TURNS = ("turns.present",)
TOOLS = ("tool_calls.present",)
INV = ("invocations.present",)
SANDBOX = ("sandbox.present",)

# id: (kind, TE numbers, applies, depends_on) — transcribed from the reference tables.
REFERENCE: dict[str, tuple[str, tuple[int, ...], str, tuple[str, ...]]] = {
    "model_calls.present": (S, (1, 2, 4, 7, 8, 9), "always", ()),
    "calls.identity": (S, (1,), "always", CALLS),
    "calls.model": (S, (1,), "always", CALLS),
    "calls.protocol": (S, (1,), "always", CALLS),
    "calls.timing": (S, (1,), "always", CALLS),
    "calls.outcome": (S, (1,), "always", CALLS),
    "calls.response_id": (S, (1,), "always", CALLS),
    "calls.request": (S, (4, 7), "always", CALLS),
    "calls.response": (S, (4, 7), "always", CALLS),
    "tokens.prompt_tokens": (S, (2,), "always", CALLS),
    "tokens.completion_tokens": (S, (2,), "always", CALLS),
    "tokens.reasoning_tokens": (S, (2,), "always", CALLS),
    "tokens.total_tokens": (S, (2,), "always", CALLS),
    "tokens.cached_tokens": (S, (2,), "always", CALLS),
    "content.media": (M, (4, 7), "always", (*CALLS, "calls.request", "calls.response")),
    "content.previous_response": (M, (4,), "always", (*CALLS, "calls.request")),
    "trajectory.task_id": (S, (3, 8), "always", ()),
    "trajectory.rollout_id": (S, (3, 8), "always", ()),
    "invocations.present": (S, (8,), "always", ()),
    "invocations.identity": (S, (8,), "always", INV),
    "invocations.references": (S, (8,), "always", INV),
    "turns.present": (S, (3, 9), "steps", ()),
    "steps.invocation": (S, (3, 9), "steps", TURNS),
    "steps.number": (S, (3, 9), "steps", TURNS),
    "steps.timestamp": (S, (3,), "steps", TURNS),
    "steps.resolution": (S, (3,), "steps", TURNS),
    "steps.references": (S, (9,), "steps", TURNS),
    "tool_calls.present": (S, (5,), "tools", ()),
    "tools.identity": (S, (5,), "tools", TOOLS),
    "tools.name": (S, (5,), "tools", TOOLS),
    "tools.invocation": (S, (5,), "tools", TOOLS),
    "tools.status": (S, (5,), "tools", TOOLS),
    "tools.output": (S, (5,), "tools", TOOLS),
    "steps.invocation_target": (
        M,
        (3, 9),
        "steps",
        (*TURNS, "steps.invocation", *INV, "invocations.identity"),
    ),
    "tools.invocation_target": (
        M,
        (5,),
        "tools",
        (*TOOLS, "tools.invocation", *INV, "invocations.identity"),
    ),
    "tools.request": (
        M,
        (5,),
        "tools",
        (*TOOLS, "tools.identity", "tools.name", "tools.invocation_target"),
    ),
    "invocations.parent": (M, (8,), "always", (*INV, "invocations.identity")),
    "ownership.call_target": (
        M,
        (8,),
        "always",
        (*CALLS, "calls.identity", *INV, "invocations.references", "invocations.identity"),
    ),
    "ownership.call_owner": (M, (8,), "always", ("ownership.call_target",)),
    "steps.compaction_target": (M, (9,), "steps", CALLS),
    "steps.call_target": (
        M,
        (9,),
        "steps",
        (*CALLS, "calls.identity", *TURNS, "steps.references", "steps.invocation_target"),
    ),
    "steps.call_owner": (M, (9,), "steps", ("steps.call_target", "ownership.call_target")),
    "steps.attempt_accounting": (
        M,
        (9,),
        "steps",
        ("steps.call_target", "steps.compaction_target"),
    ),
    "evaluation.reward": (S, (6,), "verifier", ()),
    "evaluation.evaluation_completed": (S, (6,), "verifier", ()),
    "evaluation.mask_sample": (S, (6,), "verifier", ()),
    "evaluation.failure_kind": (S, (6,), "verifier_failure", ()),
    "evaluation.failure_reason": (S, (6,), "verifier_failure", ()),
    "sandbox.present": (S, (6,), "require_sandbox", ()),
    "sandbox.identity": (S, (6,), "sandbox", SANDBOX),
    "sandbox.outcome": (S, (6,), "sandbox", SANDBOX),
    "sandbox.error": (S, (6,), "sandbox", SANDBOX),
    "calls.capture_gap": (M, (1, 4, 7, 8, 9), "always", CALLS),
    "ownership.gap": (M, (8,), "always", CALLS),
    "steps.gap": (M, (3,), "steps", CALLS),
    "steps.accounting_gap": (M, (9,), "steps", CALLS),
}

GROUP_SIZES = {"model calls": 16, "structure": 20, "ownership": 7, "evaluation": 9, "gaps": 4}


def test_exactly_56_unique_p0_checks() -> None:
    ids = [check.id for check in ARTIFACT_CHECKS]
    assert len(ids) == 56 == len(set(ids)) == sum(GROUP_SIZES.values())
    assert all(check.tier is Tier.P0 for check in ARTIFACT_CHECKS)


def test_catalogue_order_matches_the_reference_groups() -> None:
    assert [check.id for check in ARTIFACT_CHECKS] == list(REFERENCE)


def test_dependencies_exist_and_run_earlier() -> None:
    seen: set[str] = set()
    for check in ARTIFACT_CHECKS:
        assert set(check.depends_on) <= seen, check.id
        seen.add(check.id)


def test_every_check_is_described_and_judged_one_way() -> None:
    for check in ARTIFACT_CHECKS:
        assert check.reason.strip() and check.location.startswith("$"), check.id
        assert (check.schema is None) != (check.predicate is None), check.id
        assert (check.kind is Kind.SCHEMA) == (check.schema is not None), check.id
        assert set(check.evidence) <= set(TE_NAMES), check.id


@pytest.mark.parametrize("check", ARTIFACT_CHECKS, ids=lambda c: c.id)
def test_check_matches_reference_table(check) -> None:
    kind, numbers, applies, depends_on = REFERENCE[check.id]
    assert str(check.kind) == kind
    assert check.evidence == tuple(f"TE-{n}" for n in numbers)
    assert check.applies is Applies(applies)
    assert set(check.depends_on) == set(depends_on)


def test_only_sandbox_rows_have_conditional_prerequisites() -> None:
    conditional = {c.id for c in ARTIFACT_CHECKS if c.depends_when is not None}
    assert conditional == {"sandbox.identity", "sandbox.outcome", "sandbox.error"}
