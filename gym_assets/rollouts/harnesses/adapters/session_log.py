"""Reading a harness's own session log (JSON Lines) into the pieces of a bundle.

Codex and pi both keep one JSONL file per session. A run that was stopped mid-write can leave a
torn last line, and a harness that failed to start leaves no file at all: both are gaps with the
file's place in the activation directory, never evidence made up in their stead.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gym_assets.fileio import parse_json_bytes
from gym_assets.records.evidence import MODEL_SERVER_TYPE, GapCode
from gym_assets.rollouts.harnesses.adapters.base import CliEpisode
from gym_assets.rollouts.harnesses.adapters.bundles import JsonObject, gap, where


def only_session(
    pattern: str, root: Path, episode: CliEpisode
) -> tuple[Path | None, list[JsonObject]]:
    """The one session file matching ``pattern`` under ``root``; none or several is a gap
    (a fresh home holds exactly one session per activation). Found as ``EpisodeFiles.glob``
    finds it: a link on the way or a tree too large raises ``RefusedFile``."""
    try:
        found = episode.files.glob(root, pattern)
    except FileNotFoundError:
        found = []
    if len(found) == 1:
        return found[0], []
    detail = f"{len(found)} session files match {where(root, episode)}/{pattern}; expected one"
    return None, [gap(GapCode.CONVERSATION_UNAVAILABLE, episode, detail)]


def read_entries(path: Path, episode: CliEpisode) -> tuple[list[JsonObject], list[JsonObject]]:
    """The JSON objects of a JSONL file in order, and a gap for each line that is not one
    (read as ``EpisodeFiles.read`` does: a link or a FIFO raises ``RefusedFile``)."""
    entries: list[JsonObject] = []
    gaps: list[JsonObject] = []
    for number, raw in enumerate(episode.files.read(path).split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            entry = parse_json_bytes(raw)
        except ValueError:
            entry = None
        if isinstance(entry, dict):
            entries.append(entry)
        else:
            detail = f"{where(path, episode)}:{number} is not a JSON object"
            gaps.append(gap(GapCode.CONVERSATION_UNAVAILABLE, episode, detail))
    return entries, gaps


def response_refs(episode: CliEpisode, response_ids: Iterable[Any]) -> list[JsonObject]:
    """References to the calls whose response ids the harness recorded, once each, in order."""
    refs: list[JsonObject] = []
    seen: set[str] = set()
    for response_id in response_ids:
        if isinstance(response_id, str) and response_id.strip() and response_id not in seen:
            seen.add(response_id)
            model_ref = {"type": MODEL_SERVER_TYPE, "name": episode.model_server}
            refs.append({"model_ref": model_ref, "response_id": response_id})
    return refs
