"""A command harness's ``--version`` runs in the harness sandbox (docs/harnesses.md): a hostile
program asked for its version reaches nothing of the host, and a process asks only once."""

from __future__ import annotations

import os
import socket
import sys
import uuid
from pathlib import Path

import pytest

from gym_assets.errors import UserError
from gym_assets.rollouts.episodes import version_probe
from gym_assets.rollouts.harnesses.registry import Harness, runtime_version
from gym_assets.sandbox import SandboxPolicy
from gym_assets.suite.run import pinned

HOSTILE = Path(__file__).parents[1] / "harness_programs" / "host_probe_agent.py"
CANARY = "gym-canary-key-4d1f0a9b7c"


def _running(tag: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if tag.encode() in cmdline.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            continue
    return found


def test_a_hostile_version_probe_reaches_nothing_of_the_host(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GYM_CANARY_API_KEY", CANARY)
    host = tmp_path / "host"
    host.mkdir()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    tag = f"gym-left-behind-{uuid.uuid4().hex}"
    port = str(listener.getsockname()[1])
    harness = Harness(
        name="hostile", kind="command", command=(sys.executable, str(HOSTILE), str(host), port, tag)
    )
    try:
        assert runtime_version(harness, SandboxPolicy()) == "host_probe 1.0"
        assert list(host.iterdir()) == []  # no marker, so no environment read either
        with pytest.raises(BlockingIOError):
            listener.accept()  # no connection reached the host's loopback
        assert _running(tag) == []  # nothing it started outlived the probe
    finally:
        listener.close()
        for pid in _running(tag):
            os.kill(pid, 9)


def test_a_process_asks_each_harness_once(tmp_path, monkeypatch) -> None:
    asked = []
    run = version_probe.run_offline

    async def counted(argv, isolation, **settings):
        asked.append(argv)
        return await run(argv, isolation, **settings)

    monkeypatch.setattr(version_probe, "run_offline", counted)
    program = tmp_path / "prog.py"
    program.write_text(f"print('once {uuid.uuid4().hex}')")
    harness = Harness(name="p", kind="command", command=(sys.executable, str(program)))
    sandbox = SandboxPolicy()
    first = runtime_version(harness, sandbox)
    assert runtime_version(harness, sandbox) == first and len(asked) == 1
    # a conformance run hands the answer to its episodes, which then ask no more
    assert pinned(harness, first).version == first


def test_a_probe_that_hangs_is_stopped_and_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(version_probe, "VERSION_TIMEOUT_SECONDS", 1.0)
    program = tmp_path / "hang.py"
    program.write_text(f"import time  # {uuid.uuid4().hex}\ntime.sleep(60)")
    harness = Harness(name="h", kind="command", command=(sys.executable, str(program)))
    with pytest.raises(UserError, match=r"--version` failed \(no answer in 1 s\)"):
        runtime_version(harness, SandboxPolicy())
