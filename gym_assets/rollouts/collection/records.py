"""The row shapes collection writes: a success record and a failure-sidecar row.

A success record is the environment server's result as it is (collection does not interpret
protocol fields) plus the collector stamps and the evidence collection owns (``ng_trajectory``,
``ng_model_call_capture``). A failure row carries ``_ng_failure_*`` keys and the same stamps,
never a ``reward`` or a synthetic ``response``: the split between the two is structural.

One failure also gets a record (NeMo Gym PR #4048): a rollout whose model call failed for good
(the endpoint answered an HTTP error the agent could not get past). The rollout did run, and
its evidence (every failed attempt, who made it) is what a reader needs to see why, so it is
kept as a masked record with reward 0 beside its sidecar row, which keeps the failure's details.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from gym_assets.records import keys
from gym_assets.records.episode import EpisodeFailure, TaskId, clip_reason
from gym_assets.records.evidence import FailureSidecarRow
from gym_assets.records.stamps import RolloutStamps
from gym_assets.rollouts.collection.inputs import RolloutInput

AGENT_REQUEST_FAILED = "agent_request_failed"
Outcome = Literal["measured", "masked", "unscored"]


def stamps(item: RolloutInput, attempt: int, result_type: str, agent: str | None) -> RolloutStamps:
    """The collector stamps every row of this attempt carries (success or failure)."""
    task_id = TaskId(taskset=item.taskset, task_id=item.task_id)
    return RolloutStamps.of_input(
        item.row, task_id, attempt=attempt, result_type=result_type, agent=agent
    )


def success_record(
    result: dict[str, Any], stamps_row: Mapping[str, Any], evidence: dict[str, Any]
) -> dict[str, Any]:
    """The result, then the evidence collection owns, then the stamps (stamps win); the
    stamps as written (``RolloutStamps.to_row``, or as a re-verified record carried them)."""
    return {**result, **evidence, **stamps_row}


def failed_call_record(
    stamped: RolloutStamps,
    reason: str,
    *,
    request: dict[str, Any] | None,
    response: dict[str, Any] | None,
    observations: Any,
    evidence: dict[str, Any],
) -> dict[str, Any]:
    """The masked record of a rollout whose model call failed for good: reward 0, not a
    measurement (``mask_sample``), never verified (``evaluation_completed: false``).

    ``response`` is what the agent had answered before the failure, else an empty failed one.
    """
    if response is None:
        response = {"output": [], "status": "failed", "usage": None, "error": {"message": reason}}
    result: dict[str, Any] = {} if request is None else {"responses_create_params": request}
    result |= {
        "response": response,
        "reward": 0.0,
        "evaluation_completed": False,
        "mask_sample": True,
        "failure_kind": AGENT_REQUEST_FAILED,
        "failure_reason": clip_reason(reason),
        keys.AGENT_OBSERVATIONS: observations,
    }
    return success_record(result, stamped.to_row(), evidence)


def failure_row(
    stamped: RolloutStamps,
    failure_class: str,
    message: str,
    *,
    terminal: bool,
    kind: str | None = None,
    stage: str | None = None,
    error_type: str | None = None,
    partial_response: Any = None,
) -> dict[str, Any]:
    """A sidecar row: ``_ng_failure_class`` (presence marks a failure) and its details."""
    failure = FailureSidecarRow(
        failure_class=failure_class,
        failure_terminal=terminal,
        failure_message=clip_reason(message),
        failure_kind=kind,
        failure_stage=stage,
        failure_type=error_type,
        failure_partial_response=partial_response,
    )
    return failure.to_row(stamped.to_row())


def environment_failure_row(stamped: RolloutStamps, failure: EpisodeFailure) -> dict[str, Any]:
    """A failure the environment server handled and reported."""
    return failure.sidecar().to_row(stamped.to_row())


def outcome_of(record: dict[str, Any]) -> Outcome:
    """Masked when the verifier says so; unscored without a reward; measured otherwise."""
    if record.get("mask_sample") is True:
        return "masked"
    if record.get("reward") is None:
        return "unscored"
    return "measured"


def failure_kind_of(row: dict[str, Any]) -> str:
    """The vocabulary name of a failure row: its kind when known, else its class."""
    return str(row.get(keys.FAILURE_KIND) or row[keys.FAILURE_CLASS])
