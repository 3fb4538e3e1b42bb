"""The model gateway a run talks through, built from the run's upstream config."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from pathlib import Path

from gym_assets.errors import UserError
from gym_assets.fileio import read_json_file
from gym_assets.limits import MAX_JSON_DOCUMENT_BYTES
from gym_assets.records.contracts import Step
from gym_assets.rollouts.gateway import (
    ModelGateway,
    ModelRequest,
    OpenAIUpstream,
    ReferenceUpstream,
    ScriptedUpstream,
    ScriptError,
    Upstream,
    UpstreamReply,
)
from gym_assets.rollouts.gateway.bodies import DEFAULT_LIMITS, BodyLimits
from gym_assets.rollouts.gateway.script import compile_script
from gym_assets.rollouts.gateway.translation import TranslatingUpstream
from gym_assets.rollouts.gateway.upstream_config import UpstreamConfig


class _Latency:
    """Mixin for the offline upstreams: think before each answer, ``latency_s`` seconds
    times a uniform draw from 1 ± ``latency_spread``.

    A mixin rather than a wrapper, so the gateway still sees a ``ReferenceUpstream``.
    """

    latency_s: float = 0.0
    latency_spread: float = 0.0

    def delay(self) -> float:
        """Seconds the next answer waits (timing only: what it says does not depend on it)."""
        spread = self.latency_spread
        return self.latency_s * (random.uniform(1 - spread, 1 + spread) if spread else 1.0)

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        if self.latency_s:
            await asyncio.sleep(self.delay())
        return await super().answer(request)  # type: ignore[misc]


class _Reference(_Latency, ReferenceUpstream):
    pass


class _Scripted(_Latency, ScriptedUpstream):
    pass


def _upstream(
    config: UpstreamConfig, model: str, script: Sequence[Step] | None, limits: BodyLimits
) -> Upstream:
    if config.mode == "openai":
        assert config.base_url is not None and config.api_key_env is not None
        server = OpenAIUpstream(
            config.base_url,
            config.api_key_env,
            model=config.model,
            max_answer_bytes=limits.answer_bytes,
        )
        return TranslatingUpstream(server, config.api)
    if config.mode == "scripted":
        upstream: _Latency = _Scripted(script or (), model=model)
    else:
        upstream = _Reference(model=model)
    upstream.latency_s, upstream.latency_spread = config.latency_s, config.latency_spread
    return upstream  # type: ignore[return-value]


def require_ready(config: UpstreamConfig, script: Sequence[Step] | None) -> None:
    """Refuse, before anything is written, an upstream that could not answer: an unset API-key
    variable, or a missing or malformed script."""
    if config.mode == "openai":
        config.api_key()
    if config.mode == "scripted":
        if not script:
            raise UserError("the scripted upstream needs a script (--script FILE)")
        try:
            compile_script(script)
        except ScriptError as exc:
            raise UserError(f"bad script: {exc}") from None


def build_gateway(
    config: UpstreamConfig,
    capture_dir: Path,
    *,
    model_name: str,
    model_server_name: str,
    script: Sequence[Step] | None = None,
    limits: BodyLimits = DEFAULT_LIMITS,
    path_key: str | None = None,
) -> ModelGateway:
    """An unstarted gateway (start it with ``with gateway:``) answering from ``config``;
    ``require_ready`` first."""
    return ModelGateway(
        _upstream(config, config.model or model_name, script, limits),
        capture_dir,
        model_name=config.model or model_name,
        model_server_name=model_server_name,
        redactor=config.redactor(),
        limits=limits,
        path_key=path_key,
    )


def load_script(path: Path) -> list[Step]:
    """A scripted upstream's steps from a JSON file (a list of step objects)."""
    steps = read_json_file(path, "script", MAX_JSON_DOCUMENT_BYTES)
    if not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps):
        raise UserError("a script is a JSON list of step objects", path=path)
    return steps
