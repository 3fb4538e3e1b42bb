"""``alert_sink``: where failed-check alerts go and how long a webhook is waited for."""

import os

import dagster as dg
from pydantic import PrivateAttr

from gym_assets.alerts.webhook import Webhook

WEBHOOK_ENV = "GYM_ASSETS_ALERT_WEBHOOK"
UI_URL_ENV = "GYM_ASSETS_UI_URL"
"""Where the UI answers: ``make ui PORT=…`` exports it, so the run links follow the port."""
DEFAULT_UI_URL = "http://127.0.0.1:3000"


class AlertSink(dg.ConfigurableResource):
    """Every failed check is appended to `<data_root>/alerts/check_alerts.jsonl`. When the
    variable named by `webhook_url_env` is set, its URL (a Slack incoming webhook or anything
    that takes `{"text": ...}`) also gets one message per run: `attempts` tries of at most
    `timeout_s` each. The URL is read from the environment at each tick and never enters
    config, logs or the alert log (a chat webhook's URL is its secret). `ui_url` is where the
    Dagster UI answers, for the run links; unset, it is `$GYM_ASSETS_UI_URL` (which `make ui`
    sets from its port), else http://127.0.0.1:3000. Once the webhook has failed all its
    attempts in a tick, the rest of the tick only logs, so a tick stays far inside the sensor's
    time limit."""

    # Dagster shows this class's docstring as the resource's description: it is markdown, one
    # paragraph (an indented line after a blank one would render as code). Dagster sets the
    # resource up afresh for each sensor tick, which is what scopes `_unreachable` to a tick.

    webhook_url_env: str | None = WEBHOOK_ENV
    timeout_s: float = 5.0
    attempts: int = 3
    backoff_s: float = 1.0
    ui_url: str | None = None
    _unreachable: bool = PrivateAttr(default=False)

    def webhook(self) -> Webhook | None:
        url = os.environ.get(self.webhook_url_env) if self.webhook_url_env else None
        if not url:
            return None
        return Webhook(url, self.timeout_s, self.attempts, self.backoff_s)

    @property
    def unreachable(self) -> bool:
        """The webhook failed all its attempts earlier in this tick."""
        return self._unreachable

    def mark_unreachable(self) -> None:
        self._unreachable = True

    def run_url(self, run_id: str) -> str:
        base = self.ui_url or os.environ.get(UI_URL_ENV) or DEFAULT_UI_URL
        return f"{base.rstrip('/')}/runs/{run_id}"
