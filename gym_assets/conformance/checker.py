"""Check one rollout record: ``check_record(record, scope) -> CheckerResult``.

The artifact catalogue always runs first, then every *check source* the caller passes in
``extra_checks``, all through one :class:`~gym_assets.conformance.engine.Results` executor.
That is the seam for behavioral and health checks (and anything later):

    CheckSource = Callable[[CheckContext], Iterable[Check]]

A source receives the record, the scope, the source label and the executor holding the rows so
far (read-only use: ``ctx.results.status("model_calls.present")``), and yields bound ``Check``
objects. Sources run in the order given; their checks may depend on artifact check ids or on
their own earlier ids; their rows join the same P0 gate, TE verdicts and findings. A source
yields checks lazily, so it can look at ``ctx.results`` between yields. Re-using an artifact id
with a different kind, tier or TE tuple is a ``CheckDefinitionError``.

A record that is not available (``None``: no rollout row, two or more rows, or only a
failure-sidecar row — see :func:`select_record`) still runs every check: applicable ones fail
as "required input is unavailable", out-of-scope ones stay not_applicable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gym_assets.conformance.artifact_checks import bind_artifact_checks
from gym_assets.conformance.engine import Check, Results
from gym_assets.conformance.record_view import RecordView
from gym_assets.conformance.result import CheckerResult, build_result, token_availability
from gym_assets.conformance.scope import EvidenceScope
from gym_assets.records.evidence import is_failure_row

DEFAULT_SOURCE = "rollouts.jsonl:1"


@dataclass(frozen=True)
class CheckContext:
    """What a check source may look at. ``results`` is shared: read it, do not run on it."""

    record: Any
    scope: EvidenceScope
    source: str
    results: Results


CheckSource = Callable[[CheckContext], Iterable[Check]]


def check_record(
    record: Any,
    scope: EvidenceScope | None = None,
    *,
    source: str = DEFAULT_SOURCE,
    extra_checks: Sequence[CheckSource] = (),
) -> CheckerResult:
    """Run the artifact catalogue, then each extra check source, and build the result.

    ``record`` is the parsed rollout row, or ``None`` when no single normal row exists.
    ``source`` labels findings (``"<file>:<line>"``).
    """
    scope = scope or EvidenceScope()
    results = Results()
    results.run_all(bind_artifact_checks(RecordView(record), scope))
    context = CheckContext(record=record, scope=scope, source=source, results=results)
    for check_source in extra_checks:
        for check in check_source(context):
            results.run(check)
    return build_result(results.rows(), scope, source=source, tokens=token_availability(record))


def select_record(rows: Iterable[Any]) -> Any:
    """The one normal rollout row among ``rows``, else ``None``.

    Failure-sidecar rows are never rollouts; zero or several normal rows mean the evidence for
    "this episode's record" is not available.
    """
    normal = [row for row in rows if not is_failure_row(row)]
    return normal[0] if len(normal) == 1 else None
