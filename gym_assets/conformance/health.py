"""Rollout-scope health checks, judged against a scenario's expectations.

Artifact checks ask "is the evidence well-formed?"; health checks ask "does this rollout look
like a healthy run?" (turns present, token counts known and consistent, the run did not end on
a failed call, ...). A scripted scenario knows which symptoms it provokes — omitting usage makes
counts missing on purpose, a terminal model error makes the rollout end on a failed call — so
each health verdict is compared with the scenario's expectation rather than with "healthy".

Each check judges one rollout as ``healthy``, ``unhealthy`` or ``unobserved`` (the evidence it
needs is not there). The health inputs are the rollout file and its failure sidecar, read
leniently: an unreadable line is itself a health finding (``record_unreadable``), not an error.
A rollout is judged once: by its record when it has one (a failure row of the same rollout is
an attempt whose evidence the record already holds, e.g. the sidecar row beside the record of a
model call that failed for good), else by each of its failure rows.

Two checks look beyond one judge: ``check_execution_error`` is unhealthy when another check
raised on the rollout (that check is then unobserved, never a silent pass), and
``rollout_duplicate_identity`` when several records claim the same ``(task, rollout)``.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.conformance.bundle import open_bundle_file, parse_row
from gym_assets.conformance.checker import CheckContext, CheckSource
from gym_assets.conformance.engine import Check, Kind, Results, Tier
from gym_assets.conformance.record_view import RecordView, response_metadata, token_stats
from gym_assets.conformance.scope import EvidenceScope
from gym_assets.errors import ConfigError
from gym_assets.records import keys
from gym_assets.records.evidence import is_failure_row

HEALTHY = "healthy"
UNHEALTHY = "unhealthy"
UNOBSERVED = "unobserved"
HEALTH_VERDICTS = (HEALTHY, UNHEALTHY, UNOBSERVED)
HEALTH_INPUT_FILES = ("rollouts.jsonl", "rollouts_failures.jsonl")

HOLLOW_TURN_GAPS = frozenset({"turns_unavailable", "turn_evidence_incomplete"})
# A tuple, not a set: membership by equality never fails on an unhashable saved value.
RUNAWAY_FINISH_REASONS = ("length", "max_tokens", "max_output_tokens")
# (provider usage keys, per-call token_stats field) compared by rollout_token_count_mismatch.
USAGE_TOTALS = (
    (("input_tokens", "prompt_tokens"), "prompt_tokens"),
    (("output_tokens", "completion_tokens"), "completion_tokens"),
    (("total_tokens",), "total_tokens"),
)


class HealthConfigError(ConfigError):
    """Scenario health expectations name an unknown check or an unknown verdict."""


@dataclass(frozen=True)
class HealthInput:
    """One line of a health input file; ``record`` is ``None`` when the line is unreadable."""

    source: str
    record: Mapping[str, Any] | None


Identity = tuple[str, str]  # (task index, rollout index) as canonical JSON: saved values may
# be of any type, and two records claim the same rollout only when their values are equal


def rollout_identity(record: Mapping[str, Any]) -> Identity | None:
    """The ``(task, rollout)`` a row claims; ``None`` without a task index (nothing claimed)."""
    if keys.TASK_INDEX not in record:
        return None
    task, rollout = record[keys.TASK_INDEX], record.get(keys.ROLLOUT_INDEX, 0)
    return json.dumps(task, sort_keys=True), json.dumps(rollout, sort_keys=True)


@dataclass(frozen=True)
class RunView:
    """What judging one rollout needs from the others: how many records claim each identity."""

    claims: Counter[Identity]

    @classmethod
    def of(cls, items: Iterable[HealthInput]) -> RunView:
        claims: Counter[Identity] = Counter()
        for item in items:
            if isinstance(item.record, Mapping) and not is_failure_row(item.record):
                identity = rollout_identity(item.record)
                if identity is not None:
                    claims[identity] += 1
        return cls(claims)


def _count(value: Any) -> int | None:
    """A token count is a non-negative integer; anything else is unknown."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _nonblank(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _model_calls(view: RecordView) -> list[Mapping[str, Any]] | None:
    """The retained calls that are objects; ``None`` when there is no array to read."""
    if not view.has_list("model_calls"):
        return None
    return [c for c in view.calls if isinstance(c, Mapping)]


