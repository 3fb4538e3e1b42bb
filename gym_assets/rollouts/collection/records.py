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

from typing import Any, Literal

from gym_assets.records.episode import MAX_FAILURE_REASON, EpisodeFailure
from gym_assets.records.evidence import FAILURE_CLASS_KEY
from gym_assets.rollouts.collection.inputs import (
    ATTEMPT_INDEX,
    ENVIRONMENT_SERVER,
    RESULT_TYPE,
    ROLLOUT_ID,
    ROLLOUT_INDEX,
    TASK_ID,
    TASK_INDEX,
    RolloutInput,
)

AGENT_REQUEST_FAILED = "agent_request_failed"
COPIED_ROW_KEYS = ("agent_ref", "task_source", "skills_ref")
ENVIRONMENT_FAILURE = "environment_server_failed"
FAILURE_KIND_KEY = "_ng_failure_kind"
Outcome = Literal["measured", "masked", "unscored"]


def stamps(item: RolloutInput, attempt: int, result_type: str, agent: str | None) -> dict:
    """The collector keys every row of this attempt carries (success or failure)."""
    row = item.row
    stamped: dict[str, Any] = {TASK_INDEX: row[TASK_INDEX], ROLLOUT_INDEX: row[ROLLOUT_INDEX]}
    if attempt > 0:
        stamped[ATTEMPT_INDEX] = attempt
    if ROLLOUT_ID in row:
        stamped[ROLLOUT_ID] = row[ROLLOUT_ID]
    for key in COPIED_ROW_KEYS:
        if key in row:
            stamped[key] = row[key]
    if "agent_ref" not in stamped and agent is not None:
        stamped["agent_ref"] = {"name": agent}
    stamped[ENVIRONMENT_SERVER] = item.server
    stamped[RESULT_TYPE] = result_type
    stamped[TASK_ID] = {"taskset": item.taskset, "task_id": item.task_id}
    return stamped


def success_record(result: dict[str, Any], stamped: dict[str, Any], evidence: dict) -> dict:
    """The result, then the evidence collection owns, then the stamps (stamps win)."""
    return {**result, **evidence, **stamped}


def failed_call_record(
    stamped: dict[str, Any],
    reason: str,
    *,
    request: dict[str, Any] | None,
    response: dict[str, Any] | None,
    observations: Any,
    evidence: dict,
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
        "failure_reason": _clip(reason),
        "ng_agent_observations": observations,
    }
    return success_record(result, stamped, evidence)


def _clip(text: str) -> str:
    return text if len(text) <= MAX_FAILURE_REASON else text[: MAX_FAILURE_REASON - 1] + "…"


def failure_row(
    stamped: dict[str, Any],
    failure_class: str,
    message: str,
    *,
    terminal: bool,
    kind: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A sidecar row: ``_ng_failure_class`` (presence marks a failure) and its details."""
    row: dict[str, Any] = {
        FAILURE_CLASS_KEY: failure_class,
        "_ng_failure_terminal": terminal,
        "_ng_failure_message": _clip(message),
    }
    if kind is not None:
        row[FAILURE_KIND_KEY] = kind
    row.update({f"_ng_failure_{name}": value for name, value in extra.items() if value is not None})
    return {**row, **stamped}


def environment_failure_row(stamped: dict[str, Any], failure: EpisodeFailure) -> dict[str, Any]:
    """A failure the environment server handled and reported: one failure-sidecar row."""
    partial = (failure.model_extra or {}).get("partial_response")
    return failure_row(
        stamped,
        ENVIRONMENT_FAILURE,
        failure.failure_reason,
        terminal=failure.terminal,
        kind=failure.failure_kind,
        stage=failure.stage,
        partial_response=partial,
    )


def outcome_of(record: dict[str, Any]) -> Outcome:
    """Masked when the verifier says so; unscored without a reward; measured otherwise."""
    if record.get("mask_sample") is True:
        return "masked"
    if record.get("reward") is None:
        return "unscored"
    return "measured"


def failure_kind_of(row: dict[str, Any]) -> str:
    """The vocabulary name of a failure row: its kind when known, else its class."""
    return str(row.get(FAILURE_KIND_KEY) or row[FAILURE_CLASS_KEY])
