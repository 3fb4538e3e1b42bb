"""The pieces every adapter's ``observations`` shapes, whatever the harness left behind (a
session log, a SQLite store, a JSON report): gaps, activation-relative paths, the bundle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gym_assets.records.evidence import GapCode
from gym_assets.rollouts.harnesses.adapters.base import CliEpisode

JsonObject = dict[str, Any]


def gap(code: GapCode, episode: CliEpisode, detail: str) -> JsonObject:
    return {"code": code.value, "invocation_id": episode.invocation_id, "detail": detail}


def where(path: Path, episode: CliEpisode) -> str:
    """A path as it appears inside the activation directory (reports carry no host paths)."""
    try:
        return str(path.relative_to(episode.files.root))
    except ValueError:
        return path.name


def bundle(
    source: str,
    invocation: JsonObject | None,
    tools: list[JsonObject],
    gaps: list[JsonObject],
) -> JsonObject:
    """The ``ng_agent_observations`` bundle: the invocation (when the harness left one) and
    the tools it ran. With no invocation the bundle holds only gaps, and ``command_agent``
    fails the activation as one that left nothing to grade."""
    records = [] if invocation is None else [{"kind": "agent_invocation", **invocation}]
    records += [{"kind": "tool_call", **tool} for tool in tools]
    return {"source": source, "records": records, "gaps": gaps}
