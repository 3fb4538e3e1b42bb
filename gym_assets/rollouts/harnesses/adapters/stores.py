"""Reading the stores a harness kept (a SQLite database, a JSON report) and shaping the bundle.

opencode and hermes keep their sessions in SQLite under the activation's home. The adapters
open them read-only after the program exited: nothing is checkpointed, migrated or repaired on
the harness's behalf, and a store that is missing or unreadable is a gap naming its place in
the activation directory (never a host path), with no evidence made up in its stead.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gym_assets.fileio import parse_json_bytes
from gym_assets.rollouts.harnesses.adapters.base import CliEpisode
from gym_assets.rollouts.harnesses.adapters.bundles import JsonObject, where

QUERY_SECONDS = 10.0
_JOURNALS = ("-wal", "-shm", "-journal")  # what SQLite opens beside a database by name


class StoreUnreadable(Exception):
    """A store the harness should have written is missing or cannot be read; the message is
    the gap's detail."""


def query(path: Path, episode: CliEpisode, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
    """The rows of ``sql`` over the SQLite database at ``path``, opened read-only once it and
    the journals SQLite opens beside it are regular files reached without a link (else
    ``RefusedFile``), and interrupted past ``QUERY_SECONDS`` (a store is the harness's data:
    a view in it could compute without end)."""
    for name in (path, *(path.with_name(path.name + suffix) for suffix in _JOURNALS)):
        try:
            episode.files.check(name)
        except FileNotFoundError:
            if name == path:
                raise StoreUnreadable(f"the harness left no {where(path, episode)}") from None
    deadline = time.monotonic() + QUERY_SECONDS
    try:
        connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            connection.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
            return connection.execute(sql, tuple(args)).fetchall()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise StoreUnreadable(f"{where(path, episode)} cannot be read ({exc})") from None


def json_value(text: Any) -> Any:
    """``text`` (a store's column: str, bytes or anything else) parsed as JSON nested no
    deeper than ``MAX_NESTING``, or None when it is not that."""
    try:
        raw = text.encode() if isinstance(text, str) else text
        return parse_json_bytes(raw) if isinstance(raw, bytes) else None
    except ValueError:
        return None


def json_object(text: Any) -> JsonObject | None:
    """``text`` parsed as a JSON object, or None when it is not one."""
    value = json_value(text)
    return value if isinstance(value, dict) else None


def read_json_object(path: Path, episode: CliEpisode) -> JsonObject:
    """A JSON object file the harness wrote (read as ``EpisodeFiles.read`` does)."""
    try:
        text = episode.files.read(path)
    except FileNotFoundError:
        raise StoreUnreadable(f"the harness left no {where(path, episode)}") from None
    except OSError as exc:
        raise StoreUnreadable(f"{where(path, episode)} cannot be read ({exc})") from None
    value = json_object(text)
    if value is None:
        raise StoreUnreadable(f"{where(path, episode)} is not a JSON object")
    return value


def user_message(text: str) -> JsonObject:
    return {"role": "user", "content": text}


def assistant_message(text: str) -> JsonObject:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def function_call(call_id: str, name: str, arguments: str) -> JsonObject:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def function_call_output(call_id: str, output: Any) -> JsonObject:
    return {"type": "function_call_output", "call_id": call_id, "output": output}
