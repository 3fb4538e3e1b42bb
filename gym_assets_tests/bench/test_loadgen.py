"""The benches' load generator measures real answers from the gateway and counts failures."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.loadgen import run_load
from gym_assets.rollouts.gateway import ModelGateway, ScriptedUpstream
from gym_assets.rollouts.gateway.capture import capture_path


@pytest.fixture
def pong(tmp_path: Path) -> Iterator[ModelGateway]:
    with ModelGateway(ScriptedUpstream([{"text": "pong"}]), tmp_path / "capture") as gateway:
        yield gateway


def _lines(gateway: ModelGateway, rollout_id: str) -> list[dict]:
    text = capture_path(gateway.capture_dir, rollout_id).read_text()
    return [json.loads(line) for line in text.splitlines()]


def test_load_through_the_captured_endpoint(pong: ModelGateway) -> None:
    result = asyncio.run(run_load(pong.url_for("bench"), concurrency=4, requests=50))
    assert (result.requests, result.errors) == (50, 0)
    assert result.requests_per_second > 0
    assert len(_lines(pong, "bench")) == 50


def test_error_answers_are_counted(tmp_path: Path) -> None:
    upstream = ScriptedUpstream([{"error": 503, "times": 1}])
    with ModelGateway(upstream, tmp_path / "capture") as gateway:
        result = asyncio.run(run_load(gateway.origin + "/v1", concurrency=2, requests=10))
    assert result.errors == 10


def test_only_http_urls_are_accepted() -> None:
    with pytest.raises(ValueError, match="http://"):
        asyncio.run(run_load("https://example.invalid/v1"))


def test_a_responses_body_spread_over_capture_files(pong: ModelGateway) -> None:
    body = {"model": "policy", "input": [{"role": "user", "content": "hi"}]}
    urls = [pong.url_for("a"), pong.url_for("b")]
    result = asyncio.run(run_load(urls, concurrency=2, requests=6, body=body, route="responses"))
    assert (result.requests, result.errors) == (6, 0)
    lines = {key: _lines(pong, key) for key in ("a", "b")}
    assert all(lines.values()) and sum(map(len, lines.values())) == 6  # a sender per URL
    assert {line["dialect"] for found in lines.values() for line in found} == {"responses"}
    assert all(line["request"] == body for found in lines.values() for line in found)
