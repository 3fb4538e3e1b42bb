"""The adapter of ``fake_cli.py``: the smallest adapter that keeps the contract."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gym_assets.rollouts.harnesses.adapters import ADAPTER_MODULES, CliEpisode, Prepared
from gym_assets.rollouts.harnesses.registry import HARNESSES_DIR_ENV

PROGRAM = Path(__file__).with_name("fake_cli.py")


class FakeAdapter:
    name = "fake"
    supports = frozenset({("responses", False)})
    finish_command = None

    def executable(self, install_dir: Path) -> Path:
        return install_dir / "fake_cli.py"

    def prepare(self, episode: CliEpisode) -> Prepared:
        state = episode.files.home / ".fakecli"
        state.mkdir()
        config = {"base_url": episode.base_url, "model": episode.model}
        (state / "config.json").write_text(json.dumps(config))
        argv = (sys.executable, str(self.executable(episode.install_dir)))
        return Prepared((*argv, *episode.offline_args, episode.prompt), dict(episode.offline_env))

    def observations(self, episode: CliEpisode, exit_code: int | None) -> dict[str, Any]:
        lines = (episode.files.home / ".fakecli" / "session.jsonl").read_text().splitlines()
        kept = json.loads(lines[-1])
        user = {"role": "user", "content": kept["prompt"]}
        invocation = {
            "kind": "agent_invocation",
            "invocation_id": episode.invocation_id,
            "status": "completed",
            "conversation": [user, *kept["output"]],
        }
        return {"source": "fake", "records": [invocation], "gaps": []}


ADAPTER = FakeAdapter()

# A registry entry of a cli harness this adapter drives.
ENTRY = {
    "kind": "cli",
    "adapter": "fake",
    "version": "1.2.3",
    "install": {"npm": "fake-cli"},
    "api": "responses",
    "stream": False,
}


def add_uninstalled(configs: Path, harnesses: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Add ``fakecli`` to the registry of ``configs`` with its install root at ``harnesses``,
    where nothing is installed; returns its name."""
    monkeypatch.setitem(ADAPTER_MODULES, "fake", __name__)
    monkeypatch.setenv(HARNESSES_DIR_ENV, str(harnesses))
    registry = configs / "harnesses.yaml"
    document = yaml.safe_load(registry.read_text())
    document["harnesses"]["fakecli"] = ENTRY
    registry.write_text(yaml.safe_dump(document, sort_keys=False))
    return "fakecli"
