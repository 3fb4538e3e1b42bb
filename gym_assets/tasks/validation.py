"""Validate dataset rows against their servers' task-data schemas, before materialization.

Validation runs on the flat row because materialization would hide a misplaced field: a field
the verifier reads only from inside ``verifier_metadata`` but that the row carries top-level is
invisible to the server, and only the flat row still shows where it was.

Two schemas may apply to a dataset (the environment server's and the owning server's). Each
one validates the fields it declares plus the fields neither declares, so an owner schema that
forbids extras never sees the environment's ``responses_create_params``. Unknown-field reports
come only from the owner schema's undeclared extras.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue, ValidationError

from gym_assets.errors import UserError
from gym_assets.modes import VALIDATION_MODES, CollationMode, ValidationLevel
from gym_assets.records import keys
from gym_assets.tasks.materialize import ID_FIELDS, ROUTING_KEYS, is_materialized
from gym_assets.tasks.schemas import TaskSchema

MAX_REPORTED_ERRORS = 5
MAX_ERROR_CHARS = 400
# Containers whose contents are task fields; spliced to the top level in this order.
TASK_FIELD_CONTAINERS = ("verifier_metadata", "task_data")
_IDS = frozenset(ID_FIELDS)
_NO_FIELDS: frozenset[str] = frozenset()


def resolve_validation_mode(requested: str, collation_mode: CollationMode) -> ValidationLevel:
    """``auto`` is ``error`` when validating examples, ``warn`` when preparing training data."""
    if requested not in VALIDATION_MODES:
        raise UserError(
            f"unknown task_data validation mode {requested!r}; use one of "
            + ", ".join(VALIDATION_MODES)
        )
    if requested != "auto":
        return requested
    return "error" if collation_mode == "example_validation" else "warn"


class RowShapeError(ValueError):
    """A materialized row whose ``task_input`` (or its ``task_data``) is not an object."""


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


@dataclass(slots=True)
class NormalizedRow:
    """The task fields of one row, with where they came from."""

    fields: dict[str, Any]
    conflicts: list[str]
    materialized: bool


def normalize_row(row: dict[str, Any], *, task_input: bool = False) -> NormalizedRow:
    """Drop framework keys and splice ``verifier_metadata`` then ``task_data`` to the top level.

    A key found both top-level and inside a container with a different value is a conflict; the
    top-level value wins. A non-object container is left in place for the schema to reject.
    Framework keys are the routing keys and every collector (``_ng_``) key: none is task data.
    ``task_input=True`` says ``row`` is a flat row's task input, which has none of them.
    """
    materialized = not task_input and "task_input" in row and is_materialized(row)
    source: Mapping[str, Any] = row
    if materialized:
        source = row["task_input"]
        if not isinstance(source, dict):
            raise RowShapeError(f"task_input must be an object, got {_type_name(source)}")
        if "task_data" in source and not isinstance(source["task_data"], dict):
            raise RowShapeError(
                f"task_input.task_data must be an object, got {_type_name(source['task_data'])}"
            )
    fields = (
        dict(source)
        if task_input
        else {
            key: value
            for key, value in source.items()
            if key not in ROUTING_KEYS and not keys.is_collector_key(key)
        }
    )
    conflicts: list[str] = []
    inner: JsonValue  # a JSON row's value
    for container in TASK_FIELD_CONTAINERS:
        inner = fields.get(container)
        if not isinstance(inner, dict):
            continue
        del fields[container]
        for key, value in inner.items():
            if key not in fields:
                fields[key] = value
            elif fields[key] != value:
                conflicts.append(key)
    return NormalizedRow(fields, conflicts, materialized)


def _keys_line(title: str, counts: Counter[str]) -> str:
    listed = ", ".join(f"{key} ({counts[key]} rows)" for key in sorted(counts))
    return f"  {title}: {listed}"


@dataclass
class ValidationReport:
    """What one dataset's validation found; ``clean`` means nothing to fix."""

    server_name: str
    dataset_fpath: str
    rows: int = 0
    error_rows: int = 0
    errors: list[str] = field(default_factory=list[str])
    unknown_keys: Counter[str] = field(default_factory=Counter[str])
    conflicting_keys: Counter[str] = field(default_factory=Counter[str])
    misplaced_keys: Counter[str] = field(default_factory=Counter[str])

    @property
    def clean(self) -> bool:
        return not (
            self.error_rows or self.unknown_keys or self.conflicting_keys or self.misplaced_keys
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "server_name": self.server_name,
            "dataset_fpath": self.dataset_fpath,
            "rows": self.rows,
            "error_rows": self.error_rows,
            "errors": list(self.errors),
            "unknown_keys": dict(sorted(self.unknown_keys.items())),
            "conflicting_keys": dict(sorted(self.conflicting_keys.items())),
            "misplaced_keys": dict(sorted(self.misplaced_keys.items())),
        }

    def summary(self) -> str:
        lines = [
            f"{self.dataset_fpath}: {self.error_rows}/{self.rows} rows failed task_data "
            f"validation against the `{self.server_name}` schema."
        ]
        lines += [f"  row {error}" for error in self.errors]
        if self.error_rows > len(self.errors):
            lines.append(f"  ... and {self.error_rows - len(self.errors)} more rows")
        if self.conflicting_keys:
            lines.append(
                _keys_line(
                    "keys with DIFFERENT values top-level and inside verifier_metadata or "
                    "task_data (the top-level value was used)",
                    self.conflicting_keys,
                )
            )
        if self.misplaced_keys:
            lines.append(
                _keys_line(
                    "keys this server's wire reads from verifier_metadata but found top-level "
                    "(the server will not see them)",
                    self.misplaced_keys,
                )
            )
        if self.unknown_keys:
            lines.append(
                _keys_line(
                    "keys not declared by the schema (typo, or missing schema field?)",
                    self.unknown_keys,
                )
            )
        return "\n".join(lines)