def is_successful_call(call: Mapping[str, Any]) -> bool:
    """An HTTP 2xx exchange without an error category: the only calls that carry tokens."""
    meta = response_metadata(call)
    status = meta.get("status_code")
    return (
        isinstance(status, int)
        and not isinstance(status, bool)
        and 200 <= status < 300
        and not _nonblank(meta.get("error_category"))
    )


def _successful_calls(view: RecordView) -> list[Mapping[str, Any]] | None:
    calls = _model_calls(view)
    return None if calls is None else [c for c in calls if is_successful_call(c)]


def _verdict(unhealthy: bool) -> str:
    return UNHEALTHY if unhealthy else HEALTHY


# ---------------------------------------------------------------- judges (record -> verdict)


def _missing_agent_turns(view: RecordView) -> str:
    return _verdict(not view.turns)


def _hollow_turn(turn: Any) -> bool:
    if not isinstance(turn, Mapping):
        return True
    return turn.get("answer") is None and turn.get("reasoning_content") is None


def _agent_turn_hollow(view: RecordView) -> str:
    gap_codes = {
        g.get("code")
        for g in view.gaps
        if isinstance(g, Mapping) and isinstance(g.get("code"), str)
    }
    if gap_codes & HOLLOW_TURN_GAPS:
        return UNHEALTHY
    if not view.turns:
        return UNOBSERVED
    return _verdict(any(_hollow_turn(t) for t in view.turns))


def _zero_completion_tokens(view: RecordView) -> str:
    calls = _successful_calls(view)
    if calls is None:
        return UNOBSERVED
    return _verdict(any(token_stats(c).get("completion_tokens") == 0 for c in calls))


def _missing_token_counts(view: RecordView) -> str:
    calls = _successful_calls(view)
    if calls is None:
        return UNOBSERVED
    fields = ("prompt_tokens", "completion_tokens", "total_tokens")
    return _verdict(any(_count(token_stats(c).get(f)) is None for c in calls for f in fields))


def _capture_mismatch(view: RecordView) -> str:
    """The capture attachment and the trajectory must list the same call ids, same multiplicity."""
    calls = _model_calls(view)
    capture = view.row.get(keys.MODEL_CALL_CAPTURE)
    if calls is None:
        return UNOBSERVED
    if capture is None:
        return HEALTHY
    captured = capture.get("calls") if isinstance(capture, Mapping) else None
    if not isinstance(captured, list) or not all(isinstance(c, Mapping) for c in captured):
        return UNHEALTHY
    kept = sorted(str(c.get("model_call_id")) for c in calls)
    seen = sorted(str(c.get("model_call_id")) for c in captured)
    return _verdict(kept != seen)


def _model_call_failed(view: RecordView) -> str:
    """A call the server answered 2xx whose body nevertheless reports a failure."""
    calls = _model_calls(view)
    if calls is None:
        return UNOBSERVED

    def failed(call: Mapping[str, Any]) -> bool:
        status = response_metadata(call).get("status_code")
        if not (isinstance(status, int) and 200 <= status < 300):
            return False
        response = call.get("response")
        body_error = isinstance(response, Mapping) and response.get("error") is not None
        return body_error or response_metadata(call).get("response_status") == "failed"

    return _verdict(any(failed(c) for c in calls))


def _token_count_mismatch(view: RecordView) -> str:
    """The rollout's reported usage must equal the sum over its successful calls."""
    response = view.row.get("response")
    usage = response.get("usage") if isinstance(response, Mapping) else None
    calls = _successful_calls(view)
    if not isinstance(usage, Mapping) or calls is None:
        return UNOBSERVED
    compared = False
    for usage_keys, field in USAGE_TOTALS:
        reported = next((_count(usage.get(k)) for k in usage_keys if k in usage), None)
        if reported is None:
            continue
        counts = [_count(token_stats(c).get(field)) for c in calls]
        if any(c is None for c in counts):
            return UNOBSERVED
        if sum(counts) != reported:  # type: ignore[arg-type]
            return UNHEALTHY
        compared = True
    return HEALTHY if compared else UNOBSERVED


def _runaway_generation(view: RecordView) -> str:
    calls = _successful_calls(view)
    if calls is None:
        return UNOBSERVED
    return _verdict(
        any(response_metadata(c).get("finish_reason") in RUNAWAY_FINISH_REASONS for c in calls)
    )


