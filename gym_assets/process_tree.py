"""The descendants of a process we started, recorded so that none outlives its supervisor.

Harness programs start sessions and process groups of their own, so killing our child's group
is not enough: supervisors record every descendant while the child runs and signal what is
still alive at the end. psutil keeps each process's creation time, so a recycled pid is never
signalled.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterable

import psutil


class Tracked:
    """Every descendant of ``pid`` seen by ``record``, in the order first seen."""

    def __init__(self, pid: int):
        try:
            self._root: psutil.Process | None = psutil.Process(pid)
        except psutil.NoSuchProcess:
            self._root = None
        self._seen: dict[tuple[int, float], psutil.Process] = {}

    def record(self) -> None:
        if self._root is None:
            return
        with contextlib.suppress(psutil.Error):
            for child in self._root.children(recursive=True):
                with contextlib.suppress(psutil.Error):
                    self._seen.setdefault((child.pid, child.create_time()), child)

    def alive(self) -> list[psutil.Process]:
        """The recorded descendants still running, newest first."""
        return [p for p in reversed(self._seen.values()) if alive(p)]


def alive(process: psutil.Process) -> bool:
    """Still the process that was recorded (psutil compares creation times), not a zombie."""
    with contextlib.suppress(psutil.Error):
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    return False


def signal_all(processes: Iterable[psutil.Process], sig: signal.Signals) -> None:
    for process in processes:
        if alive(process):
            with contextlib.suppress(psutil.Error):
                process.send_signal(sig)
