"""The gateway process's log: one line an event, never a traceback, every line redacted.

uvicorn logs a request that ends in an exception with its whole traceback. When a run ends,
every rollout that hit ``--timeout`` still has a model call waiting upstream, and uvicorn's
shutdown cancels each one: printed as is, that is one traceback per timed-out rollout on the
user's terminal. The gateway process logs through one handler of its own (uvicorn's lines reach
it too, ``log_config=None``); this formatter keeps each event on one line, an exception as its
type and message, and passes the line through the run's redactor like every other.
"""

from __future__ import annotations

import logging
from typing import Any

from gym_assets.redaction import RedactingFormatter


class OneLineFormatter(RedactingFormatter):
    """A record, its exception (``Type: message``) and no stack, on one redacted line."""

    def formatException(self, ei: Any) -> str:  # logging's name
        exc = ei[1]
        if exc is None:
            return ""
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__

    def formatStack(self, stack_info: str) -> str:  # logging's name
        return ""

    def format(self, record: logging.LogRecord) -> str:
        return ": ".join(line for line in super().format(record).splitlines() if line.strip())
