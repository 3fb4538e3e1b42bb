"""The model gateway against hostile harnesses and hostile model servers.

Every body through the gateway is capped while it streams: a request larger than the cap from
inside a harness sandbox, or an answer larger than the cap from the model server (whole or
streamed, with or without a declared length), is refused as soon as it is known to be too
large, costs the gateway at most the cap in memory and the capture a bounded line, and ends
its rollout as its own failure kind. And a harness that calls another rollout's URL (guessing
the id) is refused and logged, and writes nothing into that rollout's evidence.

The gateway under test runs in its own process (as in a run), so its peak memory is its own.
"""

from __future__ import annotations

import asyncio
import http.client
import re
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx2
import orjson
import pytest

from gym_assets.rollouts.collection.files import read_jsonl
from gym_assets.rollouts.collection.gateway_process import GatewayProcess
from gym_assets.rollouts.gateway import ModelGateway, ModelRequest, UpstreamReply
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import Harness, load_harnesses
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import run_rollouts
from gym_assets_tests.rollouts.collection.conftest import REPO, Products

MiB = 1024 * 1024
CAP = 8 * MiB  # the default cap of requests and answers
HOSTILE = 64 * MiB  # what the attacker sends: eight times the cap
# Peak memory a refused body may add to the gateway process: the cap it read, and room.
HEADROOM = 5 * CAP
KEY_ENV = "GYM_ASSETS_TEST_KEY"
EXAMPLE = REPO / "examples" / "harnesses" / "minimal_agent.py"
GUESSING = REPO / "gym_assets_tests" / "rollouts" / "harness_programs" / "guessing_agent.py"
USER = [{"role": "user", "content": "hi"}]
# Arith's first task is (483 + 446) * 88: the model has the harness print 16 MB first.
FLOOD = [{"tool": "head -c 16000000 /dev/zero | tr '\\\\0' a"}, {"text": "81752"}]


@pytest.fixture(scope="module")
def products(tmp_path_factory: pytest.TempPathFactory) -> Products:
    return Products(tmp_path_factory.mktemp("data"))


def _peak_rss(pid: int) -> int:
    """The high-water mark of a process's resident memory, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _pieces(size: int, piece: bytes) -> Iterator[bytes]:
    for _ in range(size // len(piece)):
        yield piece


async def _aiter(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


class HugeAnswers:
    """A model server answering every call with ``HOSTILE`` bytes: one JSON body with its
    length declared, the same body without a length (chunked), or an SSE stream that never
    ends its message."""

    def __init__(self, shape: str) -> None:
        self.shape = shape

    async def open(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        text = b"a" * MiB
        if self.shape == "stream":
            event = b'data: {"choices":[{"index":0,"delta":{"content":"' + text + b'"}}]}\n\n'
            chunks = _aiter(_pieces(HOSTILE, event))
            return UpstreamReply(200, stream=chunks, media_type="text/event-stream")
        if self.shape == "declared":
            return UpstreamReply(200, b'{"content":"' + text * (HOSTILE // MiB) + b'"}')
        return UpstreamReply(200, stream=_aiter(_pieces(HOSTILE, text)))  # no length: chunked


def _gateway(tmp_path: Path, upstream_url: str | None = None) -> GatewayProcess:
    if upstream_url is None:
        config = upstream_config(mode="scripted")
    else:
        config = upstream_config(mode="openai", base_url=upstream_url, api_key_env=KEY_ENV)
    return GatewayProcess(
        config,
        tmp_path / "capture",
        model_name="policy",
        model_server_name="policy_model",
        script=[{"text": "pong"}],
    )


def _pid(gateway: GatewayProcess) -> int:
    assert gateway._process is not None  # the child whose memory is the gateway's
    return gateway._process.pid


def _send(url: str, body: bytes, *, declared: bool) -> int:
    """POST ``body`` in 1 MiB pieces, with or without a Content-Length, as a client that
    keeps sending until the gateway stops reading; the status the gateway answered."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    headers = {"content-type": "application/json"}
    if declared:
        headers["content-length"] = str(len(body))
    else:
        headers["transfer-encoding"] = "chunked"
    connection.putrequest("POST", parts.path, skip_accept_encoding=True)
    for name, value in headers.items():
        connection.putheader(name, value)
    connection.endheaders()
    try:
        for start in range(0, len(body), MiB):
            piece = body[start : start + MiB]
            connection.send(piece if declared else b"%x\r\n%s\r\n" % (len(piece), piece))
        if not declared:
            connection.send(b"0\r\n\r\n")
    except OSError:  # the gateway answered and closed early: read what it said
        pass
    try:
        return connection.getresponse().status
    finally:
        connection.close()


def _capture_bytes(tmp_path: Path, rollout_id: str) -> int:
    path = tmp_path / "capture" / f"{rollout_id}.capture.jsonl"
    return path.stat().st_size if path.exists() else 0


@pytest.mark.parametrize("declared", [True, False], ids=["declared", "chunked"])
def test_an_oversize_request_is_refused_while_it_streams(tmp_path: Path, declared: bool) -> None:
    gateway = _gateway(tmp_path)
    huge = orjson.dumps(
        {"model": "policy", "messages": [{"role": "user", "content": "a" * HOSTILE}]}
    )
    small = orjson.dumps({"model": "policy", "messages": USER})

    async def scenario() -> tuple[int, int, int]:
        async with gateway:

            def send(rollout_id: str, body: bytes) -> int:
                url = gateway.url_for(rollout_id) + "/chat/completions"
                return _send(url, body, declared=declared)

            assert await asyncio.to_thread(send, "r-small", small) == 200
            before = _peak_rss(_pid(gateway))
            status = await asyncio.to_thread(send, "r-big", huge)
            return status, before, _peak_rss(_pid(gateway))

    status, before, after = asyncio.run(scenario())
    assert status == 413
    assert after - before < HEADROOM, f"the gateway grew by {(after - before) // MiB} MiB"
    [line] = read_jsonl(tmp_path / "capture" / "r-big.capture.jsonl")
    assert (line["status_code"], line["error_category"]) == (413, "request_too_large")
    assert _capture_bytes(tmp_path, "r-big") < CAP


