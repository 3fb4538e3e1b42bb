"""Activations for adapter tests: a ``CliEpisode`` in a temporary directory, with a harness's
recorded session file put where the harness would have written it."""

from __future__ import annotations

import shutil
from pathlib import Path

from gym_assets.records.evidence import AgentObservations
from gym_assets.rollouts.episodes.launch import EpisodeFiles
from gym_assets.rollouts.harnesses.adapters import Adapter, Api, CliEpisode

FIXTURES = Path(__file__).resolve().parent / "fixtures"
# The prompt of the recorded sessions (fixtures/README.md says how they were made).
PROMPT = "Compute 17*23 and write only the number to answer.txt"
# The conversation of a recorded run with two tool calls and a final answer.
TOOL_RUN_ITEMS = [
    "message",
    "function_call",
    "function_call_output",
    "function_call",
    "function_call_output",
    "message",
]


def episode(
    root: Path,
    name: str,
    *,
    api: Api = "responses",
    stream: bool = True,
    prompt: str = PROMPT,
    offline_env: dict[str, str] | None = None,
    offline_args: tuple[str, ...] = (),
) -> CliEpisode:
    return CliEpisode(
        files=EpisodeFiles(root / "activation").create(),
        base_url="http://127.0.0.1:9/ng-rollout/r-1/invocation/root/v1",
        model="policy",
        model_server="policy_model",
        prompt=prompt,
        invocation_id="root",
        install_dir=root / "install" / name,
        api=api,
        stream=stream,
        offline_env=offline_env or {},
        offline_args=offline_args,
    )


def place(fixture: str, destination: Path) -> Path:
    """Copy ``fixtures/<fixture>`` to ``destination`` (a session file's place in the home)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FIXTURES / fixture, destination)
    return destination


def observe(
    root: Path, adapter: Adapter, fixture: str, session: str, exit_code: int | None
) -> dict:
    """The adapter's bundle (validated) for an activation that left ``fixtures/<fixture>`` at
    ``home/<session>``."""
    ep = episode(root, adapter.name)
    place(fixture, ep.files.home / session)
    bundle = adapter.observations(ep, exit_code)
    return AgentObservations.model_validate(bundle).model_dump(mode="json")


def records(bundle: dict, kind: str) -> list[dict]:
    return [r for r in bundle["records"] if r["kind"] == kind]
