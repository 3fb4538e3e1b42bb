"""What the guest can and cannot do inside bubblewrap, and how a session ends."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from gym_assets.sandbox import (
    TIMED_OUT,
    CandidateRaised,
    GuestFault,
    GuestSession,
    Isolation,
    Limits,
    SandboxPolicy,
    SandboxStartError,
    SandboxUnavailable,
    find_isolation,
)
from gym_assets.sandbox import session as session_module
from gym_assets_tests.filesystems import readable_by_others

DEFAULT_LIMITS = Limits()


def _probe(
    isolation: Isolation, source: str, *args: object, limits: Limits = DEFAULT_LIMITS
) -> object:
    with GuestSession(isolation, limits) as session:
        session.load(source, timeout_s=10)
        return session.call("probe", args, {})


def test_the_guest_sees_only_its_own_processes_and_no_environment(isolation) -> None:
    source = (
        "import os\n"
        "def probe():\n"
        "    pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
        "    return os.getpid(), pids, dict(os.environ), os.getuid()\n"
    )
    pid, pids, environ, uid = _probe(isolation, source)  # type: ignore[misc]
    assert pid <= 3 and pids == list(range(1, len(pids) + 1)) and len(pids) <= 3
    assert os.getpid() not in pids or os.getpid() <= 3
    assert set(environ) <= {"LC_CTYPE", "PWD"}
    assert uid != 0


def test_the_guest_reaches_no_network_not_even_the_hosts_loopback(isolation) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(0)
        port = listener.getsockname()[1]
        source = (
            "import socket\n"
            "def probe(port):\n"
            "    try:\n"
            "        socket.create_connection(('127.0.0.1', port), timeout=2).sendall(b'hi')\n"
            "    except OSError as exc:\n"
            "        return type(exc).__name__\n"
            "    return 'connected'\n"
        )
        assert _probe(isolation, source, port) == "ConnectionRefusedError"
        with pytest.raises(BlockingIOError):
            listener.accept()


def test_the_system_is_read_only_and_host_files_are_out_of_sight(isolation, tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2")
    source = (
        "import os\n"
        "def probe(paths):\n"
        "    seen = {p: os.path.exists(p) for p in paths}\n"
        "    try:\n"
        "        open('/usr/evil', 'w')\n"
        "        writable = True\n"
        "    except OSError:\n"
        "        writable = False\n"
        "    open('/tmp/mine', 'w').write('ok')\n"
        "    return seen, writable, os.getcwd(), sorted(os.listdir('/tmp'))\n"
    )
    paths = [str(secret), str(Path.cwd()), "/etc/passwd", "/root/.ssh", "/work"]
    seen, writable, cwd, tmp = _probe(isolation, source, paths)  # type: ignore[misc]
    assert seen == dict.fromkeys(paths, False)
    assert not writable and cwd == "/tmp" and tmp == ["mine"]


def test_each_guest_starts_with_an_empty_private_tmp(isolation) -> None:
    write = "def probe():\n    open('/tmp/left-behind', 'w').write('x')\n    return 1\n"
    _probe(isolation, write)
    assert _probe(isolation, "import os\ndef probe():\n    return os.listdir('/tmp')\n") == []


def test_the_guests_limits_are_set_before_the_candidate_runs(isolation) -> None:
    source = (
        "import resource\n"
        "def probe():\n"
        "    names = ('RLIMIT_CPU', 'RLIMIT_AS', 'RLIMIT_FSIZE', 'RLIMIT_NPROC', 'RLIMIT_NOFILE')\n"
        "    return [resource.getrlimit(getattr(resource, n)) for n in names]\n"
    )
    limits = Limits(cpu_seconds=7, memory_bytes=300 << 20, file_bytes=1 << 20, processes=3)
    got = _probe(isolation, source, limits=limits)
    expected = [7, 300 << 20, 1 << 20, 3, limits.open_files]
    assert got == [(value, value) for value in expected]


def test_forking_stops_at_the_process_limit(isolation) -> None:
    source = (
        "import os, time\n"
        "def probe():\n"
        "    children = 0\n"
        "    try:\n"
        "        for _ in range(50):\n"
        "            if os.fork() == 0:\n"
        "                time.sleep(60)\n"
        "                os._exit(0)\n"
        "            children += 1\n"
        "    except OSError:\n"
        "        pass\n"
        "    return children\n"
    )
    # the guest itself counts, and so does bubblewrap's PID 1 when it shares the uid (non-root)
    assert _probe(isolation, source, limits=Limits(processes=4)) in (2, 3)


@pytest.mark.parametrize("grace", [session_module.EXIT_GRACE_SECONDS, 0.0], ids=["exit", "kill"])
def test_closing_a_session_leaves_no_process_behind(isolation, monkeypatch, grace) -> None:
    """Also when the guest is killed rather than let exit: the kernel reaps the namespace
    asynchronously, so ``close`` must wait for it (this raced before it did)."""
    monkeypatch.setattr(session_module, "EXIT_GRACE_SECONDS", grace)
    token = f"gym-orphan-{os.getpid()}"
    source = (
        "import os, subprocess, sys\n"
        "def probe(token):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        sleeper = [sys.executable, '-c', 'import time; time.sleep(600)', token]\n"
        "        os.execv(sys.executable, sleeper)\n"
        "    return 1\n"
    )
    for _ in range(10):
        assert _probe(isolation, source, token) == 1
        left = [p for p in psutil.process_iter(["cmdline"]) if token in (p.info["cmdline"] or [])]
        assert left == []


def test_a_candidate_that_loops_forever_times_out(isolation) -> None:
    with GuestSession(isolation, Limits()) as session:
        with pytest.raises(GuestFault) as fault:
            session.load("while True:\n    pass\n", timeout_s=1)
        assert fault.value.reason == TIMED_OUT
        with pytest.raises(GuestFault):  # a faulted guest answers nothing more
            session.call("probe", (), {})


def test_exceptions_of_the_candidate_arrive_as_candidate_raised(isolation) -> None:
    with GuestSession(isolation, Limits()) as session:
        session.load("def probe(x):\n    return 1 // x\n", timeout_s=5)
        with pytest.raises(CandidateRaised, match="ZeroDivisionError"):
            session.call("probe", (0,), {})
        assert session.call("probe", (1,), {}) == 1  # the guest is still usable


def test_a_sandbox_that_cannot_start_is_our_failure_not_the_candidates() -> None:
    broken = Isolation("bwrap", bwrap="/nonexistent/bwrap")
    with pytest.raises(SandboxStartError):
        GuestSession(broken, Limits())


def test_without_bubblewrap_verification_is_refused_unless_allowed(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="--allow-unsandboxed"):
        find_isolation(allow_unsandboxed=False)
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        SandboxPolicy().isolation()
    policy = SandboxPolicy(allow_unsandboxed=True)
    assert policy.isolation().kind == "none"
    assert _probe(policy.isolation(), "def probe(x):\n    return [x, (x,)]\n", 2) == [2, (2,)]


def test_the_guest_holds_none_of_the_run_sessions_kernel_keys(tmp_path) -> None:
    """A run started from a login session has a session keyring; the guest must not possess
    it. The run here is a child that joins a keyring holding a canary key first."""
    script = tmp_path / "run.py"
    script.write_text(
        "from gym_assets.sandbox import SandboxPolicy, Limits, GuestSession\n"
        "with GuestSession(SandboxPolicy().isolation(), Limits()) as session:\n"
        "    session.load('def probe():\\n    return open(\"/proc/keys\").read()\\n', 10)\n"
        "    print(session.call('probe', (), {}))\n"
    )
    add_and_run = (
        f"keyctl add user gym-canary-key hunter2 @s >/dev/null && {sys.executable} {script}"
    )
    seen = subprocess.run(
        ["keyctl", "session", "-", "sh", "-c", add_and_run],  # the run's own session keyring
        capture_output=True, text=True, check=True, cwd=Path.cwd(),
    ).stdout  # fmt: skip
    assert "_ses" in seen  # the guest did read keys: its own, new session keyring
    assert "gym-canary-key" not in seen


SYSTEM_PYTHON = Path("/usr/bin/python3")
REPO = Path(__file__).resolve().parents[2]
UNPRIVILEGED_PROBE = """
import os
def probe():
    try:
        open('/dev/shm/hoard', 'w')
    except OSError as exc:
        return [os.getpid(), dict(os.environ), exc.strerror]
    return [os.getpid(), dict(os.environ), 'written']
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
@pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason="no system python3 for an unprivileged run")
@pytest.mark.skipif(
    not readable_by_others(REPO), reason="the checkout is not readable by an unprivileged user"
)
def test_run_as_a_user_who_is_not_root_the_sandbox_adds_a_user_namespace() -> None:
    """The package's sandbox side is stdlib-only, so the system interpreter can drive it as
    ``nobody``: bubblewrap then runs unprivileged, with a user namespace. The guest owns
    ``/dev`` there, so it is read-only: an unsized tmpfs (``/dev/shm``) would hold memory that
    no rlimit counts."""
    script = (
        f"import json, sys\nsys.path.insert(0, {str(REPO)!r})\n"
        "from gym_assets.sandbox import SandboxPolicy, Limits, GuestSession\n"
        "isolation = SandboxPolicy().isolation()\n"
        "assert isolation.kind == 'bwrap' and isolation.setpriv is None, isolation\n"
        f"source = {UNPRIVILEGED_PROBE!r}\n"
        "with GuestSession(isolation, Limits()) as session:\n"
        "    session.load(source, 10)\n"
        "    print(json.dumps(session.call('probe', (), {})))\n"
    )
    done = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
         "env", "-i", "PATH=/usr/bin:/bin", str(SYSTEM_PYTHON), "-"],
        input=script, capture_output=True, text=True, timeout=120, cwd="/",
    )  # fmt: skip
    if "Permission denied" in done.stderr:
        pytest.skip(f"the checkout is not readable by nobody: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stderr
    pid, environ, shared_memory = json.loads(done.stdout)
    assert pid <= 3 and set(environ) <= {"LC_CTYPE", "PWD"}
    assert shared_memory == "Read-only file system"
