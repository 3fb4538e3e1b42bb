"""Flat (legacy) rows: their episode identity, their episode request, the flat row a task is
rebuilt as for an agent that only runs flat rows, and flat failure answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_assets.json_shapes import is_mapping
from gym_assets.records import keys
from gym_assets.records.episode import EpisodeFailure, EpisodeId, EpisodeRequest
from gym_assets.records.ids import base_rollout_id
from gym_assets.tasks.materialize import materialize_task

LEGACY_RELAY = "legacy_agent"  # the implementation of the relay in front of such an agent


def episode_id_of(row: Mapping[str, Any]) -> EpisodeId:
    """``_ng_rollout_id`` if given, else ``<task index>-<rollout index>``; attempt separate."""
    explicit = row.get(keys.ROLLOUT_ID)
    rollout_id = base_rollout_id(
        row.get(keys.TASK_INDEX, 0),
        row.get(keys.ROLLOUT_INDEX, 0),
        None if explicit is None else str(explicit),
    )
    return EpisodeId(rollout_id=rollout_id, attempt=int(row.get(keys.ATTEMPT_INDEX, 0)))


def episode_request_of(row: Mapping[str, Any], taskset: str) -> EpisodeRequest:
    """The episode a flat row describes (its task input: every non-routing, non-``_ng_`` key).

    Its task ID is the row's own ID, else its ``_ng_task_index``; a row with neither is
    refused ("A flat row without a task ID requires a non-negative task_index"), as the
    reference refuses it, rather than run as task ``"0"``."""
    task = materialize_task(row, taskset)
    return EpisodeRequest.model_validate(
        {"episode_id": episode_id_of(row).model_dump(), "task": task}
    )


def flat_row_of_task(task: Mapping[str, Any], agent: str) -> dict[str, Any]:
    """The flat run row a ``legacy_agent`` relay hands its agent for a materialized task row
    (the reference's V-legacy-taskset): the ``task_input`` fields at top level, the row's
    collector keys (so the agent's episode identity and capture key are the ones collection
    expects) except the environment-server stamp, and ``agent_ref`` naming the relay's agent.

    The task's identity (``task_id.taskset``) stays with collection, which stamps the record.
    """
    task_input = task["task_input"]
    if not is_mapping(task_input):
        raise ValueError(f"task_input must be an object, got {type(task_input).__name__}")
    collector = {
        key: value
        for key, value in task.items()
        if keys.is_collector_key(key) and key != keys.ENVIRONMENT_SERVER
    }
    return {**task_input, **collector, "agent_ref": {"name": agent}}


def flat_row_of_request(request: EpisodeRequest, agent: str) -> dict[str, Any]:
    """``flat_row_of_task`` for an episode request: its episode identity becomes the row's
    ``_ng_rollout_id`` (and ``_ng_attempt_index`` after the first attempt)."""
    episode = request.episode_id
    identity: dict[str, Any] = {keys.ROLLOUT_ID: episode.rollout_id}
    if episode.attempt:
        identity[keys.ATTEMPT_INDEX] = episode.attempt
    task = {"task_id": request.task.task_id.model_dump(), "task_input": request.task.task_input}
    return flat_row_of_task({**task, **identity}, agent)


def flat_failure_answer(failure: EpisodeFailure) -> dict[str, Any]:
    """A failure as the flat ``_ng_failure_*`` answer of a legacy ``run`` (with the agent's
    observations, which collection projects into the record of a failed model call)."""
    row = failure.sidecar().to_row()
    observations = (failure.model_extra or {}).get(keys.AGENT_OBSERVATIONS)
    if observations is not None:
        row[keys.AGENT_OBSERVATIONS] = observations
    return row
