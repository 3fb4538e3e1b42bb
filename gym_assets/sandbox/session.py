"""The trusted side of one candidate's guest: load it, call its functions, end it.

Everything a guest says is untrusted: each answer is one bounded line of plain data, read
against a deadline. Failures are split by whose fault they are:

* ``SandboxStartError``: no guest came up (our machinery; the sample is masked);
* ``GuestFault``: after the candidate's code arrived, the guest died, overran the deadline,
  sent junk or a value that is not plain data (the candidate's doing: a wrong answer);
* ``CandidateRaised``: a candidate function raised an exception (an ordinary wrong answer).

``Channel`` is the protocol over the two pipes of one candidate; where the guest lives is the
subclass's business: ``GuestSession`` starts a single-use sandbox for it, ``workers`` forks it
in a warm sandbox.
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
from pathlib import Path
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


def read_before(deadline: float, fd: int) -> bytes:
    """One read from ``fd``, or ``GuestFault(TIMED_OUT)`` once ``deadline`` has passed."""
    readable = select.poll()
    readable.register(fd, select.POLLIN)
    remaining = deadline - time.monotonic()
    if remaining <= 0 or not readable.poll(remaining * 1000):
        raise GuestFault(TIMED_OUT)
    return os.read(fd, 1 << 16)


class Channel:
    """The protocol with one candidate's guest over two pipes (ours to close)."""

    def __init__(self, to_guest: int, from_guest: int) -> None:
        self.fault: GuestFault | None = None
        self._to_guest: int | None = to_guest
        self._from_guest = from_guest
        self._buffer = b""
        self._deadline = time.monotonic() + STARTUP_SECONDS

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def greet(self) -> None:
        """Wait for the guest's greeting; anything else means it did not start."""
        try:
            ready = self._receive()
        except GuestFault as exc:
            raise SandboxStartError(f"the sandbox did not start: {exc.reason}") from None
        if ready != {"ready": True}:
            raise SandboxStartError("the sandbox did not start: unexpected greeting")

    def load(self, source: str, timeout_s: float) -> None:
        """Run the candidate's source in the guest; the deadline starts now for every call."""
        self._deadline = time.monotonic() + timeout_s
        self._answer({"load": source}, "loaded")

    def call(self, name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        """The plain-data value of ``name(*args, **kwargs)`` in the guest."""
        return self._answer({"call": name, "args": list(args), "kwargs": dict(kwargs)}, "value")

    def close(self) -> None:
        """End the guest and everything it started (the subclass's way)."""
        raise NotImplementedError

    def _close_pipes(self) -> None:
        if self._to_guest is not None:
            with contextlib.suppress(OSError):
                os.close(self._to_guest)
            self._to_guest = None
        with contextlib.suppress(OSError):
            os.close(self._from_guest)

    def _end_of_input(self) -> None:
        """Tell an intact guest there is nothing more (it then exits)."""
        if self._to_guest is not None:
            os.close(self._to_guest)
            self._to_guest = None

    def _death(self) -> str:
        """How the guest ended, as far as the subclass can tell."""
        return "closed its channel"

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
        try:
            data = memoryview(plain_data.encode(request).encode("ascii") + b"\n")
        except plain_data.NotPlainData as exc:
            raise GuestFault(f"could not be sent its input ({exc})") from None
        if self._to_guest is None:
            raise GuestFault(self._death())
        try:
            while data:
                data = data[os.write(self._to_guest, data) :]
        except BrokenPipeError:
            raise GuestFault(self._death()) from None

    def _receive(self) -> Any:
        while b"\n" not in self._buffer:
            if len(self._buffer) > plain_data.MAX_MESSAGE_BYTES:
                limit = plain_data.MAX_MESSAGE_BYTES
                raise GuestFault(f"sent more than {limit} bytes in one answer")
            chunk = read_before(self._deadline, self._from_guest)
            if not chunk:
                raise GuestFault(self._death())
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            return plain_data.decode(line)
        except plain_data.NotPlainData as exc:
            raise GuestFault(f"sent a malformed answer ({exc})") from None


class SandboxProcess:
    """A started sandbox (bubblewrap, or a plain process for ``none``) and how to end it.

    Under bubblewrap, killing the sandbox's PID 1 makes the kernel kill and reap every process
    in its PID namespace before PID 1 itself exits, and ``kill`` waits for that exit (its
    pidfd turns readable): so once ``kill`` returns, nothing started inside is left.
    """

    def __init__(
        self, argv: list[str], *, isolation: Isolation, pass_fds: tuple[int, ...] = ()
    ) -> None:
        self._init: int | None = None  # a pidfd of the sandbox's PID 1 (bubblewrap)
        info_read, info_write = os.pipe() if isolation.kind == "bwrap" else (None, None)
        if info_write is not None:
            argv = [argv[0], "--info-fd", str(info_write), *argv[1:]]
        try:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={},
                cwd="/",
                start_new_session=True,
                pass_fds=pass_fds if info_write is None else (*pass_fds, info_write),
            )
        except OSError as exc:
            raise SandboxStartError(f"cannot start the sandbox: {exc}") from exc
        finally:
            if info_write is not None:
                os.close(info_write)
        if info_read is not None:
            try:
                self._init = self._open_init(info_read)
            except GuestFault as exc:
                self.kill()
                raise SandboxStartError(f"the sandbox did not start: {exc.reason}") from None
            finally:
                os.close(info_read)

    def _open_init(self, info_fd: int) -> int:
        """A pidfd of the sandbox's PID 1, from bubblewrap's ``--info-fd`` report."""
        deadline = time.monotonic() + STARTUP_SECONDS
        report = b""
        while (chunk := read_before(deadline, info_fd)) and len(report) <= 4096:
            report += chunk
        try:
            return os.pidfd_open(int(json.loads(report)["child-pid"]))
        except (ValueError, KeyError, TypeError, OSError):
            raise GuestFault(self.ending()) from None

    def ending(self) -> str:
        """How the sandbox ended (waiting a moment for it), for a fault's reason."""
        try:
            code = self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "closed its channel"
        return f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"

    def kill(self) -> None:
        if self._init is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(self._init, signal.SIGKILL)
            exited = select.poll()
            exited.register(self._init, select.POLLIN)
            exited.poll(REAP_SECONDS * 1000)
            os.close(self._init)
            self._init = None
            # bubblewrap reaps its PID 1 and exits; killing it first would leave a zombie
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=REAP_SECONDS)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class GuestSession(Channel):
    """A single-use sandbox holding one guest: started here, killed on ``close``."""

    def __init__(self, isolation: Isolation, limits: Limits, workdir: Path | None = None) -> None:
        self.isolation = isolation
        self._sandbox = SandboxProcess(isolation.command(limits, workdir), isolation=isolation)
        process = self._sandbox.process
        assert process.stdin is not None and process.stdout is not None
        super().__init__(os.dup(process.stdin.fileno()), os.dup(process.stdout.fileno()))
        try:
            self.greet()
        except SandboxStartError:
            self.close()
            raise

    def close(self) -> None:
        """An intact guest is asked to exit (end of input) and given a moment; then the whole
        sandbox is killed."""
        if self.fault is None and self._sandbox.process.poll() is None:
            self._end_of_input()
            process = self._sandbox.process
            if process.stdin is not None:
                with contextlib.suppress(OSError):
                    process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=EXIT_GRACE_SECONDS)
        self._sandbox.kill()
        self._close_pipes()

    def _death(self) -> str:
        return self._sandbox.ending()
