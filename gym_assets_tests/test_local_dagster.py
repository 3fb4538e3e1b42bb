"""A throwaway instance's home, and programs stopped with everything in their process group."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gym_assets.local_dagster import INSTANCE_DIR, LocalHome, start_program, stop_program
from gym_assets.process_tree import Tracked

REPO = Path(__file__).resolve().parents[1]

# Starts a child that ignores SIGINT, says so, then waits (SIGINT ends it unless ``ignore``).
LEADER = """
import signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); time.sleep(60)"])
if sys.argv[1] == "ignore":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
print(child.pid, flush=True)
time.sleep(60)
"""


def test_a_home_holds_dagster_yaml_and_a_copy_of_the_configs(tmp_path: Path) -> None:
    local = LocalHome.create(tmp_path / "x", REPO)
    assert (local.home / "dagster.yaml").read_bytes() == (
        REPO / INSTANCE_DIR / "dagster.yaml"
    ).read_bytes()
    assert sorted(p.name for p in local.workspace.configs.iterdir()) == sorted(
        p.name for p in (REPO / "configs").iterdir()
    )
    assert not local.workspace.data.exists()  # made by the first product
    assert local.environ() == {
        "DAGSTER_HOME": str(local.home),
        "GYM_ASSETS_CONFIGS": str(local.workspace.configs),
        "GYM_ASSETS_DATA_ROOT": str(local.workspace.data),
    }


def _started(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[bytes], psutil.Process]:
    log = tmp_path / f"{mode}.log"
    process = start_program([sys.executable, "-c", LEADER, mode], log, cwd=tmp_path)
    deadline = time.monotonic() + 30
    while not log.read_text().strip():
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    return process, psutil.Process(int(log.read_text().split()[0]))


@pytest.mark.slow  # starts processes
@pytest.mark.parametrize("mode", ["stop", "ignore"])
def test_stopping_a_program_ends_its_whole_group(tmp_path: Path, mode: str) -> None:
    """SIGINT ends a leader that heeds it (``stop``); one that ignores it gets SIGKILL after the
    timeout (``ignore``); either way its child, which ignores SIGINT, does not outlive it."""
    process, child = _started(tmp_path, mode)
    tracked = Tracked(process.pid)
    tracked.record()

    stop_program(process, timeout=2)

    assert process.returncode == (-signal.SIGINT if mode == "stop" else -signal.SIGKILL)
    child.wait(timeout=10)  # reaped by init once killed
    assert tracked.alive() == []
