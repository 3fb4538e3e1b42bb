"""Progress on stderr while a run collects: done/total, rollouts per second, failures."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Prints at most one line per ``interval`` seconds, and a last line at ``finish``."""

    def __init__(self, total: int, stream: TextIO | None = None, interval: float = 1.0):
        self.total = total
        self.done = 0
        self.failed = 0
        self._stream = stream if stream is not None else sys.stderr
        self._interval = interval
        self._started = time.monotonic()
        self._last = self._started

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._started

    @property
    def rate(self) -> float:
        elapsed = self.elapsed
        return self.done / elapsed if elapsed > 0 else 0.0

    def tick(self, *, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        now = time.monotonic()
        if now - self._last >= self._interval:
            self._last = now
            self._print()

    def finish(self) -> None:
        self._print()

    def _print(self) -> None:
        percent = 100.0 * self.done / self.total if self.total else 100.0
        print(
            f"rollouts {self.done}/{self.total} ({percent:.0f}%)  {self.rate:.1f}/s  "
            f"failures {self.failed}  {self.elapsed:.1f}s",
            file=self._stream,
            flush=True,
        )
