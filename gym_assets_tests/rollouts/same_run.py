"""What "the same run" means for two rollouts run directories made from the same inputs: the
files that are deterministic are byte-identical, and the records and failures are the same rows
once what differs between any two runs (ids minted per call, clocks) is left out."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gym_assets.rollouts.collection.files import RunFiles

# Minted per model call or read off a clock: two runs of the same inputs differ here and only here.
VOLATILE = frozenset(
    {
        "id",
        "response_id",
        "model_call_id",
        "created_at",
        "started_at",
        "completed_at",
        "timestamp",
        "duration_ms",
        "latency_total_ms",
    }
)
BYTE_IDENTICAL = ("materialized_inputs", "manifest", "plan", "aggregate_metrics")


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def rows_by_key(path: Path) -> dict[tuple[int, int], list[Any]]:
    rows: dict[tuple[int, int], list[Any]] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            rows.setdefault((row["_ng_task_index"], row["_ng_rollout_index"]), []).append(
                _stable(row)
            )
    return rows


def assert_same_run(one: Path, other: Path) -> None:
    a, b = RunFiles(one), RunFiles(other)
    for name in BYTE_IDENTICAL:
        assert getattr(a, name).read_bytes() == getattr(b, name).read_bytes(), name
    for name in ("records", "failures"):
        assert rows_by_key(getattr(a, name)) == rows_by_key(getattr(b, name)), name
    for name in ("capture_dir", "report_dir"):
        assert sorted(os.listdir(getattr(a, name))) == sorted(os.listdir(getattr(b, name))), name
