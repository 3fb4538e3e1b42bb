"""A webhook receiver on 127.0.0.1 for the alert tests: answers with a scripted list of statuses
(the last one repeated), optionally after a delay, and keeps every JSON body it received."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/secret-token"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


def closed_port_url() -> str:
    """A loopback URL nothing listens on (the port was just free; connecting is refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/hooks/secret-token"
