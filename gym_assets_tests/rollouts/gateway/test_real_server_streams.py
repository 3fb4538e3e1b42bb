"""Streams as real servers end them: llama.cpp's server drops the connection right after
``data: [DONE]`` without closing the chunked body, and sends no usage chunk."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from openai import OpenAI

from gym_assets.rollouts.gateway import OpenAIUpstream, read_capture
from gym_assets.rollouts.gateway.translation import TranslatingUpstream
from gym_assets_tests.loopback_http import serving
from gym_assets_tests.rollouts.gateway.conftest import capture_lines

KEY_ENV = "GYM_ASSETS_TEST_UPSTREAM_KEY"
_HEAD = b'{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":'
EVENTS = (
    b"data: " + _HEAD + b'[{"index":0,"delta":{"role":"assistant","content":"4"}}]}\n\n',
    b"data: " + _HEAD + b'[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
)


def _abrupt(done: bytes) -> type[BaseHTTPRequestHandler]:
    """A chat server whose stream ends with ``done`` and then a dropped connection (no
    zero-length chunk: the client's HTTP layer calls the body incomplete)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for event in (*EVENTS, done):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
            self.close_connection = True

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@pytest.mark.parametrize("done", [b"data: [DONE]\n\n", b"data: [DONE]\n"], ids=["event", "bare"])
def test_a_stream_dropped_after_done_is_a_complete_answer_without_usage(
    done: bytes,
    start_gateway,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with serving(_abrupt(done)) as port:
        front = start_gateway(OpenAIUpstream(f"http://127.0.0.1:{port}/v1", KEY_ENV, timeout=5))
        client = OpenAI(base_url=front.url_for("real-1"), api_key="dummy", max_retries=0)
        body = {"model": "m", "messages": [{"role": "user", "content": "2+2?"}]}
        chunks = list(client.chat.completions.create(**body, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "4"
    [line] = capture_lines(tmp_path / "capture", "real-1")
    assert (line["status_code"], line["error_category"]) == (200, None)
    assert line["response"]["choices"][0]["finish_reason"] == "stop"
    [call] = read_capture(tmp_path / "capture", "real-1")["calls"]
    assert (call["tokens_in"], call["tokens_out"], call["tokens_total"]) == (None, None, None)
    assert "stream broke" not in caplog.text


@pytest.mark.parametrize(
    ("done", "category"),
    [(b"data: [DONE]\n", None), (b"", "stream_truncated")],
    ids=["done", "cut"],
)
def test_a_responses_agent_reads_such_a_stream_through_translation(
    done: bytes,
    category: str | None,
    start_gateway,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with serving(_abrupt(done)) as port:
        server = OpenAIUpstream(f"http://127.0.0.1:{port}/v1", KEY_ENV, timeout=5)
        front = start_gateway(TranslatingUpstream(server, "chat"))
        client = OpenAI(base_url=front.url_for("real-2"), api_key="dummy", max_retries=0)
        if category is None:
            with client.responses.stream(model="m", input="2+2?") as events:
                answer = events.get_final_response()
            assert (answer.output_text, answer.usage, answer.status) == ("4", None, "completed")
        else:  # the text came as it was sent; the stream then ends in an error event
            events = list(client.responses.create(model="m", input="2+2?", stream=True))
            assert [e.delta for e in events if e.type == "response.output_text.delta"] == ["4"]
            assert events[-1].type == "error" and "stream_truncated" in events[-1].message
    [line] = capture_lines(tmp_path / "capture", "real-2")
    assert (line["status_code"], line["error_category"]) == (200, category)
    assert line["upstream"]["error_category"] == category
    assert line["upstream"]["request"]["stream_options"] == {"include_usage": True}
    assert line["upstream"]["response"]["choices"][0]["message"]["content"] == "4"
