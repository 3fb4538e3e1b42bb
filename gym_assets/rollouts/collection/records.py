"""The row shapes collection writes: a success record and a failure-sidecar row.

A success record is the environment server's result as it is (collection does not interpret
protocol fields) plus the collector stamps and the evidence collection owns (``ng_trajectory``,
``ng_model_call_capture``). A failure row carries ``_ng_failure_*`` keys and the same stamps,
never a ``reward`` or a synthetic ``response``: the split between the two is structural.

Two failures become records instead of rows alone (docs/rollouts.md, "Accounting"): one the
model's output caused is a measured record scoring 0 that names the failure (and no failure
row), and a rollout whose model call failed for good (NeMo Gym PR #4048) keeps its failure row
and gets a masked record graded by its verifier, whatever reward the verifier gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_assets.records import keys
from gym_assets.records.accounting import caused_by_model
from gym_assets.records.episode import EpisodeFailure, TaskId, clip_reason
from gym_assets.records.evidence import FailureSidecarRow
from gym_assets.records.stamps import RolloutStamps
from gym_assets.rollouts.collection.inputs import RolloutInput

AGENT_REQUEST_FAILED = "agent_request_failed"
VERIFIER_REWARD = "verifier_reward"  # what the verifier awarded a rollout masked anyway


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


def failure_record(
    stamped: RolloutStamps,
    kind: str,
    reason: str,
    *,
    request: dict[str, Any] | None,
    response: dict[str, Any],
    observations: Any,
    evidence: dict[str, Any],
    verified: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The record of a rollout that ended on a failure of ``kind``, as the accounting counts it:
    the model's failure scores 0, measured; ours is masked. ``verified`` is what the verifier
    made of the evidence (a failed call's rollout, NeMo Gym PR #4048): its reward is kept as
    ``verifier_reward``, and never counts, since a mask is ours to set.
    """
    result: dict[str, Any] = {} if request is None else {"responses_create_params": request}
    result |= dict(verified or {"evaluation_completed": False}) | {
        "response": response,
        "reward": 0.0,
        "mask_sample": not caused_by_model(kind),
        "failure_kind": kind,
        "failure_reason": clip_reason(reason),
        keys.AGENT_OBSERVATIONS: observations,
    }
    if verified is not None:
        result[VERIFIER_REWARD] = verified.get("reward")
    return success_record(result, stamped.to_row(), evidence)


def answer_before(failure: Mapping[str, Any]) -> dict[str, Any]:
    """What the agent had answered before a failure (its partial response), else an empty
    failed response saying why: the answer a failure's record keeps and its verifier grades."""
    partial = failure.get(keys.FAILURE_PARTIAL_RESPONSE)
    if isinstance(partial, dict):
        return partial
    message = {"message": str(failure.get(keys.FAILURE_MESSAGE))}
    return {"output": [], "status": "failed", "usage": None, "error": message}


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


def failure_kind_of(row: dict[str, Any]) -> str:
    """The vocabulary name of a failure row: its kind when known, else its class."""
    return str(row.get(keys.FAILURE_KIND) or row[keys.FAILURE_CLASS])
