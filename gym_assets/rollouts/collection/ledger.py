"""What earlier attempts left on disk, per ``(task, rollout)``, and what a resume dispatches.

A rollout with a success record is done; one with a terminal failure is done (retrying cannot
help); one with ``max_attempts`` failed attempts is done. Any other rollout is dispatched again
with ``attempt`` = the number of failed attempts so far, so its capture key gains ``-a<N>``.
A rollout killed in flight left no row at all, so it is re-dispatched without using an attempt.
Rows are appended in completion order; once a run has dispatched everything, ``order_logs``
sorts both logs by rollout, so the order of a run's files depends on nothing but its rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from gym_assets.limits import DEFAULT_MAX_ATTEMPTS
from gym_assets.records import keys
from gym_assets.records.keys import ROLLOUT_INDEX, TASK_INDEX
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl, repair_tail, sort_jsonl
from gym_assets.rollouts.collection.planned import Key, Keyed

K = TypeVar("K", bound=Keyed)


@dataclass
class RolloutState:
    succeeded: bool = False
    failed_attempts: int = 0
    terminal: bool = False
    last_failure: dict[str, Any] | None = None


def key_of(row: dict[str, Any]) -> Key | None:
    """The row's ``(task, rollout)``, or None when it names none."""
    task, rollout = row.get(TASK_INDEX), row.get(ROLLOUT_INDEX)
    if isinstance(task, int) and isinstance(rollout, int):
        return task, rollout
    return None


def order_of(row: dict[str, Any]) -> tuple[int, int, int, int]:
    """Where a row goes in a finished run's logs: by ``(task, rollout)``, then attempt; a row
    naming no rollout last. The order does not depend on when each rollout finished, so
    neither the concurrency nor the number of workers changes a run's files."""
    key = key_of(row)
    if key is None:
        return (1, 0, 0, 0)
    attempt = row.get(keys.ATTEMPT_INDEX)
    return (0, *key, attempt if isinstance(attempt, int) else 0)


def order_logs(files: RunFiles) -> None:
    """Sort both logs of a run by rollout (``order_of``), atomically; a log already in order
    is left as it is."""
    for path in (files.records, files.failures):
        sort_jsonl(path, order_of)


@dataclass
class Ledger:
    """Per-rollout state, read from the run's files and kept current while it runs."""

    states: dict[Key, RolloutState] = field(default_factory=dict)
    max_attempts: int = DEFAULT_MAX_ATTEMPTS

    @classmethod
    def read(cls, files: RunFiles, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> Ledger:
        """Repair cut-short last lines, then replay both logs."""
        ledger = cls(max_attempts=max_attempts)
        for path in (files.records, files.failures):
            repair_tail(path)
        for row in read_jsonl(files.records):
            ledger.succeeded(row)
        for row in read_jsonl(files.failures):
            ledger.failed(row)
        return ledger

    def succeeded(self, record: dict[str, Any]) -> None:
        key = key_of(record)
        if key is not None:
            self.states.setdefault(key, RolloutState()).succeeded = True

    def failed(self, row: dict[str, Any]) -> None:
        key = key_of(row)
        if key is None:
            return
        state = self.states.setdefault(key, RolloutState())
        state.failed_attempts += 1
        state.terminal |= row.get(keys.FAILURE_TERMINAL) is True
        state.last_failure = row

    def next_attempt(self, key: Key) -> int | None:
        """The attempt index to dispatch ``key`` with, or None when it is done."""
        state = self.states.get(key)
        if state is None:
            return 0
        if state.succeeded or state.terminal or state.failed_attempts >= self.max_attempts:
            return None
        return state.failed_attempts

    def pending(self, inputs: Iterable[K]) -> list[tuple[K, int]]:
        """The rollouts still to dispatch, in input order, with their attempt index."""
        todo = []
        for item in inputs:
            attempt = self.next_attempt(item.key)
            if attempt is not None:
                todo.append((item, attempt))
        return todo
