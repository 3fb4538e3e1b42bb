"""Check objects and the one executor that turns them into result rows.

A :class:`Check` is an immutable, already-bound definition: what it is (id, tier, kind, TE
labels), where it looks (location), what it says on failure (reason), what must pass first
(``depends_on``), whether it applies (declared by scope, never inferred from data), whether its
input exists, and how to judge it — a JSON Schema over ``value`` or a zero-argument predicate.

:class:`Results` runs checks in the caller's order. For each check, in this order:
``applies`` false → ``not_applicable`` (nothing else looked at); ``available`` false → fail
"required input is unavailable"; any prerequisite absent or not ``pass`` → fail "blocked by";
otherwise evaluate. Running the same id again merges into one row, the worst status winning.

Rows never carry payloads: schema error *messages* are dropped (they quote the instance);
only the error's instance path survives, as an extra location.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from jsonschema import Draft202012Validator


class Tier(StrEnum):
    P0 = "P0"
    P1 = "P1"
    P2 = "P2"


class Kind(StrEnum):
    SCHEMA = "schema"  # JSON Schema over one designated value
    SEMANTIC = "semantic"  # relationship between retained records
    BEHAVIORAL = "behavioral"  # retained evidence vs an independent observation
    HEALTH = "health"  # health-engine verdict vs scenario expectation


class Status(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NOT_APPLICABLE = "not_applicable"


_SEVERITY = {Status.NOT_APPLICABLE: 0, Status.PASS: 1, Status.FAIL: 2}

UNAVAILABLE_PREFIX = "required input is unavailable"


class CheckDefinitionError(ValueError):
    """A check is malformed, or an id was re-run with a conflicting definition (a bug)."""


@dataclass(frozen=True)
class Verdict:
    """A predicate outcome that also names where it looked (locations must be payload-free)."""

    passed: bool
    locations: tuple[str, ...] = ()


Predicate = Callable[[], "bool | Verdict"]


@dataclass(frozen=True, kw_only=True, eq=False)
class Check:
    """One bound check, ready to run. Exactly one of ``schema`` / ``predicate`` judges it."""

    id: str
    tier: Tier | str | None = None
    kind: Kind | str
    evidence: tuple[str, ...] = ()
    location: str
    reason: str
    depends_on: tuple[str, ...] = ()
    applies: bool = True
    available: bool = True
    schema: Mapping[str, Any] | None = None
    value: Any = None
    predicate: Predicate | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise CheckDefinitionError("a check needs a nonblank string id")
        try:
            object.__setattr__(self, "tier", Tier(self.tier))
        except ValueError:
            raise CheckDefinitionError(
                f"check {self.id!r}: tier must be one of P0, P1, P2 (got {self.tier!r})"
            ) from None
        try:
            object.__setattr__(self, "kind", Kind(self.kind))
        except ValueError:
            raise CheckDefinitionError(f"check {self.id!r}: unknown kind {self.kind!r}") from None
        object.__setattr__(self, "evidence", tuple(self.evidence))
        object.__setattr__(self, "depends_on", tuple(self.depends_on))
        if not all(isinstance(label, str) for label in self.evidence):
            raise CheckDefinitionError(f"check {self.id!r}: TE labels must be strings")
        if not self.reason or not self.location:
            raise CheckDefinitionError(f"check {self.id!r}: needs a reason and a location")
        if (self.schema is None) == (self.predicate is None):
            raise CheckDefinitionError(f"check {self.id!r}: give exactly one of schema, predicate")
        if (self.kind is Kind.SCHEMA) != (self.schema is not None):
            raise CheckDefinitionError(
                f"check {self.id!r}: schema checks and only they use a schema"
            )


@dataclass(frozen=True)
class Row:
    """The result of one check id (merged over re-runs)."""

    id: str
    kind: Kind
    tier: Tier
    status: Status
    evidence: tuple[str, ...]
    locations: tuple[str, ...]
    reasons: tuple[str, ...]
    blocked_by: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": str(self.kind),
            "status": str(self.status),
            "tier": str(self.tier),
            "evidence": list(self.evidence),
            "locations": list(self.locations),
            "reasons": list(self.reasons),
            "blocked_by": list(self.blocked_by),
        }


@dataclass
class Results:
    """The executor: runs checks in order, keeps one merged row per id."""

    _rows: dict[str, Row] = field(default_factory=dict)

    def run(self, check: Check) -> Row:
        status, locations, reasons, blocked = self._evaluate(check)
        row = Row(
            id=check.id,
            kind=Kind(check.kind),
            tier=Tier(check.tier),
            status=status,
            evidence=check.evidence,
            locations=tuple(_unique(locations)),
            reasons=tuple(reasons),
            blocked_by=tuple(blocked),
        )
        previous = self._rows.get(check.id)
        if previous is not None:
            row = _merge(previous, row)
        self._rows[check.id] = row
        return row

    def run_all(self, checks: Iterable[Check]) -> Results:
        for check in checks:
            self.run(check)
        return self

    def status(self, check_id: str) -> Status | None:
        row = self._rows.get(check_id)
        return None if row is None else row.status

    def get(self, check_id: str) -> Row | None:
        return self._rows.get(check_id)

    def __contains__(self, check_id: object) -> bool:
        return check_id in self._rows

    def rows(self) -> tuple[Row, ...]:
        return tuple(self._rows.values())

    def _evaluate(self, check: Check) -> tuple[Status, list[str], list[str], list[str]]:
        where = [check.location]
        if not check.applies:
            return Status.NOT_APPLICABLE, where, [], []
        if not check.available:
            return Status.FAIL, where, [f"{UNAVAILABLE_PREFIX}; {check.reason}"], []
        blocked = [dep for dep in check.depends_on if self.status(dep) is not Status.PASS]
        if blocked:
            return Status.FAIL, where, [f"blocked by {', '.join(blocked)}; {check.reason}"], blocked
        if check.schema is not None:
            extra = schema_error_locations(check.schema, check.value, check.location)
            passed = not extra
        else:
            assert check.predicate is not None
            outcome = check.predicate()
            if isinstance(outcome, Verdict):
                passed, extra = outcome.passed, list(outcome.locations)
            elif isinstance(outcome, bool):
                passed, extra = outcome, []
            else:
                raise CheckDefinitionError(f"check {check.id!r}: predicate must return bool")
        if passed:
            return Status.PASS, where + extra, [], []
        return Status.FAIL, where + extra, [check.reason], []


def _merge(old: Row, new: Row) -> Row:
    if (old.kind, old.tier, old.evidence) != (new.kind, new.tier, new.evidence):
        raise CheckDefinitionError(
            f"conflicting definition for check {new.id!r}: kind, tier and TE labels must not "
            "change between runs of the same id"
        )
    status = max(old.status, new.status, key=_SEVERITY.__getitem__)
    return Row(
        id=old.id,
        kind=old.kind,
        tier=old.tier,
        status=status,
        evidence=old.evidence,
        locations=tuple(_unique([*old.locations, *new.locations])),
        reasons=tuple(_unique([*old.reasons, *new.reasons])),
        blocked_by=tuple(_unique([*old.blocked_by, *new.blocked_by])),
    )


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


# --------------------------------------------------------------------------- schema evaluation

_VALIDATORS: dict[int, tuple[Mapping[str, Any], Draft202012Validator]] = {}
_VALIDATOR_CACHE_LIMIT = 1024


def _validator(schema: Mapping[str, Any]) -> Draft202012Validator:
    """A checked validator per schema object (catalogue schemas are module constants)."""
    cached = _VALIDATORS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    if len(_VALIDATORS) >= _VALIDATOR_CACHE_LIMIT:
        _VALIDATORS.clear()
    _VALIDATORS[id(schema)] = (schema, validator)
    return validator


def schema_error_locations(schema: Mapping[str, Any], value: Any, location: str) -> list[str]:
    """One location per schema error (check location + instance path); messages are dropped."""
    errors = _validator(schema).iter_errors(value)
    return [location + json_path(error.absolute_path) for error in errors]


def json_path(parts: Iterable[str | int]) -> str:
    """``[i]`` for indexes, ``.key`` for keys, appended to a JSONPath-ish prefix."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def gate_passes(rows: Iterable[Row], tier: Tier | str = Tier.P0) -> bool:
    """True iff the tier has at least one applicable row and every applicable row passes.

    TE labels never exempt a row; an empty or all-N/A selection fails (nothing was proven).
    """
    wanted = Tier(tier)
    selected = [r for r in rows if r.tier is wanted and r.status is not Status.NOT_APPLICABLE]
    return bool(selected) and all(r.status is Status.PASS for r in selected)
