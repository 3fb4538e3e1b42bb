"""One failed asset check, as the log stores it and as a chat message reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

KIND = "asset_check_failed"
MAX_CHAT_LINES = 20


@dataclass(frozen=True)
class CheckAlert:
    """A check that failed in a run. ``partition`` is None only for an unpartitioned check;
    ``evaluated_at`` is the evaluation's own time (ISO 8601, UTC), so a replayed alert keeps it."""

    asset: str
    partition: str | None
    check: str
    severity: str
    reason: str
    run_id: str
    run_url: str
    job: str
    evaluated_at: str

    @property
    def target(self) -> str:
        return self.asset if self.partition is None else f"{self.asset}[{self.partition}]"

    def record(self) -> dict[str, Any]:
        return {"kind": KIND, **asdict(self)}

    def chat_line(self) -> str:
        return (
            f"{self.severity}: `{_escape(self.check)}` failed on `{_escape(self.target)}`: "
            f"{_escape(self.reason)}"
        )


def chat_message(alerts: Sequence[CheckAlert]) -> dict[str, str]:
    """One Slack-compatible incoming-webhook body for the failed checks of one run: ``text``
    in Slack's mrkdwn (a run link, then a line per check); tools that accept ``{"text": ...}``
    read it as plain text. Long lists are cut: the alert log has every line."""
    first = alerts[0]
    shown = [f"• {alert.chat_line()}" for alert in alerts[:MAX_CHAT_LINES]]
    if len(alerts) > MAX_CHAT_LINES:
        shown.append(f"… and {len(alerts) - MAX_CHAT_LINES} more in the alert log")
    count = "1 asset check" if len(alerts) == 1 else f"{len(alerts)} asset checks"
    head = f"{count} failed in <{first.run_url}|run {first.run_id[:8]}> ({_escape(first.job)})"
    return {"text": "\n".join([head, *shown])}


def _escape(text: str) -> str:
    """Slack reads ``<``, ``>`` and ``&`` as markup; a reason must not turn into a link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
