"""Running one adapter activation by hand: a scripted gateway, prepare, the real launcher,
observations — the path ``command_agent`` takes, without a benchmark around it."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.harness_adapters.base import Adapter, Api, CliEpisode
from gym_assets.rollouts.contracts import Step
from gym_assets.rollouts.episodes.launch import EpisodeFiles, Launch, launch_of, supervise
from gym_assets.rollouts.gateway import read_capture
from gym_assets.rollouts.gateway.server import ModelGateway
from gym_assets.rollouts.gateway.upstreams import ScriptedUpstream

ROLLOUT = "r1"
INVOCATION = "root"


def harness_install(name: str) -> Path | None:
    """The harness's install folder under ``GYM_ASSETS_HARNESSES_DIR`` (or ``.harnesses``)."""
    root = Path(os.environ.get("GYM_ASSETS_HARNESSES_DIR") or ".harnesses")
    folder = root / name
    return folder if folder.is_dir() else None


@dataclass(frozen=True)
class Activation:
    episode: CliEpisode
    exit_code: int
    bundle: dict[str, Any]
    calls: list[dict[str, Any]]  # the gateway's capture of the invocation, payloads included


def run_activation(
    adapter: Adapter,
    install_dir: Path,
    script: Sequence[Step],
    root: Path,
    *,
    prompt: str,
    api: Api = "chat",
    offline_env: Mapping[str, str] | None = None,
    offline_args: Sequence[str] = (),
) -> Activation:
    with ModelGateway(ScriptedUpstream(script), root / "capture") as gateway:
        files = EpisodeFiles(root / "activation").create()
        episode = CliEpisode(
            files=files,
            base_url=gateway.url_for(ROLLOUT, INVOCATION),
            model=gateway.model_name,
            model_server=gateway.model_server_name,
            prompt=prompt,
            invocation_id=INVOCATION,
            install_dir=install_dir,
            api=api,
            stream=True,
            offline_env=dict(offline_env or {}),
            offline_args=tuple(offline_args),
        )
        prepared = adapter.prepare(episode)
        base = launch_of(
            prepared.argv,
            files,
            base_url=episode.base_url,
            model=episode.model,
            model_server=episode.model_server,
            prompt=prompt,
            invocation_id=INVOCATION,
        )
        launch = Launch(base.argv, {**base.env, **prepared.env}, base.cwd, base.log)
        exit_code = asyncio.run(supervise(launch))
        bundle = adapter.observations(episode, exit_code)
    calls = read_capture(root / "capture", ROLLOUT, include_payloads=True)["calls"]
    return Activation(episode, exit_code, bundle, calls)
