"""``witness.json`` as the one shared record of an episode, updated after every event.

Two independent observers write the witness of one episode: the scripted provider behind the
model gateway (attempts, tool calls, results seen, violations, finished) and the conformance
resources server (seeds, verifications). They may live on different threads or in different
processes, so the file itself is the shared state: each update takes an exclusive lock, reads
the witness, changes it and rewrites it atomically (``witness.write_witness``). A reader (the
inspection after the episode, or a person watching a slow harness) always sees a whole witness
as of the last event.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock

from gym_assets.conformance.witness import (
    Witness,
    load_witness,
    witness_from_json,
    write_witness,
)

T = TypeVar("T")
WitnessData = dict[str, Any]


class WitnessLog:
    """Locked read-change-write access to one episode's ``witness.json``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = FileLock(str(self.path) + ".lock")

    def create(self) -> None:
        """Start an empty witness."""
        with self._lock:
            write_witness(self.path, Witness())

    def read(self) -> Witness:
        witness = load_witness(self.path)
        if witness is None:
            raise FileNotFoundError(f"{self.path}: the episode's witness was never created")
        return witness

    def update(self, change: Callable[[WitnessData], T]) -> T:
        """Apply ``change`` to the witness's JSON form and rewrite it; returns its result.

        The changed form is parsed back through the witness model before it is written, so a
        bad change fails here instead of leaving a witness the checks would refuse.
        """
        with self._lock:
            data = self.read().to_json()
            result = change(data)
            write_witness(self.path, witness_from_json(data, source=str(self.path)))
            return result