@pytest.mark.parametrize("shape", ["declared", "chunked", "stream"])
def test_an_oversize_answer_is_refused_while_it_streams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    stream = shape == "stream"
    body = {"model": "policy", "messages": USER, "stream": stream}
    with ModelGateway(HugeAnswers(shape), tmp_path / "hostile") as hostile:
        gateway = _gateway(tmp_path, hostile.origin + "/v1")

        async def scenario() -> tuple[httpx2.Response, int, int]:
            async with gateway, httpx2.AsyncClient(timeout=60) as http:
                url = gateway.url_for("r-answer") + "/chat/completions"
                await http.get(gateway.url_for("r-answer") + "/models")
                before = _peak_rss(_pid(gateway))
                reply = await http.post(url, json=body)
                return reply, before, _peak_rss(_pid(gateway))

        reply, before, after = asyncio.run(scenario())
    assert after - before < HEADROOM, f"the gateway grew by {(after - before) // MiB} MiB"
    if stream:  # the headers went out before the cap was reached: the stream ends in an error
        assert reply.status_code == 200 and b'"code":"answer_too_large"' in reply.content[-400:]
    else:
        assert reply.status_code == 502 and reply.headers["x-should-retry"] == "false"
    assert len(reply.content) <= CAP + 4096
    [line] = read_jsonl(tmp_path / "capture" / "r-answer.capture.jsonl")
    assert line["error_category"] == "answer_too_large"
    assert _capture_bytes(tmp_path, "r-answer") < CAP


def test_a_model_that_floods_its_harness_request_scores_zero_as_its_own_kind(
    products: Products, tmp_path: Path
) -> None:
    """The model has the harness print 16 MB, which the harness sends back in its next
    request: refused (413), the rollout is the model's ``agent_request_too_large``, scored 0
    and measured, and the capture holds no trace of the flood."""
    products.plan("arith")
    harness = load_harnesses(products.catalog.loaded)["minimal_agent"]
    upstream = upstream_config(mode="scripted")
    out = tmp_path / "run"
    result = run_rollouts(
        products.catalog, "arith", harness, out, upstream, RunOptions(limit=1, script=FLOOD)
    )
    (record,) = read_jsonl(result.files.records)
    assert record["failure_kind"] == "agent_request_too_large"
    assert (record["reward"], record["mask_sample"]) == (0.0, False)
    calls = record["ng_model_call_capture"]["calls"]
    assert [c["error_category"] for c in calls] == [None, "request_too_large"]
    assert all(p.stat().st_size < CAP for p in result.files.capture_dir.iterdir())


def test_a_harness_guessing_another_rollouts_url_is_refused_and_logged(
    products: Products, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Each rollout's harness calls the other's URL with its own token and without one: both
    are refused, the run's log names the attempt (never a token), and each rollout's capture
    holds only its own calls."""
    products.plan("arith")
    command = (sys.executable, str(GUESSING), str(EXAMPLE), "0-0,1-0")
    harness = Harness(
        name="guessing_agent", kind="command", command=command, version="guessing_agent 0.1"
    )
    out = tmp_path / "run"
    result = run_rollouts(
        products.catalog, "arith", harness, out, upstream_config(), RunOptions(limit=2)
    )
    captures = sorted(result.files.capture_dir.glob("*.capture.jsonl"))
    assert [p.name for p in captures] == ["0-0.capture.jsonl", "1-0.capture.jsonl"]
    for path in captures:
        assert b"forged" not in path.read_bytes(), path.name
        assert all(line["status_code"] == 200 for line in read_jsonl(path))
    records = list(read_jsonl(result.files.records))
    assert len(records) == 2 and all(r["reward"] == 1.0 for r in records)
    log = capfd.readouterr().err
    for victim in ("0-0", "1-0"):  # by the token's layout, and by the bare layout
        assert f"refused a call on rollout '{victim}': its path" in log
        assert f"refused a call on rollout '{victim}': not a URL" in log
    assert not re.search(r"[A-Za-z0-9_-]{43}", log)  # no token, valid or not


def test_an_endpoint_flooding_its_answer_fails_the_rollout_as_its_own_kind(
    products: Products, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The endpoint's answer is over the cap: the agent is told not to retry, and the rollout
    is the endpoint's ``agent_answer_too_large`` (a failure row, no record), not the model's."""
    products.plan("arith")
    monkeypatch.setenv(KEY_ENV, "sk-test")
    harness = load_harnesses(products.catalog.loaded)["simple_agent"]
    with ModelGateway(HugeAnswers("declared"), tmp_path / "hostile") as hostile:
        upstream = upstream_config(
            mode="openai", base_url=hostile.origin + "/v1", api_key_env=KEY_ENV
        )
        result = run_rollouts(
            products.catalog, "arith", harness, tmp_path / "run", upstream, RunOptions(limit=1)
        )
    assert list(read_jsonl(result.files.records)) == []
    (failure,) = read_jsonl(result.files.failures)
    assert failure["_ng_failure_kind"] == "agent_answer_too_large"
    (capture,) = result.files.capture_dir.glob("*.capture.jsonl")
    assert [line["error_category"] for line in read_jsonl(capture)] == ["answer_too_large"]
