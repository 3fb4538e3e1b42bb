"""Deliver alerts: the log always, first; then the webhook, if there is one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gym_assets.alerts.alert import CheckAlert, RunFailure, chat_message
from gym_assets.alerts.log import append_alerts
from gym_assets.alerts.webhook import Delivery, Webhook, post_json
from gym_assets.outputs.targets import Roots


@dataclass(frozen=True)
class Delivered:
    log: Path
    webhook: Delivery | None  # None: no webhook configured


def deliver(
    alerts: Sequence[CheckAlert],
    directory: Path,
    roots: Roots,
    webhook: Webhook | None,
    failure: RunFailure | None = None,
) -> Delivered:
    """Log every alert of one run (its failure first, when it failed), then post them to the
    webhook as one message (one bounded wait per run, however many checks failed). A webhook
    failure is returned, not raised, so it can never undo the log lines or fail whoever raised
    the alerts."""
    log = append_alerts(directory, roots, [*([failure] if failure else []), *alerts])
    if webhook is None:
        return Delivered(log, None)
    return Delivered(log, post_json(webhook, chat_message(alerts, failure)))
