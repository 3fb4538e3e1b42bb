"""Which environment server a collated row goes to: its taskset's route, else the mode's.

The config knows routes per taskset (``gym_assets.config.routing``); only here is a row read
for its taskset, so the config layer never needs to know what a row looks like.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_assets.config.routing import environment_server_for_taskset
from gym_assets.tasks.materialize import is_materialized


def environment_server_for_row(config: Mapping[str, Any], row: Mapping[str, Any]) -> str | None:
    """The server a row is stamped with before dispatch; None means "find it by agent"."""
    taskset = row["task_id"].get("taskset") if is_materialized(row) else None
    return environment_server_for_taskset(config, taskset)
