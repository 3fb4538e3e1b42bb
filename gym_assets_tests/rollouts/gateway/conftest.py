"""Gateways on real loopback sockets, always stopped, plus the tool schemas harnesses send."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_assets.rollouts.gateway import ModelGateway, Upstream
from gym_assets.rollouts.gateway.capture import capture_path

BASH_CHAT_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
            "required": ["command", "description"],
        },
    },
}
EXEC_RESPONSES_TOOL = {
    "type": "function",
    "name": "exec_command",
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}},
        "required": ["cmd"],
    },
}
TOOL_THEN_TEXT = [{"tool": "echo 391 > answer.txt"}, {"text": "Done."}]


@pytest.fixture
def start_gateway(tmp_path: Path) -> Iterator[Callable[..., ModelGateway]]:
    """Make (and by default start) gateways; every one is stopped when the test ends."""
    made: list[ModelGateway] = []

    def make(
        upstream: Upstream, capture_dir: Path | None = None, *, start: bool = True, **kw: Any
    ) -> ModelGateway:
        gateway = ModelGateway(upstream, capture_dir or tmp_path / "capture", **kw)
        made.append(gateway)
        if start:
            gateway.start()
        return gateway

    yield make
    for gateway in reversed(made):
        gateway.stop()


def capture_lines(capture_dir: Path, rollout_id: str) -> list[dict]:
    text = capture_path(capture_dir, rollout_id).read_text()
    return [json.loads(line) for line in text.splitlines()]
