"""Wire types of one episode, shared by environment servers, agents and collection.

An environment server runs one episode of one task: it receives an ``EpisodeRequest`` and
answers an ``EpisodeResponse`` holding exactly one of ``result`` (the verifier's response plus
evidence) or ``failure``. Failure kinds and stages form a small fixed vocabulary so that
retry, masking and reporting decisions can key on them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gym_assets.records import keys
from gym_assets.records.evidence import FailureSidecarRow
from gym_assets.records.ids import ATTEMPT_SUFFIX, ROLLOUT_ID_PATTERN, attempt_key, is_rollout_id

MAX_FAILURE_REASON = 2000
ENVIRONMENT_SERVER_FAILED = "environment_server_failed"


def clip_reason(text: str) -> str:
    """A failure reason cut to ``MAX_FAILURE_REASON`` characters, marked as cut."""
    return text if len(text) <= MAX_FAILURE_REASON else text[: MAX_FAILURE_REASON - 1] + "…"


FailureStage = Literal["admission", "seed", "agent", "verification", "cleanup"]

# <domain>_<condition>: what went wrong. Whether to retry or mask is decided per occurrence.
FAILURE_KINDS = frozenset(
    {
        "transport_unreachable",
        "transport_peer_drop",
        "transport_timeout",
        "transport_local_resource",
        "agent_run_error",
        "agent_request_failed",
        "agent_request_too_large",
        "agent_answer_too_large",
        "agent_timeout",
        "agent_crashed",
        "agent_command_not_allowed",
        "agent_killed",
        "agent_output_refused",
        ENVIRONMENT_SERVER_FAILED,
        "protocol_violation",
        "judge_failed",
        "judge_unparseable",
        "verifier_error",
        "verifier_answer_rejected",
        "provider_unavailable",
        "provider_quota_exhausted",
        "provider_oom_killed",
        "session_lost",
        "session_expired",
        "session_release_failed",
        "cancelled",
        "kill_shaped",
        "worker_lost",
        "shutdown",
        "persistence_failed",
        "cohort_incomplete",
        "plan_mismatch",
    }
)

# Statuses after which a dependency call may succeed if simply tried again.
RETRYABLE_HTTP_STATUSES = frozenset({408, 425, 429})


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_HTTP_STATUSES or status >= 500


class TaskId(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    taskset: str = Field(min_length=1)
    task_id: str = Field(min_length=1)


class EpisodeId(BaseModel):
    """Which rollout and which attempt of it; ``capture_key`` names its model traffic."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rollout_id: str
    attempt: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _check_rollout_id(self) -> EpisodeId:
        if not is_rollout_id(self.rollout_id):
            raise ValueError(f"rollout_id must match {ROLLOUT_ID_PATTERN.pattern}")
        if ATTEMPT_SUFFIX.search(self.rollout_id):
            raise ValueError("rollout_id must not end in -a<N>; pass the attempt separately")
        return self

    @property
    def capture_key(self) -> str:
        return attempt_key(self.rollout_id, self.attempt)


class MaterializedTask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: TaskId
    task_input: dict[str, Any]


class EpisodeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    episode_id: EpisodeId
    task: MaterializedTask


class EpisodeFailure(BaseModel):
    """Why an episode produced no result. ``terminal`` means retrying cannot help."""

    model_config = ConfigDict(extra="allow")

    failure_reason: str = Field(max_length=MAX_FAILURE_REASON)
    terminal: bool
    failure_kind: str | None = None
    stage: FailureStage | None = None

    @classmethod
    def of(
        cls,
        reason: str,
        *,
        terminal: bool,
        kind: str | None = None,
        stage: FailureStage | None = None,
        **extra: Any,
    ) -> EpisodeFailure:
        return cls(
            failure_reason=clip_reason(reason),
            terminal=terminal,
            failure_kind=kind,
            stage=stage,
            **extra,
        )

    def sidecar(self) -> FailureSidecarRow:
        """The failure-sidecar row this failure becomes (the agent's observations, evidence
        rather than a detail of the failure, are not part of it)."""
        return FailureSidecarRow(
            failure_class=ENVIRONMENT_SERVER_FAILED,
            failure_terminal=self.terminal,
            failure_message=self.failure_reason,
            failure_kind=self.failure_kind,
            failure_stage=self.stage,
            failure_partial_response=(self.model_extra or {}).get("partial_response"),
        )


class EpisodeResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    episode_id: EpisodeId
    task_id: TaskId
    result: dict[str, Any] | None = None
    failure: EpisodeFailure | None = None

    @model_validator(mode="after")
    def _exactly_one_outcome(self) -> EpisodeResponse:
        if (self.result is None) == (self.failure is None):
            raise ValueError("an episode response carries exactly one of result or failure")
        return self


def reserved_keys_in(result: dict[str, Any]) -> list[str]:
    return sorted(k for k in result if keys.is_collector_key(k) or k in keys.RESERVED_RESULT_KEYS)
