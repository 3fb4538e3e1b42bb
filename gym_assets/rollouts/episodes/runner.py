"""The protocol-neutral half of an environment server's ``run``.

Admission, one cleanup stack per episode, the episode deadline, mapping every outcome to a
result or an ``EpisodeFailure``, and attaching what the episode accumulated (partial response,
agent observations, cleanup errors) — also to failures, so a timed-out episode keeps its work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gym_assets.records import keys
from gym_assets.records.episode import (
    ENVIRONMENT_SERVER_FAILED,
    EpisodeFailure,
    EpisodeRequest,
    EpisodeResponse,
    reserved_keys_in,
)
from gym_assets.rollouts.episodes.cleanup import CleanupStack, run_shielded
from gym_assets.rollouts.episodes.failures import HandledEpisodeError, describe
from gym_assets.rollouts.episodes.observations import merge_observations
from gym_assets.rollouts.episodes.resources import default_aggregate_metrics


class EnvironmentSettings(BaseModel):
    """Limits every environment server accepts (other config keys belong to the server)."""

    model_config = ConfigDict(extra="allow")

    default_episode_timeout_seconds: float | None = Field(
        default=600.0, gt=0, allow_inf_nan=False, strict=True
    )
    cleanup_timeout_seconds: float = Field(default=30.0, gt=0, allow_inf_nan=False, strict=True)
    max_concurrent_episodes: int | None = Field(default=None, ge=1, strict=True)
    queue_timeout_seconds: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, strict=True
    )

    @model_validator(mode="after")
    def _queue_needs_limit(self) -> EnvironmentSettings:
        if self.max_concurrent_episodes is not None and self.queue_timeout_seconds is None:
            raise ValueError("queue_timeout_seconds is required with max_concurrent_episodes")
        return self


@dataclass
class Episode:
    """What one running episode has accumulated; kept whatever way the episode ends."""

    request: EpisodeRequest
    cleanup: CleanupStack
    partial_response: dict[str, Any] | None = None
    observations: dict[str, dict[str, Any]] = field(default_factory=dict)  # agent -> bundle

    @property
    def capture_key(self) -> str:
        return self.request.episode_id.capture_key

    def take_receipt(self, agent: str, receipt: Mapping[str, Any]) -> None:
        """Keep an agent's close receipt: its observations, and its partial response if the
        episode has none yet (the activation was cut off before it answered)."""
        bundle = receipt.get("agent_observations")
        if bundle is not None:
            self.observations[agent] = dict(bundle)
        if self.partial_response is None and receipt.get("partial_response") is not None:
            self.partial_response = dict(receipt["partial_response"])

    def merged_observations(self) -> dict[str, Any] | None:
        return merge_observations(self.observations)


Protocol = Callable[[Episode], Awaitable[dict[str, Any]]]


class EpisodeRunner:
    """Runs one protocol coroutine per request under the server's limits."""

    def __init__(self, settings: EnvironmentSettings) -> None:
        self.settings = settings
        limit = settings.max_concurrent_episodes
        self._slots = asyncio.Semaphore(limit) if limit is not None else None

    async def run(
        self, request: EpisodeRequest | Mapping[str, Any], protocol: Protocol
    ) -> EpisodeResponse:
        """Run ``protocol`` for an episode request (a mapping is validated as one first)."""
        if not isinstance(request, EpisodeRequest):
            request = EpisodeRequest.model_validate(request)
        if self._slots is not None:
            try:
                await asyncio.wait_for(self._slots.acquire(), self.settings.queue_timeout_seconds)
            except TimeoutError:
                failure = EpisodeFailure.of(
                    "Episode admission timed out", terminal=False, stage="admission"
                )
                return _response(request, failure)
        try:
            return await self._run_admitted(request, protocol)
        finally:
            if self._slots is not None:
                self._slots.release()

    async def _run_admitted(self, request: EpisodeRequest, protocol: Protocol) -> EpisodeResponse:
        episode = Episode(request, CleanupStack(self.settings.cleanup_timeout_seconds))
        outcome: dict[str, Any] | EpisodeFailure
        deadline = asyncio.timeout(self.settings.default_episode_timeout_seconds)
        try:
            async with deadline:
                outcome = await protocol(episode)
        except TimeoutError as exc:
            outcome = (
                EpisodeFailure.of("Episode timed out", terminal=False, kind="agent_timeout")
                if deadline.expired()
                else _unhandled(exc)
            )
        except HandledEpisodeError as exc:
            outcome = exc.failure
        except Exception as exc:
            outcome = _unhandled(exc)
        finally:
            cleanup_errors = await run_shielded(episode.cleanup.aclose())
        if isinstance(outcome, dict):
            reserved = reserved_keys_in(outcome)
            if not reserved:
                return _response(request, outcome)
            outcome = EpisodeFailure.of(
                f"result carries keys reserved for collection: {', '.join(reserved)}",
                terminal=True,
                kind="protocol_violation",
            )
        return _response(request, _with_evidence(outcome, episode, cleanup_errors))


class RunnerServer:
    """An environment server whose protocol is one ``_episode`` coroutine run by ``runner``."""

    runner: EpisodeRunner

    async def _episode(self, episode: Episode) -> dict[str, Any]:
        raise NotImplementedError

    async def run(self, request: EpisodeRequest | Mapping[str, Any]) -> EpisodeResponse | dict:
        return await self.runner.run(request, self._episode)

    async def aggregate_metrics(self, verify_responses: Sequence[Mapping[str, Any]]) -> dict:
        return default_aggregate_metrics(verify_responses)


def _unhandled(exc: BaseException) -> EpisodeFailure:
    return EpisodeFailure.of(
        f"Unhandled environment server error: {describe(exc)}",
        terminal=True,
        kind=ENVIRONMENT_SERVER_FAILED,
    )


def _with_evidence(
    failure: EpisodeFailure, episode: Episode, cleanup_errors: list[str]
) -> EpisodeFailure:
    evidence = {
        "partial_response": episode.partial_response,
        keys.AGENT_OBSERVATIONS: episode.merged_observations(),
        "cleanup_error": "; ".join(cleanup_errors) or None,
    }
    return EpisodeFailure.model_validate({**failure.model_dump(), **evidence})


def _response(request: EpisodeRequest, outcome: dict[str, Any] | EpisodeFailure) -> EpisodeResponse:
    if isinstance(outcome, EpisodeFailure):
        return EpisodeResponse(
            episode_id=request.episode_id, task_id=request.task.task_id, failure=outcome
        )
    return EpisodeResponse(
        episode_id=request.episode_id, task_id=request.task.task_id, result=outcome
    )
