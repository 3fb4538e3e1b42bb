"""What an alert says (a failed asset check; a failed run), as the log stores it and as a chat
message reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

KIND = "asset_check_failed"
RUN_KIND = "run_failed"
MAX_CHAT_LINES = 20
MAX_ERROR_CHARS = 2000
"""A run's error is cut here in the log and the message: a traceback's head says what failed,
and the run's page in the UI keeps all of it."""


class Alert(Protocol):
    def record(self) -> dict[str, Any]: ...


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


@dataclass(frozen=True)
class RunFailure:
    """A run that ended FAILURE: its job, partition (None for an unpartitioned run), the error
    that failed it (cut at ``MAX_ERROR_CHARS``) and when it failed (ISO 8601, UTC)."""

    job: str
    partition: str | None
    error: str
    run_id: str
    run_url: str
    failed_at: str

    def __post_init__(self) -> None:
        if len(self.error) > MAX_ERROR_CHARS:
            object.__setattr__(self, "error", self.error[: MAX_ERROR_CHARS - 1] + "…")

    @property
    def target(self) -> str:
        return self.job if self.partition is None else f"{self.job}[{self.partition}]"

    def record(self) -> dict[str, Any]:
        return {"kind": RUN_KIND, **asdict(self)}


def chat_message(alerts: Sequence[CheckAlert], failure: RunFailure | None = None) -> dict[str, str]:
    """One Slack-compatible incoming-webhook body for one run: ``text`` in Slack's mrkdwn (a
    run link and, for a failed run, its error's first line; then a line per failed check);
    tools that accept ``{"text": ...}`` read it as plain text. Long lists are cut: the alert log
    has every line."""
    shown = [f"• {alert.chat_line()}" for alert in alerts[:MAX_CHAT_LINES]]
    if len(alerts) > MAX_CHAT_LINES:
        shown.append(f"… and {len(alerts) - MAX_CHAT_LINES} more in the alert log")
    count = "1 asset check" if len(alerts) == 1 else f"{len(alerts)} asset checks"
    if failure is not None:
        link = f"<{failure.run_url}|run {failure.run_id[:8]}>"
        error = failure.error.strip().splitlines()[0] if failure.error.strip() else "no error"
        head = f"{link} ({_escape(failure.target)}) failed: {_escape(error)}"
        if alerts:
            shown.insert(0, f"{count} failed in it:")
        return {"text": "\n".join([head, *shown])}
    first = alerts[0]
    head = f"{count} failed in <{first.run_url}|run {first.run_id[:8]}> ({_escape(first.job)})"
    return {"text": "\n".join([head, *shown])}


def _escape(text: str) -> str:
    """Slack reads ``<``, ``>`` and ``&`` as markup; a reason must not turn into a link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
