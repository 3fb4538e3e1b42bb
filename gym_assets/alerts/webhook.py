"""POST a JSON body to a webhook: a few attempts, each waited for a bounded time.

A webhook is somebody else's server; it may be down, slow or refusing. Every outcome is a
``Delivery`` the caller reports; nothing here raises for the network. The URL of a chat webhook
is itself the secret (Slack's carries its token in the path), so no outcome ever names it.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RETRIED_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Webhook:
    """Where to POST and how patiently: ``attempts`` tries, each waited for at most
    ``timeout_s`` (connection, request and answer together), ``backoff_s`` doubling between."""

    url: str
    timeout_s: float = 5.0
    attempts: int = 3
    backoff_s: float = 1.0


@dataclass(frozen=True)
class Delivery:
    delivered: bool
    attempts: int
    outcome: str  # "HTTP 200", "HTTP 503", "no answer within 5s", "connection refused", ...


def _no_answer(timeout_s: float) -> str:
    return f"no answer within {timeout_s:g}s"


def _post_once(url: str, data: bytes, timeout_s: float) -> tuple[bool, bool, str]:
    """``(delivered, worth retrying, outcome)`` of one POST."""
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):  # the socket timeout, while connecting
            return False, True, _no_answer(timeout_s)
        text = reason.strerror if isinstance(reason, OSError) and reason.strerror else None
        return False, True, (text or type(reason).__name__).lower()
    except TimeoutError:  # the socket timeout, while reading the answer
        return False, True, _no_answer(timeout_s)
    except OSError as exc:  # a reset connection
        return False, True, (exc.strerror or type(exc).__name__).lower()
    return 200 <= status < 300, status in RETRIED_STATUSES, f"HTTP {status}"


def _bounded(url: str, data: bytes, timeout_s: float) -> tuple[bool, bool, str]:
    """One POST that takes at most ``timeout_s``: the socket timeout bounds each wait, the
    join bounds them together (a server dripping its answer byte by byte is let go)."""
    outcome: list[tuple[bool, bool, str]] = []
    worker = threading.Thread(
        target=lambda: outcome.append(_post_once(url, data, timeout_s)), daemon=True
    )
    worker.start()
    worker.join(timeout_s)
    return outcome[0] if outcome else (False, True, _no_answer(timeout_s))


def post_json(webhook: Webhook, body: Mapping[str, Any]) -> Delivery:
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    attempt, outcome = 0, "not tried"
    for attempt in range(1, max(1, webhook.attempts) + 1):
        delivered, retry, outcome = _bounded(webhook.url, data, webhook.timeout_s)
        if delivered or not retry:
            return Delivery(delivered, attempt, outcome)
        if attempt < webhook.attempts:
            time.sleep(webhook.backoff_s * 2 ** (attempt - 1))
    return Delivery(False, attempt, outcome)
