"""The model gateway a run talks through, built from the run's upstream config."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from gym_assets.errors import UserError
from gym_assets.rollouts.contracts import Step
from gym_assets.rollouts.gateway import (
    ModelGateway,
    ModelRequest,
    OpenAIUpstream,
    ReferenceUpstream,
    ScriptedUpstream,
    UpstreamReply,
)
from gym_assets.rollouts.gateway import Upstream as GatewayUpstream
from gym_assets.rollouts.harnesses import Upstream


class _Delayed:
    """An offline upstream that thinks for ``seconds`` before each answer."""

    def __init__(self, inner: GatewayUpstream, seconds: float):
        self.inner = inner
        self.seconds = seconds

    async def open(self) -> None:
        await self.inner.open()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        await asyncio.sleep(self.seconds)
        return await self.inner.answer(request)


def _upstream(config: Upstream, model: str, script: Sequence[Step] | None) -> GatewayUpstream:
    if config.mode == "openai":
        assert config.base_url is not None and config.api_key_env is not None
        return OpenAIUpstream(config.base_url, config.api_key_env, model=config.model)
    if config.mode == "scripted":
        if not script:
            raise UserError("the scripted upstream needs a script (--script FILE)")
        upstream: GatewayUpstream = ScriptedUpstream(script, model=model)
    else:
        upstream = ReferenceUpstream(model=model)
    return _Delayed(upstream, config.latency_s) if config.latency_s else upstream


def build_gateway(
    config: Upstream,
    capture_dir: Path,
    *,
    model_name: str,
    model_server_name: str,
    script: Sequence[Step] | None = None,
) -> ModelGateway:
    """An unstarted gateway (start it with ``with gateway:``) answering from ``config``."""
    if config.mode == "openai":
        config.api_key()  # refuse early, with a clear message, when the variable is unset
    return ModelGateway(
        _upstream(config, config.model or model_name, script),
        capture_dir,
        model_name=config.model or model_name,
        model_server_name=model_server_name,
    )
