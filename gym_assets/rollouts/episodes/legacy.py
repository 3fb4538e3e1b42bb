"""Flat (legacy) rows: their episode identity, their episode request, and flat failure answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_assets.rollouts.protocol import EpisodeFailure, EpisodeId, EpisodeRequest
from gym_assets.tasks.materialize import source_task_id, task_input_of


def episode_id_of(row: Mapping[str, Any]) -> EpisodeId:
    """``_ng_rollout_id`` if given, else ``<task index>-<rollout index>``; attempt separate."""
    explicit = row.get("_ng_rollout_id")
    rollout_id = (
        str(explicit)
        if explicit is not None
        else f"{row.get('_ng_task_index', 0)}-{row.get('_ng_rollout_index', 0)}"
    )
    return EpisodeId(rollout_id=rollout_id, attempt=int(row.get("_ng_attempt_index", 0)))


def episode_request_of(row: Mapping[str, Any], taskset: str) -> EpisodeRequest:
    """The episode a flat row describes (its task input: every non-routing, non-``_ng_`` key)."""
    task_id = source_task_id(row) or str(row.get("_ng_task_index", 0))
    return EpisodeRequest.model_validate(
        {
            "episode_id": episode_id_of(row).model_dump(),
            "task": {
                "task_id": {"taskset": taskset, "task_id": task_id},
                "task_input": task_input_of(row),
            },
        }
    )


def failure_row(failure: EpisodeFailure) -> dict[str, Any]:
    """A failure as the flat ``_ng_failure_*`` answer of a legacy ``run`` (with the agent's
    observations, which collection projects into the record of a failed model call)."""
    row: dict[str, Any] = {
        "_ng_failure_class": "environment_server_failed",
        "_ng_failure_terminal": failure.terminal,
        "_ng_failure_message": failure.failure_reason,
    }
    if failure.stage is not None:
        row["_ng_failure_stage"] = failure.stage
    if failure.failure_kind is not None:
        row["_ng_failure_kind"] = failure.failure_kind
    extra = failure.model_extra or {}
    if extra.get("partial_response") is not None:
        row["_ng_failure_partial_response"] = extra["partial_response"]
    if extra.get("ng_agent_observations") is not None:  # evidence, not a sidecar detail
        row["ng_agent_observations"] = extra["ng_agent_observations"]
    return row
