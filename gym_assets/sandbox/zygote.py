"""The resident of a warm worker sandbox: ``python -I -S zygote.py '<limits JSON>' <control fd>``.

A worker is one bubblewrap sandbox reused for many tasks; this program is its only permanent
process. It has imported everything a task needs once, and forks one task process per task, so
a task costs a fork instead of an interpreter start. It never runs candidate code itself.

Nothing may carry over from one task to the next, so each task process:

* runs under a fresh uid of its own, without capabilities (the resident keeps only what it needs
  to hand out uids and clean up: setuid, setgid, chown, kill, dac_override, fowner): it cannot
  signal, trace or read the resident; it may not touch kernel keys at all (``guest.run`` installs
  the system-call filter of ``syscall_filter.py``: keys would outlive the task in the host
  kernel), and the session keyring it inherits was made read-only before this program started;
* talks to the trusted side over two pipes made for this task alone (received over the control
  socket), never over the control socket;
* may write only in its own directory (``/tmp`` is not writable for it).

When the task ends (``end``), every process but the sandbox's PID 1 and the resident is killed
and reaped, the task directory is removed, and the resident answers ``clean`` — or ``dirty``
when anything survived (a process, a System V or POSIX IPC object), and the trusted side then
discards the whole sandbox. Messages on the control socket (SOCK_SEQPACKET): ``task`` carrying
the two pipe ends, answered ``started``; ``end``, answered ``clean`` or ``dirty: <why>``.
"""

import contextlib
import json
import os
import shutil
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import guest

_TASK_UIDS = (1_000_000_000, 1_100_000_000)  # the same range single-use sandboxes draw from
_REAP_SECONDS = 5.0
_IPC_TABLES = ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem")
_MQUEUE = "/dev/mqueue"


def _fresh_uid() -> int:
    span = _TASK_UIDS[1] - _TASK_UIDS[0]
    return _TASK_UIDS[0] + int.from_bytes(os.urandom(4), "big") % span


def _start(fds: list[int], limits: dict) -> tuple[int, str]:
    """Fork the task process on the two pipe ends; ``(pid, its directory)``."""
    uid = _fresh_uid()
    workdir = f"/tmp/task-{uid}"
    os.mkdir(workdir, 0o700)
    os.chown(workdir, uid, uid)
    pid = os.fork()
    if pid == 0:  # the task process: drop everything, then serve the candidate
        try:
            os.setsid()
            os.dup2(fds[0], 0)
            os.dup2(fds[1], 1)
            os.closerange(3, os.sysconf("SC_OPEN_MAX"))
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)  # leaves no capability behind
            os.chdir(workdir)
            guest.run(limits)
        finally:
            os._exit(0)
    for fd in fds:
        os.close(fd)
    return pid, workdir


def _others() -> list[int]:
    mine = {1, os.getpid()}
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) not in mine]


def _ipc_left() -> bool:
    for path in _IPC_TABLES:
        with open(path) as table:
            if len(table.read().splitlines()) > 1:  # a header, then one line an object
                return True
    return bool(os.listdir(_MQUEUE))


def _end(pid: int, workdir: str) -> bytes:
    """Kill and reap everything the task started, check, and remove its directory."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)  # every process but PID 1 and this one
    os.waitpid(pid, 0)
    deadline = time.monotonic() + _REAP_SECONDS
    while _others():  # orphans are PID 1's to reap
        if time.monotonic() > deadline:
            return b"dirty: processes survived the end of the task"
        time.sleep(0.001)
    if _ipc_left():
        return b"dirty: the task left IPC objects behind"
    try:
        shutil.rmtree(workdir)
    except OSError as exc:
        return f"dirty: cannot remove the task directory ({exc.strerror})".encode()
    return b"clean"


def main() -> None:
    limits = json.loads(sys.argv[1])
    control = socket.socket(fileno=int(sys.argv[2]))
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    control.sendall(b"ready")
    task: tuple[int, str] | None = None
    while True:
        message, fds, _flags, _address = socket.recv_fds(control, 64, 2)
        if not message:
            return
        if message == b"task" and task is None and len(fds) == 2:
            task = _start(fds, limits)
            control.sendall(b"started")
        elif message == b"end" and task is not None:
            verdict = _end(*task)
            task = None
            control.sendall(verdict)
        else:
            for fd in fds:
                os.close(fd)
            control.sendall(b"dirty: out of order")


if __name__ == "__main__":
    main()
