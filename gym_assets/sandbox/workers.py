"""Warm workers: one bubblewrap sandbox serves many candidates, one after the other.

Starting an interpreter inside a fresh sandbox costs most of a HumanEval verification. A worker
starts it once (its resident, ``zygote.py``) and gets a forked task process per candidate, under
a fresh uid, with pipes of its own; after each task the resident kills and reaps everything the
task started, removes its directory and checks that nothing is left (see ``zygote.py`` for what
cannot carry over and why). A resident that answers anything but ``clean``, or does not answer
in time, has its whole sandbox killed; the next task gets a new worker.

A worker is handed out only on its resident's ``clean`` answer to the end of its previous task,
by construction rather than by the callers' care: the verdict is kept on the worker itself,
``start_task`` refuses a worker without one, and the pool takes back only a clean worker. No
ordering of threads, and no delay, can put a dirty sandbox in front of the next task.

Warm workers need a sandbox started as root (a fresh uid per task); otherwise the pool hands out
single-use sandboxes (``GuestSession``), which need nothing carried over by construction.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Protocol

from gym_assets.sandbox.isolation import Isolation, Limits
from gym_assets.sandbox.session import (
    STARTUP_SECONDS,
    Channel,
    GuestFault,
    GuestSession,
    SandboxProcess,
    SandboxStartError,
    read_before,
)

END_SECONDS = 10.0  # the resident's clean-up after a task: kill, reap, check, remove


class GuestPool(Protocol):
    isolation: Isolation

    def session(self) -> contextlib.AbstractContextManager[Channel]:
        """A channel to a fresh guest for one candidate, ended when the block exits."""
        ...

    def close(self) -> None: ...


class SingleUsePool:
    """A new sandbox for every candidate."""

    def __init__(self, isolation: Isolation, limits: Limits) -> None:
        self.isolation = isolation
        self.limits = limits

    def session(self) -> contextlib.AbstractContextManager[Channel]:
        return GuestSession(self.isolation, self.limits)

    def close(self) -> None:
        """Nothing outlives its session."""


class Worker:
    """One warm sandbox and the control socket to its resident."""

    def __init__(self, isolation: Isolation, limits: Limits) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._sandbox = SandboxProcess(
                isolation.worker_command(limits, theirs.fileno()),
                isolation=isolation,
                pass_fds=(theirs.fileno(),),
            )
        finally:
            theirs.close()
        self._control = ours
        self._clean = False  # until the resident says it is ready
        try:
            self._expect(b"ready", STARTUP_SECONDS)
        except GuestFault as exc:
            self.kill()
            raise SandboxStartError(f"the worker sandbox did not start: {exc.reason}") from None
        self._clean = True

    @property
    def clean(self) -> bool:
        """Ready, or its resident answered ``clean`` to the end of its last task."""
        return self._clean

    def start_task(self) -> tuple[int, int]:
        """Pipes to a new task process: ``(to_guest, from_guest)``; the worker is not clean
        again until ``end_task`` says so."""
        if not self._clean:
            raise SandboxStartError("the worker has no clean verdict on its last task")
        self._clean = False
        to_read, to_guest = os.pipe()
        from_guest, from_write = os.pipe()
        try:
            socket.send_fds(self._control, [b"task"], [to_read, from_write])
            self._expect(b"started", STARTUP_SECONDS)
        except (OSError, GuestFault):
            os.close(to_guest)
            os.close(from_guest)
            raise SandboxStartError("the worker sandbox did not start a task") from None
        finally:
            os.close(to_read)
            os.close(from_write)
        return to_guest, from_guest

    def end_task(self) -> None:
        """Have the resident clean up after the task; the worker is clean again only if it
        answers ``clean`` in time."""
        try:
            self._control.sendall(b"end")
            self._expect(b"clean", END_SECONDS)
        except (OSError, GuestFault):
            return
        self._clean = True

    def kill(self) -> None:
        self._clean = False
        self._sandbox.kill()
        self._control.close()

    def _expect(self, message: bytes, seconds: float) -> None:
        answer = read_before(time.monotonic() + seconds, self._control.fileno())
        if answer != message:
            raise GuestFault(f"the resident said {answer[:80]!r}, not {message!r}")


class TaskSession(Channel):
    """One candidate in a task process of a warm worker."""

    def __init__(self, pool: WarmPool, worker: Worker) -> None:
        self._pool = pool
        self._worker: Worker | None = worker
        super().__init__(*worker.start_task())

    def close(self) -> None:
        if self._worker is None:
            return
        worker, self._worker = self._worker, None
        self._end_of_input()
        worker.end_task()
        self._pool.release(worker)
        self._close_pipes()

    def discard(self) -> None:
        """The task never started properly: the worker is not to be trusted again."""
        if self._worker is not None:
            self._worker.kill()
            self._worker = None
        self._close_pipes()


def _kill_all(workers: list[Worker]) -> None:
    while workers:
        workers.pop().kill()


class WarmPool:
    """Warm workers for one set of limits, made as needed and reused while they stay clean."""

    def __init__(self, isolation: Isolation, limits: Limits) -> None:
        self.isolation = isolation
        self.limits = limits
        self._idle: list[Worker] = []
        self._lock = threading.Lock()
        self._closer = weakref.finalize(self, _kill_all, self._idle)

    @contextlib.contextmanager
    def session(self) -> Iterator[Channel]:
        session = self._open()
        try:
            yield session
        finally:
            session.close()

    def release(self, worker: Worker) -> None:
        """Keep ``worker`` for the next task if it is clean, else end its sandbox."""
        with self._lock:
            if worker.clean and self._closer.alive:
                self._idle.append(worker)
                return
        worker.kill()

    def close(self) -> None:
        with self._lock:
            self._closer()

    def _open(self) -> TaskSession:
        """A task on an idle worker, else on a new one; an idle worker that fails to start a
        task is discarded (a new worker's failure is ours to report)."""
        while True:
            with self._lock:
                worker = self._idle.pop() if self._idle else None
            fresh = worker is None
            worker = worker or Worker(self.isolation, self.limits)
            try:
                session = TaskSession(self, worker)
            except SandboxStartError:
                worker.kill()
                if fresh:
                    raise
                continue
            try:
                session.greet()
            except SandboxStartError:
                session.discard()
                if fresh:
                    raise
                continue
            return session
