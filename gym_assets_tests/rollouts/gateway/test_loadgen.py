"""The raw load generator measures real answers and counts failures."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gym_assets.rollouts.gateway import ScriptedUpstream
from gym_assets.rollouts.gateway.loadgen import measure_rps, run_load
from gym_assets_tests.rollouts.gateway.conftest import capture_lines


def test_load_through_the_captured_endpoint(start_gateway, tmp_path: Path) -> None:
    gateway = start_gateway(ScriptedUpstream([{"text": "pong"}]))
    result = asyncio.run(run_load(gateway.url_for("bench"), concurrency=4, requests=50))
    assert (result.requests, result.errors) == (50, 0)
    assert result.requests_per_second > 0
    assert len(capture_lines(tmp_path / "capture", "bench")) == 50


def test_error_answers_are_counted(start_gateway) -> None:
    gateway = start_gateway(ScriptedUpstream([{"error": 503, "times": 1}]))
    result = asyncio.run(run_load(gateway.origin + "/v1", concurrency=2, requests=10))
    assert result.errors == 10
    assert measure_rps(gateway.origin + "/v1", concurrency=1, requests=3) > 0


def test_only_http_urls_are_accepted() -> None:
    with pytest.raises(ValueError, match="http://"):
        asyncio.run(run_load("https://example.invalid/v1"))


def test_a_responses_body_spread_over_capture_files(start_gateway, tmp_path: Path) -> None:
    gateway = start_gateway(ScriptedUpstream([{"text": "pong"}]))
    body = {"model": "policy", "input": [{"role": "user", "content": "hi"}]}
    urls = [gateway.url_for("a"), gateway.url_for("b")]
    result = asyncio.run(run_load(urls, concurrency=2, requests=6, body=body, route="responses"))
    assert (result.requests, result.errors) == (6, 0)
    lines = {key: capture_lines(tmp_path / "capture", key) for key in ("a", "b")}
    assert all(lines.values()) and sum(map(len, lines.values())) == 6  # a connection per URL
    assert {line["dialect"] for found in lines.values() for line in found} == {"responses"}
    assert all(line["request"] == body for found in lines.values() for line in found)
