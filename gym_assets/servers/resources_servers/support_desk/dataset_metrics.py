"""Per-task metrics of support-desk datasets: how the expected resolutions are distributed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def compute_task_metrics(task_input: Mapping[str, Any]) -> Mapping[str, Any]:
    return {"Resolution": task_input["expected_resolution"]}
