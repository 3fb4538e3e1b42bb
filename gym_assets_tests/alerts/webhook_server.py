"""A webhook receiver on 127.0.0.1 for the alert tests: answers with a scripted list of statuses
(the last one repeated), optionally after a delay, and keeps every JSON body it received."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

from gym_assets.local_dagster import free_port
from gym_assets_tests.loopback_http import serving


class Receiver:
    def __init__(self, statuses: list[int], delay_s: float = 0.0):
        self.statuses, self.delay_s = statuses, delay_s
        self.bodies: list[dict[str, Any]] = []
        self.requests = 0
        self.url = ""


@contextmanager
def webhook_server(statuses: list[int] | None = None, delay_s: float = 0.0) -> Iterator[Receiver]:
    receiver = Receiver(statuses or [200], delay_s)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            index = min(receiver.requests, len(receiver.statuses) - 1)
            receiver.requests += 1
            time.sleep(receiver.delay_s)
            status = receiver.statuses[index]
            if 200 <= status < 300:
                receiver.bodies.append(json.loads(body))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(Handler) as port:
        receiver.url = f"http://127.0.0.1:{port}/hooks/secret-token"
        yield receiver


def closed_port_url() -> str:
    """A loopback URL nothing listens on (the port was just free; connecting is refused)."""
    return f"http://127.0.0.1:{free_port()}/hooks/secret-token"
