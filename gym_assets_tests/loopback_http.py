"""An HTTP handler served on 127.0.0.1 in a thread, for the tests that need a real server, and
the Chat-Completions-only model server several of them talk to."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """Serve ``handler`` on a free loopback port until the block ends; yields the port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def send_json(handler: BaseHTTPRequestHandler, status: int, body: object) -> None:
    """Answer the handler's request with ``body`` as JSON."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class ChatOnly(BaseHTTPRequestHandler):
    """A model server that speaks only Chat Completions, as llama.cpp's does: every chat
    completion is answered "4" with no usage, anything else 404. A subclass that sets ``gate``
    holds each answer until the event is set (at most ``GATE_TIMEOUT_S``), for tests that need
    calls in flight at a moment they choose."""

    gate: threading.Event | None = None
    GATE_TIMEOUT_S = 600.0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        if not self.path.endswith("/chat/completions"):
            self.send_error(404)
            return
        if self.gate is not None:
            self.gate.wait(self.GATE_TIMEOUT_S)
        message = {"role": "assistant", "content": "4"}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        body = {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "smollm2",
            "choices": [choice],
        }  # fmt: skip
        send_json(self, 200, body)

    def log_message(self, *args: object) -> None:
        pass
