"""The per-record checker result: rows, TE verdicts, findings, gate.

The verdict is the P0 gate over *all* rows handed in — artifact, behavioral and health alike —
so a behavioral failure fails the record while leaving the artifact TE verdicts intact. TE
labels are reporting only; they never exempt a row from the gate. Nothing here holds a payload:
rows carry ids, statuses, locations and fixed reasons; token availability carries counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gym_assets.conformance.engine import Row, Status, Tier, gate_passes
from gym_assets.conformance.profiles import PROFILE_ID
from gym_assets.conformance.record_view import RecordView, token_stats
from gym_assets.conformance.scope import EvidenceScope
from gym_assets.records.evidence import TOKEN_FIELDS

EVIDENCE_BASIS = "retained_artifacts"
SCOPE_CLOSURE = "not_independently_witnessed"

TE_NAMES: Mapping[str, str] = {
    "TE-1": "model_call_status",
    "TE-2": "token_counts",
    "TE-3": "steps",
    "TE-4": "history",
    "TE-5": "tool_record",
    "TE-6": "verifier_outcome",
    "TE-7": "payloads",
    "TE-8": "run_join",
    "TE-9": "step_join",
}


class TeStatus(StrEnum):
    FULFILLED = "fulfilled"
    NOT_FULFILLED = "not_fulfilled"
    NOT_APPLICABLE = "not_applicable"


@dataclass(frozen=True)
class TeVerdict:
    label: str
    name: str
    verdict: TeStatus
    basis: str = EVIDENCE_BASIS

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "verdict": str(self.verdict), "basis": self.basis}


@dataclass(frozen=True)
class Finding:
    """One failed check seen through one TE label at one location."""

    evidence: str
    assertion: str
    location: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {
            "evidence": self.evidence,
            "assertion": self.assertion,
            "location": self.location,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class TokenAvailability:
    """How many retained calls carry a known (non-null) count for one token field."""

    available: int
    calls: int

    def to_dict(self) -> dict[str, int]:
        return {"available": self.available, "calls": self.calls}


@dataclass(frozen=True)
class CheckerResult:
    """Everything the checker concludes about one record."""

    source: str
    rows: tuple[Row, ...]
    evidence: Mapping[str, TeVerdict]
    verdict: TeStatus
    token_availability: Mapping[str, TokenAvailability]
    findings: tuple[Finding, ...]
    profile: str = PROFILE_ID
    is_behavioral_qualification: bool = False
    scope_closure: str = SCOPE_CLOSURE
    _by_id: Mapping[str, Row] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {row.id: row for row in self.rows})

    def row(self, check_id: str) -> Row:
        return self._by_id[check_id]

    def status(self, check_id: str) -> Status:
        return self._by_id[check_id].status

    def statuses(self) -> dict[str, Status]:
        return {row.id: row.status for row in self.rows}

    def gate(self, tier: Tier | str = Tier.P0) -> bool:
        return gate_passes(self.rows, tier)

    @property
    def passed(self) -> bool:
        return self.verdict is TeStatus.FULFILLED

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "profile": self.profile,
            "checks": [row.to_dict() for row in self.rows],
            "evidence": {label: v.to_dict() for label, v in self.evidence.items()},
            "verdict": str(self.verdict),
            "token_availability": {k: v.to_dict() for k, v in self.token_availability.items()},
            "is_behavioral_qualification": self.is_behavioral_qualification,
            "scope_closure": self.scope_closure,
            "findings": [f.to_dict() for f in self.findings],
        }


def te_verdicts(rows: Iterable[Row], scope: EvidenceScope) -> dict[str, TeVerdict]:
    """Per TE label: not_fulfilled if any labelled row fails, fulfilled if any passes."""
    rows = tuple(rows)
    forced = scope.out_of_scope_labels()
    verdicts = {}
    for label, name in TE_NAMES.items():
        statuses = {row.status for row in rows if label in row.evidence}
        if label in forced:
            verdict = TeStatus.NOT_APPLICABLE
        elif Status.FAIL in statuses:
            verdict = TeStatus.NOT_FULFILLED
        elif Status.PASS in statuses:
            verdict = TeStatus.FULFILLED
        else:
            verdict = TeStatus.NOT_APPLICABLE
        verdicts[label] = TeVerdict(label, name, verdict)
    return verdicts


def findings_for(rows: Iterable[Row], source: str) -> tuple[Finding, ...]:
    """One finding per (TE label × location × reason) of every failed row; unlabelled rows none."""
    return tuple(
        Finding(label, row.id, f"{source}:{location}", reason)
        for row in rows
        if row.status is Status.FAIL
        for label in row.evidence
        for location in row.locations
        for reason in row.reasons
    )


def token_availability(record: object) -> dict[str, TokenAvailability]:
    """Counts of retained calls with a non-null value per token field (null = unknown)."""
    calls = RecordView(record).calls
    stats = [token_stats(call) for call in calls]
    return {
        name: TokenAvailability(sum(s.get(name) is not None for s in stats), len(calls))
        for name in TOKEN_FIELDS
    }


def build_result(
    rows: Iterable[Row],
    scope: EvidenceScope,
    *,
    source: str,
    tokens: Mapping[str, TokenAvailability] | None = None,
) -> CheckerResult:
    """Assemble a result from executed rows; the verdict is the P0 gate over all of them."""
    rows = tuple(rows)
    return CheckerResult(
        source=source,
        rows=rows,
        evidence=te_verdicts(rows, scope),
        verdict=TeStatus.FULFILLED if gate_passes(rows, Tier.P0) else TeStatus.NOT_FULFILLED,
        token_availability=dict(tokens or {}),
        findings=findings_for(rows, source),
    )
