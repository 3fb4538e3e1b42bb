"""Warm workers: a sandbox reused task after task, with nothing carried from one to the next."""

from __future__ import annotations

import os
import platform
import threading

import psutil
import pytest

from gym_assets.sandbox import TIMED_OUT, GuestFault, Isolation, Limits
from gym_assets.sandbox.workers import WarmPool, Worker

pytestmark = pytest.mark.slow

# A sandbox is its PID namespace and the start of its PID 1: the kernel hands a freed
# namespace's number to the next new namespace, so the number alone does not tell two apart.
SANDBOX = (
    "os.readlink('/proc/self/ns/pid') + '@' + "
    "open('/proc/1/stat').read().rsplit(')', 1)[1].split()[19]"
)
IDENTITY = f"import os\ndef probe():\n    return {SANDBOX}, os.getuid(), os.getcwd()\n"


@pytest.fixture
def pool(isolation: Isolation):
    if not isolation.warm_workers:
        pytest.skip("warm workers need the sandbox to be started as root")
    pool = WarmPool(isolation, Limits())
    yield pool
    pool.close()


def _run(pool: WarmPool, source: str, *args: object, timeout_s: float = 10) -> object:
    with pool.session() as session:
        session.load(source, timeout_s)
        return session.call("probe", args, {})


def test_tasks_share_a_warm_sandbox_but_each_has_its_own_uid_and_directory(pool) -> None:
    first = _run(pool, IDENTITY)
    second = _run(pool, IDENTITY)
    assert first[0] == second[0]  # the same PID namespace: the sandbox was reused
    assert first[1] != second[1] and 0 not in (first[1], second[1])
    assert first[2] != second[2] and first[2].startswith("/tmp/task-")


LEAVE_TRACES = """
import os, subprocess, sys
def probe(token):
    open('mine.txt', 'w').write(token)
    for path in ('/tmp/shared.txt', '/dev/shm/shared', '/guest/shared'):
        try:
            open(path, 'w').write(token)
        except OSError:
            pass
    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', token])
    return os.getcwd()
"""

FIND_TRACES = """
import os
def probe(token, previous_dir):
    found = []
    for root in ('/tmp', '/dev/shm', previous_dir):
        for base, dirs, files in os.walk(root):
            for name in files:
                try:
                    if token in open(os.path.join(base, name)).read():
                        found.append(os.path.join(base, name))
                except OSError:
                    pass
    for pid in os.listdir('/proc'):
        try:
            if token in open(f'/proc/{pid}/cmdline').read():
                found.append(pid)
        except OSError:
            pass
    return found
"""


def test_what_a_task_leaves_is_gone_before_the_next_task(pool) -> None:
    token = f"gym-trace-{os.getpid()}"
    previous_dir = _run(pool, LEAVE_TRACES, token)
    assert _run(pool, FIND_TRACES, token, previous_dir) == []
    left = [p for p in psutil.process_iter(["cmdline"]) if token in (p.info["cmdline"] or [])]
    assert left == []


def test_a_task_cannot_touch_the_resident_or_the_sandboxs_init(pool) -> None:
    source = (
        "import os, signal\n"
        "def probe():\n"
        "    refused = []\n"
        "    for pid in (1, os.getppid()):\n"
        "        try:\n"
        "            os.kill(pid, signal.SIGKILL)\n"
        "        except PermissionError:\n"
        "            refused.append(pid)\n"
        "    os.kill(-1, signal.SIGKILL)  # everything it may signal: its own processes\n"
        "    return refused, os.getppid()\n"
    )
    refused, resident = _run(pool, source)
    assert refused == [1, resident]
    assert _run(pool, IDENTITY)[2].startswith("/tmp/task-")


ADD_KEYS = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def probe(secret):
    libc.syscall(250, 1, None)  # KEYCTL_JOIN_SESSION_KEYRING: a session keyring of its own
    libc.syscall(250, 8, -4, -3)  # KEYCTL_LINK its uid's keyring into it, to possess its keys
    made = []
    for ring in (-3, -4, -5):  # session, user, user-session
        payload = secret.encode()
        serial = libc.syscall(248, b'user', b'gym-carried', payload, len(payload), ring)
        if serial > 0:
            libc.syscall(250, 5, serial, 0x3F3F3F3F)  # KEYCTL_SETPERM: anyone may read it
            made.append(serial)
    return made
