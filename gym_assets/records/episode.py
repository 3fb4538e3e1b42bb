"""Wire types of one episode, shared by environment servers, agents and collection.

An environment server runs one episode of one task: it receives an ``EpisodeRequest`` and
answers an ``EpisodeResponse`` holding exactly one of ``result`` (the verifier's response plus
evidence) or ``failure``. Failure kinds and stages form a small fixed vocabulary so that
retry, masking and reporting decisions can key on them.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ROLLOUT_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_ATTEMPT_SUFFIX = re.compile(r"-a\d+$")
MAX_FAILURE_REASON = 2000

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
        "agent_timeout",
        "agent_command_not_allowed",
        "environment_server_failed",
        "protocol_violation",
        "judge_failed",
        "judge_unparseable",
        "verifier_error",
        "provider_unavailable",
        "provider_quota_exhausted",
        "provider_oom_killed",
        "session_lost",
        "session_expired",
        "session_release_failed",
        "cancelled",
        "kill_shaped",
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
        if not ROLLOUT_ID_PATTERN.match(self.rollout_id):
            raise ValueError("rollout_id must match ^[A-Za-z0-9][A-Za-z0-9._-]*$")
        if _ATTEMPT_SUFFIX.search(self.rollout_id):
            raise ValueError("rollout_id must not end in -a<N>; pass the attempt separately")
        return self

    @property
    def capture_key(self) -> str:
        return self.rollout_id if self.attempt == 0 else f"{self.rollout_id}-a{self.attempt}"


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
        text = (
            reason if len(reason) <= MAX_FAILURE_REASON else reason[: MAX_FAILURE_REASON - 1] + "…"
        )
        return cls(failure_reason=text, terminal=terminal, failure_kind=kind, stage=stage, **extra)


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


# Keys a result may not carry: collection owns them.
RESERVED_RESULT_KEYS = frozenset({"ng_trajectory", "ng_model_call_capture", "ng_perf"})


def reserved_keys_in(result: dict[str, Any]) -> list[str]:
    return sorted(k for k in result if k.startswith("_ng_") or k in RESERVED_RESULT_KEYS)
