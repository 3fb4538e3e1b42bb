"""A run's secrets reach none of its files and none of its output (docs/rollouts.md): a model
server that echoes the API key, in an answer, in an error or in a malformed header the gateway
logs, leaves it in no record, failure, capture or report and in nothing the command printed
(the gateway process's log included); a streamed answer reaches the agent redacted, a key split
across chunks too; and what the harness sandbox logged stays with the run."""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx2
import pytest

from gym_assets.cli import main
from gym_assets.redaction import REDACTED, Redactor
from gym_assets.rollouts.collection.files import RunFiles, read_jsonl
from gym_assets.rollouts.gateway import ModelGateway, ModelRequest, UpstreamReply
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.gateway.upstreams import OpenAIUpstream
from gym_assets_tests.loopback_http import send_json, serving
from gym_assets_tests.rollouts.collection.conftest import REPO

KEY = "sk-echoed-3f9a1c77d2b84e06"


def _echoing(status: int | None) -> type[BaseHTTPRequestHandler]:
    """A model server that puts the key it was sent into its answer (200), its error, or (None)
    an illegal header line, which the gateway's HTTP client quotes in the error it logs."""

    class Echoing(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            key = self.headers["authorization"].removeprefix("Bearer ")
            if status is None:
                self.wfile.write(f"HTTP/1.1 200 OK\r\nbad header {key}\r\n\r\n".encode())
                return
            if status == 200:
                text = {"type": "output_text", "text": f"your key is {key}"}
                body = {
                    "id": "resp_1", "object": "response", "created_at": 1, "model": "m",
                    "status": "completed", "usage": None,
                    "output": [{"type": "message", "role": "assistant", "content": [text]}],
                }  # fmt: skip
            else:
                message = f"Incorrect API key provided: {key}"
                body = {"error": {"message": message, "type": "invalid_request_error"}}
            send_json(self, status, body)

        def log_message(self, *args: object) -> None:
            pass

    return Echoing


@pytest.mark.parametrize("status", [200, 401, None], ids=["answer", "error", "bad-header"])
def test_an_upstream_that_echoes_the_key_leaves_it_in_no_file_and_no_output(
    products, tmp_path, monkeypatch, capfd, status
) -> None:
    products.plan("arith")
    monkeypatch.setenv("GYM_ASSETS_TEST_KEY", KEY)
    out = tmp_path / "run"
    with serving(_echoing(status)) as port:
        main([
            "rollouts", "--benchmark", "arith", "--harness", "minimal_agent", "--out", str(out),
            "--limit", "1", "--upstream", "openai", "--base-url", f"http://127.0.0.1:{port}/v1",
            "--api-key-env", "GYM_ASSETS_TEST_KEY", "--max-unmeasured-share", "1",
            "--configs", str(REPO / "configs"), "--data-root", str(products.root),
        ])  # fmt: skip
    printed = capfd.readouterr()  # the command's and the gateway process's (its stderr)
    assert KEY not in printed.out and KEY not in printed.err
    if status is None:  # the gateway logged the client's error, key and all, but redacted
        assert f"illegal header line: bytearray(b'bad header {REDACTED}')" in printed.err
    files = RunFiles(out)
    written = [p for p in out.rglob("*") if p.is_file()]
    assert files.report in written
    assert [p for p in written if KEY.encode() in p.read_bytes()] == []
    captures = list(files.capture_dir.glob("*.capture.jsonl"))
    assert captures
    if status is not None:  # an answer is captured redacted (a call without one, no payload)
        assert all(REDACTED.encode() in p.read_bytes() for p in captures)
    rows = [*read_jsonl(files.records), *read_jsonl(files.failures)]
    assert rows
    # the harness sandbox's network log stays with the run, beside the capture
    (network,) = files.capture_dir.glob("*.network.jsonl")
    assert json.loads(network.read_text().splitlines()[0])["event"] == "sandbox_ready"


def test_an_echoed_key_never_reaches_the_agent(tmp_path, monkeypatch) -> None:
    """The gateway's answer to the harness is redacted too, so a model-driven harness never
    holds the key (a stream is relayed as it arrives: its capture and record are redacted)."""
    monkeypatch.setenv("GYM_ASSETS_TEST_KEY", KEY)
    with serving(_echoing(401)) as port:
        upstream = OpenAIUpstream(f"http://127.0.0.1:{port}/v1", "GYM_ASSETS_TEST_KEY")
        redactor = Redactor.of_env(["GYM_ASSETS_TEST_KEY"])
        with ModelGateway(upstream, tmp_path / "captures", redactor=redactor) as gateway:
            body = {"model": "m", "input": "hi"}
            answer = httpx2.post(gateway.url_for("r1") + "/responses", json=body, timeout=30)
    assert answer.status_code == 401 and KEY not in answer.text and REDACTED in answer.text


class _StreamingTheKey:
    """A model server streaming the key back, ``size`` bytes a chunk, so the key straddles
    chunk boundaries."""

    def __init__(self, size: int) -> None:
        self.size = size

    async def open(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        event = {"type": "response.output_text.delta", "delta": f"your key is {KEY}!"}
        body = f"data: {json.dumps(event)}\n\n".encode() * 3
        chunks = [body[at : at + self.size] for at in range(0, len(body), self.size)]

        async def stream() -> AsyncIterator[bytes]:
            for chunk in chunks:
                yield chunk

        return UpstreamReply(200, stream=stream(), media_type="text/event-stream")


@pytest.mark.parametrize("size", [1, 7, 4096])
def test_a_streamed_answer_reaches_the_agent_redacted(tmp_path, size) -> None:
    redactor = Redactor([KEY])
    with ModelGateway(_StreamingTheKey(size), tmp_path, redactor=redactor) as gateway:
        body = {"model": "m", "input": "hi", "stream": True}
        answer = httpx2.post(gateway.url_for("r1") + "/responses", json=body, timeout=30)
    assert answer.status_code == 200 and KEY not in answer.text
    assert answer.text.count(f"your key is {REDACTED}!") == 3


def test_a_stream_is_redacted_wherever_its_chunks_split_the_key() -> None:
    redactor = Redactor([KEY])
    text = f"data: {KEY} and {json.dumps(KEY)} sk-echoed\n\n".encode() * 20
    pieces = random.Random(0)
    for _ in range(500):
        cuts = sorted(pieces.sample(range(1, len(text)), pieces.randint(1, 60)))
        stream = redactor.stream()
        relayed = [
            stream.feed(text[a:b]) for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)
        ]
        assert b"".join(relayed) + stream.end() == redactor.data(text)
    stream = redactor.stream()
    assert stream.feed(b"event\n\n") == b"event\n\n"  # nothing that could begin a key waits
    assert stream.feed(b"x sk-echoed") == b"x " and stream.end() == b"sk-echoed"


def test_the_key_is_replaced_as_written_and_as_json_escapes_it() -> None:
    secret = 'key"with/üñí\\code'
    redactor = Redactor([secret, "short"])
    for ascii_only in (True, False):
        line = json.dumps({"m": f"a {secret} b"}, ensure_ascii=ascii_only).encode()
        assert json.loads(redactor.data(line)) == {"m": f"a {REDACTED} b"}
    assert redactor.data(f"x{secret}y".encode()) == f"x{REDACTED}y".encode()
    assert redactor.data(b"short stays") == b"short stays"  # too short to be a secret
    assert Redactor.of_env(["UNSET_VARIABLE", None], {}).data(secret.encode()) == secret.encode()


def test_nothing_is_redacted_without_a_key(tmp_path: Path) -> None:
    assert upstream_config(mode="reference").redactor().data(KEY.encode()) == KEY.encode()
