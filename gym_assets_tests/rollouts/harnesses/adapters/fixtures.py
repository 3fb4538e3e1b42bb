"""Episodes over recorded harness artifacts: the fixtures are real stores and reports the
harnesses wrote against a scripted gateway (paths scrubbed to /ACTIVATION, ports to PORT),
kept as SQL text (one schema per harness, the rows of each run) so a reviewer can read what
the adapter is given."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

from gym_assets.records.evidence import AgentObservations
from gym_assets.rollouts.harnesses.adapters.base import Api, CliEpisode
from gym_assets_tests.rollouts.harnesses.adapters import cli_episode

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROMPT = 'def f():\n    """Say "hi"."""\nWrite 391 to answer.txt'
# Scripts of the real-program tests (the recorded runs took the same steps).
TOOLS_THEN_TEXT = [{"tool": "echo 391 > answer.txt"}, {"tool": "exit 7"}, {"text": "Done."}]
TOOL_THEN_400 = [{"tool": "echo 391 > answer.txt"}, {"error": 400, "times": 9}, {"text": "Done."}]


def episode(root: Path, *, api: Api = "chat", stream: bool = True) -> CliEpisode:
    """An activation with offline settings the adapter must pass on to the harness."""
    return cli_episode.episode(
        root,
        "",
        api=api,
        stream=stream,
        prompt=PROMPT,
        offline_env={"OFFLINE_FLAG": "1"},
        offline_args=("--offline-arg",),
    )


def restore_store(run: Path, database: Path) -> None:
    """The SQLite store the harness left in ``run``, rebuilt from its schema and rows."""
    database.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(database)
    try:
        for sql in (run.parent / "schema.sql", run / "rows.sql"):
            connection.executescript(sql.read_text(encoding="utf-8"))
    finally:
        connection.close()


def restore_file(recorded: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(recorded, target)


def invocation_and_tools(bundle: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The bundle's one invocation and its tool records, once it validated as command_agent
    will validate it."""
    AgentObservations.model_validate(bundle)
    (invocation,) = [r for r in bundle["records"] if r["kind"] == "agent_invocation"]
    return invocation, [r for r in bundle["records"] if r["kind"] == "tool_call"]
