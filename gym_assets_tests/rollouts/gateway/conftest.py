"""Gateways on real loopback sockets, always stopped, plus the tool schemas harnesses send."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gym_assets.rollouts.gateway import ModelGateway, Upstream

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
    """Start gateways on demand; every one is stopped when the test ends, pass or fail."""
    started: list[ModelGateway] = []

    def start(upstream: Upstream, capture_dir: Path | None = None, **kw: object) -> ModelGateway:
        gateway = ModelGateway(upstream, capture_dir or tmp_path / "capture", **kw)
        started.append(gateway)
        gateway.start()
        return gateway

    yield start
    for gateway in reversed(started):
        gateway.stop()
