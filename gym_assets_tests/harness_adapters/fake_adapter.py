"""The adapter of ``fake_cli.py``: the smallest adapter that keeps the contract."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from gym_assets.harness_adapters import CliEpisode, Prepared

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