def _ended_on_failed_call(view: RecordView) -> str:
    calls = _model_calls(view)
    if not calls:
        return UNOBSERVED
    return _verdict(not is_successful_call(calls[-1]))


def _duplicate_identity(view: RecordView, run: RunView) -> str:
    """Unhealthy when another record claims this rollout too (a failure row never does)."""
    if is_failure_row(view.row):
        return HEALTHY
    identity = rollout_identity(view.row)
    return _verdict(identity is not None and run.claims[identity] > 1)


def _per_record(judge: Callable[[RecordView], str]) -> Callable[[RecordView, RunView], str]:
    return lambda view, _run: judge(view)


@dataclass(frozen=True)
class RolloutHealthCheck:
    """One rollout-scope health check: what it looks for, and whether it reads agent turns."""

    id: str
    judge: Callable[[RecordView, RunView], str]
    summary: str
    reads_turns: bool = False
    when_unreadable: str = UNOBSERVED

    @property
    def check_id(self) -> str:
        return f"health.{self.id}"


def _judged_elsewhere(view: RecordView, run: RunView) -> str:
    """Healthy unless ``judge_rollout`` finds otherwise (an unreadable line, a raising check)."""
    return HEALTHY


CHECK_EXECUTION_ERROR = "check_execution_error"
ROLLOUT_HEALTH_CHECKS: tuple[RolloutHealthCheck, ...] = (
    RolloutHealthCheck(
        CHECK_EXECUTION_ERROR,
        _judged_elsewhere,
        "every other health check could judge the rollout without raising",
    ),
    RolloutHealthCheck(
        "record_unreadable",
        _judged_elsewhere,
        "every line is a readable JSON object",
        when_unreadable=UNHEALTHY,
    ),
    RolloutHealthCheck(
        "rollout_duplicate_identity",
        _duplicate_identity,
        "no other record claims the same task and rollout index",
    ),
    RolloutHealthCheck(
        "rollout_missing_agent_turns",
        _per_record(_missing_agent_turns),
        "the trajectory keeps at least one agent turn",
        reads_turns=True,
    ),
    RolloutHealthCheck(
        "agent_turn_hollow",
        _per_record(_agent_turn_hollow),
        "every turn keeps an answer or reasoning, and no turn-evidence gap is recorded",
        reads_turns=True,
    ),
    RolloutHealthCheck(
        "model_call_zero_completion_tokens",
        _per_record(_zero_completion_tokens),
        "no successful model call reports zero completion tokens",
    ),
    RolloutHealthCheck(
        "model_call_missing_token_counts",
        _per_record(_missing_token_counts),
        "every successful model call keeps prompt, completion and total token counts",
    ),
    RolloutHealthCheck(
        "trajectory_capture_mismatch",
        _per_record(_capture_mismatch),
        "the capture attachment and the trajectory list the same model calls",
    ),
    RolloutHealthCheck(
        "model_call_failed",
        _per_record(_model_call_failed),
        "no model call answered 2xx carries a failed body",
    ),
    RolloutHealthCheck(
        "rollout_token_count_mismatch",
        _per_record(_token_count_mismatch),
        "the rollout's reported usage equals the sum over its successful model calls",
    ),
    RolloutHealthCheck(
        "model_call_runaway_generation",
        _per_record(_runaway_generation),
        "no successful model call stopped at its output-length limit",
    ),
    RolloutHealthCheck(
        "rollout_ended_on_failed_model_call",
        _per_record(_ended_on_failed_call),
        "the rollout's last model call succeeded",
    ),
)
HEALTH_CHECK_IDS = tuple(c.id for c in ROLLOUT_HEALTH_CHECKS)


def judge_rollout(
    item: HealthInput,
    run: RunView | None = None,
    checks: Sequence[RolloutHealthCheck] | None = None,
) -> dict[str, str]:
    """Every health verdict for one input line (a non-object line is unreadable); ``run``
    defaults to this line alone. A check that raises is unobserved, and the rollout's
    ``check_execution_error`` unhealthy: a bug in a check must show, not pass or stop the rest."""
    checks = ROLLOUT_HEALTH_CHECKS if checks is None else checks
    if not isinstance(item.record, Mapping):
        return {c.id: c.when_unreadable for c in checks}
    run = run or RunView.of([item])
    view = RecordView(item.record)
    verdicts: dict[str, str] = {}
    raised = False
    for check in checks:
        try:
            verdicts[check.id] = check.judge(view, run)
        except Exception:
            verdicts[check.id] = UNOBSERVED
            raised = True
    if raised:
        verdicts[CHECK_EXECUTION_ERROR] = UNHEALTHY
    return verdicts


