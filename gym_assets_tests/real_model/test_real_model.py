"""Harnesses against a real OpenAI-compatible server: llama.cpp's, serving SmolLM2-135M.

What is asserted is that the pipeline carried a real model's calls intact: every call captured
with its request, answer, latency and usage (or usage recorded as omitted, never 0: this
server's streams carry none), nothing masked or failed, and rewards that are what the verifiers
give (a re-verification of the run changes none). A 135M model's answers are mostly wrong; no
test asserts a score.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gym_assets.config.loader import load_configs
from gym_assets.local_services.model_server import API_KEY, API_KEY_ENV, MODEL_ALIAS
from gym_assets.rollouts.collection.files import read_jsonl
from gym_assets.rollouts.gateway.capture import CAPTURE_SUFFIX, INCOMPLETE_SUFFIX
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import Harness, load_harnesses
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.reverify import reverify_run
from gym_assets.rollouts.run import run_rollouts
from gym_assets_tests.rollouts.collection.conftest import REPO, Products
from gym_assets_tests.rollouts.harnesses.adapters.installed import installed_harness

TASKS = 2
BENCHMARKS = ("units", "arith")


@pytest.fixture(scope="module")
def products(tmp_path_factory: pytest.TempPathFactory) -> Products:
    return Products(tmp_path_factory.mktemp("data"))


def _harness(name: str) -> Harness:
    harness = load_harnesses(load_configs(REPO / "configs"))[name]
    return installed_harness(name) if harness.kind == "cli" else harness


def _usage_or_omitted(call: dict[str, Any]) -> None:
    """The record's token counts are the answer's usage, or None where it carried none."""
    usage = call["response"].get("usage") or {}
    stats = call["token_stats"]
    assert stats["prompt_tokens"] == usage.get("prompt_tokens", usage.get("input_tokens"))
    assert stats["completion_tokens"] == usage.get("completion_tokens", usage.get("output_tokens"))


def _assert_evidence_complete(out: Path, record: dict[str, Any]) -> None:
    trajectory = record["ng_trajectory"]
    assert trajectory["gaps"] == [] and trajectory["model_calls"]
    captures = out / "captures"
    rollout = trajectory["rollout_id"]
    assert not (captures / f"{rollout}{INCOMPLETE_SUFFIX}").exists()
    lines = (captures / f"{rollout}{CAPTURE_SUFFIX}").read_text("utf-8").splitlines()
    assert len(lines) == len(trajectory["model_calls"])  # every call captured, none extra
    for call in trajectory["model_calls"]:
        metadata = call["response_metadata"]
        assert (metadata["status_code"], metadata["error_category"]) == (200, None)
        assert isinstance(call["request"], dict) and isinstance(call["response"], dict)
        assert call["duration_ms"] is not None
        _usage_or_omitted(call)


@pytest.mark.parametrize("benchmark", BENCHMARKS)
@pytest.mark.parametrize("harness_name", ["pi"])
def test_a_harness_runs_against_the_real_model_with_complete_evidence(
    real_model: str,
    products: Products,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    harness_name: str,
    benchmark: str,
) -> None:
    harness = _harness(harness_name)
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    products.plan(benchmark)
    out = tmp_path / "run"
    upstream = upstream_config(
        mode="openai", base_url=real_model, api_key_env=API_KEY_ENV, model=MODEL_ALIAS
    )
    options = RunOptions(limit=TASKS, concurrency=TASKS, timeout_s=600.0)
    result = run_rollouts(products.catalog, benchmark, harness, out, upstream, options)
    records = list(read_jsonl(result.files.records))
    assert list(read_jsonl(result.files.failures)) == []
    assert len(records) == TASKS and not any(r["mask_sample"] for r in records)
    for record in records:
        _assert_evidence_complete(out, record)
    rewards = [r["reward"] for r in records]
    rescored = reverify_run(products.catalog, out, tmp_path / "reverified")
    assert (rescored.records, rescored.changed) == (TASKS, 0)  # the verifier's own rewards
    print(
        json.dumps(
            {
                "harness": harness_name,
                "benchmark": benchmark,
                "records": len(records),
                "masked": 0,
                "rewards": rewards,
                "seconds_per_rollout": round(result.seconds / TASKS, 2),
            }
        )
    )
