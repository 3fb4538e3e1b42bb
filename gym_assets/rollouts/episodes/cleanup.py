"""A LIFO cleanup stack with one shared deadline.

Participants are registered for closing *before* they are seeded, so a lost seed reply still
gets closed. Entries are idempotent: an entry runs until its callback succeeds once, so a failed
early close is retried during the final unwind, and registering an entry again gives it one more
bounded attempt (the post-verification retry) without touching an already computed result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

log = logging.getLogger(__name__)

Callback = Callable[[], Awaitable[object]]
T = TypeVar("T")


class CleanupEntry:
    """One registered close; ``active`` until its callback has succeeded once."""

    def __init__(self, stack: CleanupStack, name: str, callback: Callback) -> None:
        self._stack = stack
        self._lock = asyncio.Lock()
        self.name = name
        self.callback = callback
        self.active = True

    async def close(self) -> None:
        """Run the entry now (an early close at a protocol boundary); raise if it fails."""
        async with asyncio.timeout(self._stack.timeout_seconds):
            await self._run()

    def retry_later(self) -> None:
        """Register this entry once more: one extra bounded attempt during the final unwind."""
        self._stack.entries.append(self)

    async def _run(self) -> None:
        async with self._lock:
            if not self.active:
                return
            await self.callback()
            self.active = False


class CleanupStack:
    """Closes registered participants in reverse order under one total timeout."""

    def __init__(self, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self.entries: list[CleanupEntry] = []
        self.errors: list[str] = []

    def register(self, name: str, callback: Callback) -> CleanupEntry:
        entry = CleanupEntry(self, name, callback)
        self.entries.append(entry)
        return entry

    async def aclose(self) -> list[str]:
        """Run every still-active entry, newest first; failures are recorded, never raised."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_seconds
        while self.entries:
            entry = self.entries.pop()
            if not entry.active:
                continue
            remaining = deadline - loop.time()
            if remaining <= 0:
                self._record(f"cleanup timed out before {entry.name}")
                break
            try:
                async with asyncio.timeout(remaining):  # inline: no task per entry
                    await entry._run()
            except TimeoutError:
                self._record(f"cleanup timed out during {entry.name}")
                break
            except Exception as exc:  # a failed close must not stop the others
                self._record(f"{entry.name} failed: {type(exc).__name__}: {exc}")
        return list(self.errors)

    def _record(self, message: str) -> None:
        log.warning("episode cleanup: %s", message)
        self.errors.append(message)


async def run_shielded(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` to completion even if the caller is cancelled meanwhile.

    A cancellation that arrives while waiting is re-raised once the work has finished, so
    cleanup of a cancelled episode still completes before the cancellation propagates.
    """
    task = asyncio.ensure_future(awaitable)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return result
