"""The trusted side of one guest: start it, load a candidate, call its functions, kill it.

A guest is single-use: one candidate, then it is killed, so nothing can carry over from one
task to the next. Everything the guest says is untrusted: each answer is one bounded line of
plain data, read against a deadline. Failures are split by whose fault they are:

* ``SandboxStartError``: no guest came up (our machinery; the sample is masked);
* ``GuestFault``: after the candidate's code arrived, the guest died, overran the deadline,
  sent junk or a value that is not plain data (the candidate's doing: a wrong answer);
* ``CandidateRaised``: a candidate function raised an exception (an ordinary wrong answer).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from typing import Any

from gym_assets.sandbox import plain_data
from gym_assets.sandbox.isolation import Isolation, Limits

STARTUP_SECONDS = 30.0  # a loaded 2-core machine can take seconds to start an interpreter
EXIT_GRACE_SECONDS = 0.5
REAP_SECONDS = 30.0  # the kernel reaping a killed sandbox; only a wedged kernel takes long
TIMED_OUT = "timed out"


class SandboxStartError(RuntimeError):
    """The guest did not start or did not say it was ready."""


class GuestFault(Exception):
    """The candidate broke the guest or the protocol; ``reason`` says how."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CandidateRaised(Exception):
    """A candidate function raised; the message is the guest's description of it."""


class GuestSession:
    """One running guest. Use as a context manager; ``close`` kills the whole sandbox."""

    def __init__(self, isolation: Isolation, limits: Limits) -> None:
        self.isolation = isolation
        self.fault: GuestFault | None = None
        self._buffer = b""
        self._deadline = time.monotonic() + STARTUP_SECONDS
        self._sandbox_init: int | None = None  # a pidfd of the sandbox's PID 1 (bubblewrap)
        info_read, info_write = os.pipe() if isolation.kind == "bwrap" else (None, None)
        try:
            self._process = subprocess.Popen(
                isolation.command(limits, info_fd=info_write),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={},
                cwd="/",
                start_new_session=True,
                pass_fds=() if info_write is None else (info_write,),
            )
        except OSError as exc:
            raise SandboxStartError(f"cannot start the sandbox: {exc}") from exc
        finally:
            if info_write is not None:
                os.close(info_write)
        try:
            if info_read is not None:
                self._sandbox_init = self._open_sandbox_init(info_read)
            ready = self._receive()
        except GuestFault as exc:
            self.close()
            raise SandboxStartError(f"the sandbox did not start: {exc.reason}") from None
        finally:
            if info_read is not None:
                os.close(info_read)
        if ready != {"ready": True}:
            self.close()
            raise SandboxStartError("the sandbox did not start: unexpected greeting")

    def __enter__(self) -> GuestSession:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def load(self, source: str, timeout_s: float) -> None:
        """Run the candidate's source in the guest; the deadline starts now for every call."""
        self._deadline = time.monotonic() + timeout_s
        self._answer({"load": source}, "loaded")

    def call(self, name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """The plain-data value of ``name(*args, **kwargs)`` in the guest."""
        return self._answer({"call": name, "args": list(args), "kwargs": dict(kwargs)}, "value")

    def close(self) -> None:
        """End the guest: an intact one is asked to exit (end of input), then all is killed.

        Killing the sandbox's PID 1 makes the kernel kill and reap every process in its PID
        namespace before PID 1 itself exits, and ``close`` waits for that exit (its pidfd turns
        readable): so once ``close`` returns, nothing the candidate started is left.
        """
        if self.fault is None and self._process.poll() is None and self._process.stdin:
            with contextlib.suppress(OSError):
                self._process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=EXIT_GRACE_SECONDS)
        if self._sandbox_init is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._sandbox_init, signal.SIGKILL)
            # readable once PID 1 has exited, which is after the kernel reaped its namespace
            exited = select.poll()
            exited.register(self._sandbox_init, select.POLLIN)
            exited.poll(REAP_SECONDS * 1000)
            os.close(self._sandbox_init)
            self._sandbox_init = None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _open_sandbox_init(self, info_fd: int) -> int:
        """A pidfd of the sandbox's PID 1, from bubblewrap's ``--info-fd`` report."""
        report = b""
        readable = select.poll()
        readable.register(info_fd, select.POLLIN)
        while chunk := self._read_before_deadline(info_fd, readable):
            report += chunk
            if len(report) > 4096:
                break
        try:
            return os.pidfd_open(int(json.loads(report)["child-pid"]))
        except (ValueError, KeyError, TypeError, OSError):
            raise GuestFault(self._death()) from None

    def _read_before_deadline(self, fd: int, readable: select.poll) -> bytes:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0 or not readable.poll(remaining * 1000):
            raise GuestFault(TIMED_OUT)
        return os.read(fd, 1 << 16)

    def _answer(self, request: dict[str, Any], key: str) -> Any:
        if self.fault is not None:
            raise self.fault
        try:
            self._send(request)
            answer = self._receive()
        except GuestFault as fault:
            self.fault = fault
            self.close()
            raise
        if type(answer) is dict and len(answer) == 1:
            if key in answer:
                return answer[key]
            if type(answer.get("raised")) is str:
                raise CandidateRaised(answer["raised"])
            if type(answer.get("unplain")) is str:
                reason = f"returned a value that is not plain data: {answer['unplain']}"
                self.fault = GuestFault(reason)
                raise self.fault
        self.fault = GuestFault("answered outside the protocol")
        self.close()
        raise self.fault

    def _send(self, request: dict[str, Any]) -> None:
        """Send a request; one that cannot cross (a program or an argument too large, built
        from what the candidate wrote or returned) is the candidate's fault like any other."""
        stdin = self._process.stdin
        assert stdin is not None
        try:
            line = plain_data.encode(request).encode("ascii") + b"\n"
        except plain_data.NotPlainData as exc:
            raise GuestFault(f"could not be sent its input ({exc})") from None
        try:
            stdin.write(line)
            stdin.flush()
        except (BrokenPipeError, ValueError):  # ValueError: the pipe is already closed
            raise GuestFault(self._death()) from None

    def _receive(self) -> Any:
        stdout = self._process.stdout
        assert stdout is not None
        fd = stdout.fileno()
        readable = select.poll()
        readable.register(fd, select.POLLIN)
        while b"\n" not in self._buffer:
            if len(self._buffer) > plain_data.MAX_MESSAGE_BYTES:
                limit = plain_data.MAX_MESSAGE_BYTES
                raise GuestFault(f"sent more than {limit} bytes in one answer")
            chunk = self._read_before_deadline(fd, readable)
            if not chunk:
                raise GuestFault(self._death())
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            return plain_data.decode(line)
        except plain_data.NotPlainData as exc:
            raise GuestFault(f"sent a malformed answer ({exc})") from None

    def _death(self) -> str:
        try:
            code = self._process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "closed its channel"
        if code < 0:
            return f"was killed by signal {-code}"
        return f"exited with code {code}"