def judged_inputs(items: Sequence[HealthInput]) -> list[HealthInput]:
    """The lines that stand for a rollout: every line, except a failure row of a rollout that
    has a record (the record holds that attempt's evidence; judging both would count one
    rollout twice)."""
    recorded = {
        identity
        for item in items
        if isinstance(item.record, Mapping) and not is_failure_row(item.record)
        if (identity := rollout_identity(item.record)) is not None
    }
    return [
        item
        for item in items
        if not (
            isinstance(item.record, Mapping)
            and is_failure_row(item.record)
            and rollout_identity(item.record) in recorded
        )
    ]


def validate_expectations(expectations: Mapping[str, str] | None) -> dict[str, str]:
    """Full expectation map: given overrides on top of ``healthy`` for every check.

    An unknown check id or a verdict other than healthy/unhealthy/unobserved is a
    configuration error, so a typo can never silently expect the default.
    """
    resolved = dict.fromkeys(HEALTH_CHECK_IDS, HEALTHY)
    for check_id, expected in (expectations or {}).items():
        if check_id not in resolved:
            raise HealthConfigError(
                f"unknown health check {check_id!r} in health expectations; "
                f"known checks: {', '.join(HEALTH_CHECK_IDS)}"
            )
        if expected not in HEALTH_VERDICTS:
            raise HealthConfigError(
                f"health expectation for {check_id!r} must be one of {', '.join(HEALTH_VERDICTS)}"
            )
        resolved[check_id] = expected
    return resolved


def read_health_inputs(
    directory: str | Path, names: Iterable[str] = HEALTH_INPUT_FILES
) -> Iterator[HealthInput]:
    """Lines of the rollout file and its failure sidecar, leniently; missing files skipped."""
    for name in names:
        path = Path(directory) / name
        if not os.path.lexists(path):
            continue
        with open_bundle_file(path) as handle:
            for number, data in enumerate(handle, start=1):
                if not data.strip():
                    continue
                try:
                    value = parse_row(data)
                except ValueError:
                    value = None
                record = value if isinstance(value, dict) else None
                yield HealthInput(f"{name}:{number}", record)


def _bind(
    spec: RolloutHealthCheck,
    expected: str,
    observed: str | None,
    location: str,
    scope: EvidenceScope,
) -> Check:
    return Check(
        id=spec.check_id,
        tier=Tier.P0,
        kind=Kind.HEALTH,
        location=location,
        reason=f"expected {expected}; observed {observed or 'no health result'}",
        applies=scope.steps or not spec.reads_turns,
        available=observed is not None,
        predicate=lambda: observed == expected,
    )


def health_checks(
    inputs: Iterable[HealthInput],
    expectations: Mapping[str, str] | None,
    scope: EvidenceScope,
) -> list[Check]:
    """One check per (health check, input line); the executor merges them per id, worst wins.

    With no input line at all there is no health result: every applicable check fails.
    """
    expected = validate_expectations(expectations)
    items = judged_inputs(list(inputs))
    run = RunView.of(items)
    checks = []
    for item in items:
        verdicts = judge_rollout(item, run)
        checks += [
            _bind(spec, expected[spec.id], verdicts[spec.id], item.source, scope)
            for spec in ROLLOUT_HEALTH_CHECKS
        ]
    if not checks:
        checks = [
            _bind(spec, expected[spec.id], None, HEALTH_INPUT_FILES[0], scope)
            for spec in ROLLOUT_HEALTH_CHECKS
        ]
    return checks


def run_health(
    directory: str | Path,
    expectations: Mapping[str, str] | None,
    scope: EvidenceScope,
    *,
    results: Results | None = None,
) -> Results:
    """Judge an episode directory's rollout files against the scenario's expectations."""
    checks = health_checks(read_health_inputs(directory), expectations, scope)
    return (results or Results()).run_all(checks)


def health_source(
    inputs: Iterable[HealthInput], expectations: Mapping[str, str] | None
) -> CheckSource:
    """A ``check_record`` extra-check source judging ``inputs`` under the record's scope."""
    expected = validate_expectations(expectations)
    items = list(inputs)

    def source(context: CheckContext) -> list[Check]:
        return health_checks(items, expected, context.scope)

    return source
