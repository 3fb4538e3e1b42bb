"""The alert log: ``<data_root>/alerts/check_alerts.jsonl``, one line per failed check and one
per failed run.

The log is written before any webhook is tried, so a webhook that is down never loses an
alert. Lines are appended and synced under the product's lock (``gym_assets.outputs``): the
directory is an ``alerts`` product, and nothing else in it is touched.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from gym_assets.alerts.alert import Alert
from gym_assets.errors import reported
from gym_assets.fileio import json_line
from gym_assets.outputs.claims import claimed_dir
from gym_assets.outputs.markers import ALERTS
from gym_assets.outputs.targets import Roots, Target

ALERT_LOG = "check_alerts.jsonl"


def append_alerts(directory: Path, roots: Roots, alerts: Sequence[Alert]) -> Path:
    """Append one line per alert to the log in ``directory``; returns the log's path."""
    target = Target.of(directory, ALERTS, roots)
    path = target.path / ALERT_LOG
    with claimed_dir(target), reported(path), path.open("ab") as handle:
        handle.write(b"".join(json_line(alert.record()) for alert in alerts))
        handle.flush()
        os.fsync(handle.fileno())
    return path
