"""An activation's network log, kept with its rollout's captures.

The harness sandbox logs every route out a harness tried (``network.jsonl`` in the activation
directory), but a run removes activation directories when the rollout closes; the log is
evidence of what the harness did, so it is copied next to the rollout's capture first:
``<captures>/<rollout id>.<invocation id>.network.jsonl``. The copy reads the log as a
regular file only, never through a link, and no more than the sandbox writes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from gym_assets.fileio import atomic_write_bytes
from gym_assets.sandbox.harness_init import LOG_BYTES
from gym_assets.sandbox.harness_sandbox import NETWORK_LOG

NETWORK_LOG_SUFFIX = ".network.jsonl"
_LOG_FULL_LINE = 64  # the ``log_full`` line the sandbox may add past LOG_BYTES


def network_log_path(capture_dir: Path, rollout_id: str, invocation_id: str) -> Path:
    return capture_dir / f"{rollout_id}.{invocation_id}{NETWORK_LOG_SUFFIX}"


def keep_network_log(activation: Path, kept: Path) -> None:
    """Copy the sandboxed activation's network log to ``kept`` (nothing when it has none)."""
    try:
        fd = os.open(activation / NETWORK_LOG, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return
    with os.fdopen(fd, "rb") as log:
        if not stat.S_ISREG(os.fstat(log.fileno()).st_mode):
            return
        data = log.read(LOG_BYTES + _LOG_FULL_LINE)
    atomic_write_bytes(kept, data)
