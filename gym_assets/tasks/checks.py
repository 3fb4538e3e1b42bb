"""Checks over a collated taskset, as plain functions (the Dagster asset checks call them).

Each check re-reads what collation wrote, or re-derives it from the config, rather than
trusting the collation step's own verdict: a check that only echoed the producer could not
catch the producer's bugs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gym_assets.check_outcome import CheckOutcome
from gym_assets.config.routing import (
    flat_route,
    resolve_dataset_agent,
    taskset_environment_server,
)
from gym_assets.errors import ConfigError
from gym_assets.fileio import iter_jsonl
from gym_assets.json_shapes import is_mapping
from gym_assets.limits import MAX_PRODUCT_NESTING
from gym_assets.records import keys
from gym_assets.tasks.catalog import Benchmark, Catalog
from gym_assets.tasks.materialize import ID_FIELDS, is_materialized, source_task_id

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
MAX_LISTED = 10
_KEY_PROBLEMS = ("unknown_keys", "conflicting_keys", "misplaced_keys")


def task_data_valid(report: Mapping[str, Any]) -> CheckOutcome:
    """Every validated row matched its schemas, with no unknown, misplaced or conflicting key."""
    if report.get("validation_mode") == "off":
        return CheckOutcome(
            False,
            "task data was not validated (validation: off); re-collate with warn or error",
            warn_only=True,
        )
    problems: list[Any] = []
    for item in report.get("validation_reports", ()):
        if item.get("error_rows") or any(item.get(kind) for kind in _KEY_PROBLEMS):
            problems.append(item)
    rows = sum(int(item.get("rows", 0)) for item in report.get("validation_reports", ()))
    metadata = {"validated_rows": rows, "reports": len(report.get("validation_reports", ()))}
    if problems:
        metadata["summary"] = report.get("validation_summary", "")
        failed = sum(int(item.get("error_rows", 0)) for item in problems)
        description = f"{failed} of {rows} rows failed task-data validation"
        kinds = [k for k in _KEY_PROBLEMS if any(item.get(k) for item in problems)]
        if kinds:  # rows can pass their schemas and still carry unknown or misplaced keys
            found = ", ".join(k.replace("_", " ") for k in kinds)
            description = f"{found} found" if not failed else f"{description}; {found} found"
        return CheckOutcome(False, description, metadata)
    return CheckOutcome(True, f"{rows} rows match their task-data schemas", metadata)


def _identity(row: Mapping[str, Any]) -> tuple[str, str] | None:
    if is_materialized(row):
        task_id = row["task_id"]
        return str(task_id.get("taskset")), str(task_id.get("task_id"))
    own = source_task_id(row)
    return None if own is None else ("", own)


def _content_digest(row: Mapping[str, Any]) -> str:
    body = (
        row.get("task_input")
        if is_materialized(row)
        else {k: v for k, v in row.items() if k != "task_source" and not keys.is_collector_key(k)}
    )
    return hashlib.sha256(_CANONICAL.encode(body).encode()).hexdigest()


def task_ids_unique(collated: Path, report: Mapping[str, Any]) -> CheckOutcome:
    """No task ID names two different tasks: every row sharing an ID has the same input.

    Repeats of one task are expected (``num_repeats``); the collation step also reports IDs
    that came from two different source lines, even with identical content.
    """
    digests: dict[tuple[str, str], str] = {}
    clashes: set[tuple[str, str]] = set()
    rows = 0
    for _, row in iter_jsonl(collated, max_depth=MAX_PRODUCT_NESTING):
        rows += 1
        identity = _identity(row)
        if identity is None:
            continue
        digest = _content_digest(row)
        if digests.setdefault(identity, digest) != digest:
            clashes.add(identity)
    listed = [f"{t}/{i}" if t else i for t, i in sorted(clashes)][:MAX_LISTED]
    reported = list(report.get("duplicate_task_ids", []))
    metadata: dict[str, Any] = {"rows": rows, "distinct_ids": len(digests)}
    if clashes or reported:
        metadata["ids_with_different_inputs"] = listed
        metadata["ids_from_several_source_lines"] = reported[:MAX_LISTED]
        count = len(clashes) or int(report.get("duplicate_task_id_count", len(reported)))
        return CheckOutcome(False, f"{count} task IDs name more than one task", metadata)
    return CheckOutcome(True, f"{len(digests)} task IDs, each naming one task", metadata)


def route_resolves(catalog: Catalog, benchmark: Benchmark) -> CheckOutcome:
    """The benchmark's rows reach exactly one environment server and a valid agent."""
    config = catalog.loaded  # reads like the resolved mapping; its errors carry file:line
    dataset = benchmark.dataset
    try:
        if dataset.taskset is not None:
            agent = resolve_dataset_agent(
                config, benchmark.instance, dataset.agent, taskset=dataset.taskset
            )
            server = taskset_environment_server(config, dataset.taskset).name
        else:
            server, agent = flat_route(config, benchmark.instance, dataset.agent)
    except ConfigError as exc:
        return CheckOutcome(False, exc.render())
    return CheckOutcome(
        True,
        f"rows of '{benchmark.name}' run on environment server '{server}'",
        {"environment_server": server, "attributed_agent": agent or "(several agents)"},
    )


def stable_task_ids(collated: Path) -> CheckOutcome:
    """Rows whose task IDs are positions in the collation (they shift when datasets change).

    Task rows and flat rows alike: a flat row's ID is its own ``task_id`` (or ``problem_id``,
    ``instance_id``), as in its plan, so every benchmark gets a verdict here.
    """
    positional = total = 0
    examples: list[str] = []
    for line, row in iter_jsonl(collated, max_depth=MAX_PRODUCT_NESTING):
        total += 1
        task_input = row.get("task_input") if is_materialized(row) else row
        has_own = is_mapping(task_input) and source_task_id(task_input) is not None
        if not has_own and keys.TASK_INDEX not in row:
            positional += 1
            if len(examples) < MAX_LISTED:
                task_id = row["task_id"] if is_materialized(row) else None
                examples.append(str(task_id["task_id"]) if task_id else f"line {line}")
    if not total:
        return CheckOutcome.not_applicable("the collation has no rows")
    metadata: dict[str, Any] = {"rows": total, "positional_rows": positional}
    if positional:
        metadata["examples"] = examples
        return CheckOutcome(
            False,
            f"{positional} of {total} rows have positional IDs; give each row a "
            f"{', '.join(ID_FIELDS)} in its data or prepare script",
            metadata,
            warn_only=True,
        )
    return CheckOutcome(True, f"all {total} rows carry their own IDs", metadata)