"""

READ_KEYS = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def probe(serials):
    found = [open('/proc/keys').read()]
    payload = ctypes.create_string_buffer(256)
    for serial in serials:
        size = libc.syscall(250, 11, serial, payload, 256)  # KEYCTL_READ
        found.append(payload.raw[: max(size, 0)].decode(errors='replace'))
    return '\\n'.join(found)
"""


def _sandbox_key_owners() -> set[str]:
    """Uids of the sandboxes' range that own keys in the host kernel (``/proc/key-users``
    counts every uid's keys, whoever may read them)."""
    with open("/proc/key-users") as table:
        owners = {line.split(":")[0].strip() for line in table}
    return {uid for uid in owners if 1_000_000_000 <= int(uid) < 1_100_000_000}


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the probe calls add_key by number")
def test_kernel_keys_of_a_task_reach_no_later_task_and_outlive_no_run(isolation, pool) -> None:
    secret = f"gym-key-{os.getpid()}"
    owners_before = _sandbox_key_owners()
    serials = _run(pool, ADD_KEYS, secret)
    assert secret not in _run(pool, READ_KEYS, serials)
    pool.close()
    later_run = WarmPool(isolation, Limits())
    try:
        assert secret not in _run(later_run, READ_KEYS, serials)
    finally:
        later_run.close()
    assert _sandbox_key_owners() - owners_before == set()


def test_a_task_that_leaves_an_ipc_object_costs_the_worker_not_the_next_task(pool) -> None:
    source = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def probe():\n"
        "    return libc.mq_open(b'/gym-left', os.O_CREAT | os.O_RDWR, 0o600, None)\n"
    )
    before = _run(pool, IDENTITY)[0]
    assert _run(pool, source) >= 0
    after = _run(pool, IDENTITY)[0]
    assert after != before  # the dirty sandbox was discarded; a new one serves


def test_a_dirty_worker_is_never_handed_out_whatever_the_order(pool, monkeypatch) -> None:
    """The race the suite seemed to lose under load, ordered by hand: while one task's worker is
    being judged (its resident has answered ``dirty``, the pool has not yet heard), another
    task is dispatched, and a third comes after the judgement. Neither lands in the dirty
    sandbox."""
    judged, dispatched = threading.Event(), threading.Event()
    end_task = Worker.end_task

    def judge_then_wait(worker: Worker) -> None:
        end_task(worker)
        judged.set()
        assert dispatched.wait(60)  # a hang guard only

    dirty = (
        "import ctypes, os\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def probe():\n"
        "    libc.mq_open(b'/gym-dirty', os.O_CREAT | os.O_RDWR, 0o600, None)\n"
        f"    return {SANDBOX}\n"
    )
    monkeypatch.setattr(Worker, "end_task", judge_then_wait)
    result: list[object] = []
    first = threading.Thread(target=lambda: result.append(_run(pool, dirty)))
    first.start()
    assert judged.wait(60)
    monkeypatch.setattr(Worker, "end_task", end_task)
    during = _run(pool, IDENTITY)[0]
    dispatched.set()
    first.join(60)
    after = _run(pool, IDENTITY)[0]
    assert result and result[0] not in (during, after)


def test_a_task_that_overruns_its_deadline_leaves_a_reusable_worker(pool) -> None:
    with pool.session() as session:
        with pytest.raises(GuestFault) as fault:
            session.load("while True:\n    pass\n", timeout_s=1)
        assert fault.value.reason == TIMED_OUT
    before = _run(pool, IDENTITY)[0]
    assert _run(pool, IDENTITY)[0] == before


def test_closing_the_pool_ends_its_sandboxes(pool) -> None:
    namespace = _run(pool, IDENTITY)[0]
    pool.close()
    inside = []
    for process in psutil.process_iter():
        try:
            if os.readlink(f"/proc/{process.pid}/ns/pid") == namespace:
                inside.append(process.pid)
        except OSError:
            pass
    assert inside == []