def _describe(schema: TaskSchema, exc: ValidationError) -> str:
    """One line per schema: ``<Schema>: <field path>: <message>; ...`` without input values."""
    parts: list[str] = []
    for error in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in error["loc"]) or "(row)"
        parts.append(f"{schema.name}: {where}: {error['msg']}")
    text = "; ".join(parts).replace("\n", " ")
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 3] + "..."


class TaskDataValidator:
    """Validates the rows of one dataset file and accumulates its ``ValidationReport``.

    The environment schema is not applied to already-materialized rows: their environment
    validates them at dispatch, with its own task-input type.
    """

    def __init__(
        self,
        *,
        server_name: str,
        dataset_fpath: str,
        environment: TaskSchema | None,
        owner: TaskSchema | None,
    ):
        self.environment = environment
        self.owner = owner
        self._report = ValidationReport(server_name=server_name, dataset_fpath=dataset_fpath)
        self._accepted_key_sets: Counter[tuple[str, ...]] = Counter()
        env_fields = environment.fields if environment else _NO_FIELDS
        owner_fields = owner.fields if owner else _NO_FIELDS
        self._legacy_fields = sorted(
            (environment.legacy_fields if environment else _NO_FIELDS)
            | (owner.legacy_fields if owner else _NO_FIELDS)
        )
        # Keys each schema must not see: those only the other schema declares, and ID fields
        # it does not declare itself (IDs are identity, not task data).
        self._environment_hidden = (owner_fields | _IDS) - env_fields
        self._owner_hidden = (env_fields | _IDS) - owner_fields

    def validate(
        self,
        row: dict[str, Any],
        line: int,
        *,
        task_input: bool = False,
        valid_request: bool = False,
    ) -> None:
        """Check one source row; ``line`` is the 1-based JSONL line the errors cite.

        ``task_input=True`` passes a flat row's task input instead (the same task fields, as
        materialization keeps them all), which saves filtering out the framework keys again.
        ``valid_request=True`` says the row's own ``responses_create_params`` is known to be a
        valid request (collation checks it once per row for the metrics too).
        """
        report = self._report
        report.rows += 1
        try:
            normalized = normalize_row(row, task_input=task_input)
        except RowShapeError as exc:
            self._record_error(line, [str(exc)])
            return
        if normalized.conflicts:
            report.conflicting_keys.update(normalized.conflicts)
        if self._legacy_fields and not normalized.materialized and "task_data" not in row:
            self._count_misplaced(row)
        fields = normalized.fields
        valid_request = valid_request and not normalized.materialized  # about the row, not its task
        errors: list[str] = []
        if self.environment is not None and not normalized.materialized:
            error = _check(self.environment, fields, self._environment_hidden, valid_request)
            if error:
                errors.append(error)
        if self.owner is not None:
            error = _check(self.owner, fields, self._owner_hidden, valid_request)
            if error:
                errors.append(error)
            else:  # unknown keys: those it accepted without declaring, tallied per key set
                self._accepted_key_sets[tuple(fields)] += 1
        if errors:
            self._record_error(line, errors)

    @property
    def report(self) -> ValidationReport:
        """The report so far (unknown keys are tallied per row key set, expanded here)."""
        unknown: Counter[str] = Counter()
        if self.owner is not None:
            known = self._owner_hidden | self.owner.fields
            for keys, rows in self._accepted_key_sets.items():
                for key in keys:
                    if key not in known:
                        unknown[key] += rows
        self._report.unknown_keys = unknown
        return self._report

    def _count_misplaced(self, row: dict[str, Any]) -> None:
        container: JsonValue = row.get("verifier_metadata")
        inner = container if isinstance(container, dict) else {}
        for name in self._legacy_fields:
            if name in row and name not in inner:
                self._report.misplaced_keys[name] += 1

    def _record_error(self, line: int, errors: list[str]) -> None:
        self._report.error_rows += 1
        if len(self._report.errors) < MAX_REPORTED_ERRORS:
            self._report.errors.append(f"{line}: " + "; ".join(errors))


def _check(
    schema: TaskSchema, fields: dict[str, Any], hidden: frozenset[str], valid_request: bool
) -> str:
    """Validate the fields ``schema`` may see; the error text, or "" when they are valid.

    A request-only schema declares the request (so never has it hidden), and the row's own
    request wins over one spliced from a container: a valid row request is what it checks.
    """
    if schema.request_only and valid_request:
        return ""
    view = (
        fields
        if hidden.isdisjoint(fields)
        else {k: v for k, v in fields.items() if k not in hidden}
    )
    if schema.adapter.validator.isinstance_python(view):  # the common case: no error to build
        return ""
    try:
        schema.adapter.validate_python(view)
    except ValidationError as exc:
        return _describe(schema, exc)
    return ""
