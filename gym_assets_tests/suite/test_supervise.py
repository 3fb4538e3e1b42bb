"""Episode supervision: exit codes, the deadline, and descendants that left the process group."""

from __future__ import annotations

import sys
from pathlib import Path

import psutil

from gym_assets.suite.supervise import episode_environment, supervise

# A worker that starts a child in a session of its own (as harness CLIs do), says its pid, and
# hangs: killing the worker's process group alone would leave the child running.
ESCAPING_WORKER = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                         start_new_session=True)
print(child.pid, flush=True)
time.sleep(600)
"""


def test_exit_codes_are_reported_and_output_goes_to_the_log(tmp_path: Path) -> None:
    log = tmp_path / "episode.log"
    code = "import sys; print('hello'); sys.exit(3)"
    execution = supervise([sys.executable, "-c", code], log_path=log, deadline_s=30)
    assert (execution.returncode, execution.timed_out) == (3, False)
    assert execution.failed
    assert log.read_text() == "hello\n"


def test_a_timed_out_episode_and_its_escaped_descendants_are_gone(tmp_path: Path) -> None:
    log = tmp_path / "episode.log"
    execution = supervise([sys.executable, "-c", ESCAPING_WORKER], log_path=log, deadline_s=1)
    assert execution.timed_out and execution.failed
    child = int(log.read_text().split()[0])
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE


def test_the_episode_environment_keeps_no_secrets() -> None:
    environ = {"PATH": "/bin", "OPENAI_API_KEY": "sk-secret", "GYM_ASSETS_CONFIGS": "c"}
    assert episode_environment(environ) == {"PATH": "/bin", "GYM_ASSETS_CONFIGS": "c"}
