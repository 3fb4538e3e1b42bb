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

from gym_assets.cli import main
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
HARNESSES = ("simple_agent", "minimal_agent", "codex", "pi")


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


def _user_texts(request: dict[str, Any]) -> list[str]:
    """The user's words in a request of either dialect, in order."""
    items = request.get("messages", request.get("input"))
    if isinstance(items, str):
        return [items]
    texts = []
    for item in items:
        content = item.get("content") if item.get("role") == "user" else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [part["text"] for part in content if "text" in part]
    return texts


def _function_names(request: dict[str, Any]) -> list[str]:
    """The function tools offered (Chat nests the name; Responses does not)."""
    tools = [t for t in request.get("tools") or [] if t.get("type") == "function"]
    return sorted(t.get("name") or t["function"]["name"] for t in tools)


def _assert_upstream_matches(line: dict[str, Any], api: str) -> None:
    """A call in the server's dialect went as it was; any other went translated, with the same
    model, user text and function tools."""
    upstream = line.get("upstream")
    if line["dialect"] == "chat":
        assert upstream is None
        return
    assert upstream["dialect"] == "chat" and upstream["status_code"] == 200, api
    agent, sent = line["request"], upstream["request"]
    assert sent["model"] == agent["model"] == MODEL_ALIAS
    assert _user_texts(sent) == _user_texts(agent)
    assert _function_names(sent) == _function_names(agent)


def _assert_evidence_complete(out: Path, record: dict[str, Any], api: str) -> None:
    trajectory = record["ng_trajectory"]
    assert trajectory["gaps"] == [] and trajectory["model_calls"]
    captures = out / "captures"
    rollout = trajectory["rollout_id"]
    assert not (captures / f"{rollout}{INCOMPLETE_SUFFIX}").exists()
    lines = [
        json.loads(line)
        for line in (captures / f"{rollout}{CAPTURE_SUFFIX}").read_text("utf-8").splitlines()
    ]
    assert len(lines) == len(trajectory["model_calls"])  # every call captured, none extra
    for call, line in zip(trajectory["model_calls"], lines, strict=True):
        metadata = call["response_metadata"]
        assert (metadata["status_code"], metadata["error_category"]) == (200, None)
        assert isinstance(call["request"], dict) and isinstance(call["response"], dict)
        assert call["duration_ms"] is not None and line["latency_ms"] is not None
        _usage_or_omitted(call)
        _assert_upstream_matches(line, api)


def _run(products: Products, harness_name: str, benchmark: str, out: Path, base_url: str, api: str):
    products.plan(benchmark)
    upstream = upstream_config(
        mode="openai", base_url=base_url, api_key_env=API_KEY_ENV, model=MODEL_ALIAS, api=api
    )
    options = RunOptions(limit=TASKS, concurrency=TASKS, timeout_s=600.0)
    return run_rollouts(products.catalog, benchmark, _harness(harness_name), out, upstream, options)


@pytest.mark.parametrize("api", ["chat", "auto"])
@pytest.mark.parametrize("benchmark", BENCHMARKS)
@pytest.mark.parametrize("harness_name", HARNESSES)
def test_a_harness_runs_against_the_real_model_with_complete_evidence(
    real_model: str,
    products: Products,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    harness_name: str,
    benchmark: str,
    api: str,
) -> None:
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    out = tmp_path / "run"
    result = _run(products, harness_name, benchmark, out, real_model, api)
    records = list(read_jsonl(result.files.records))
    assert list(read_jsonl(result.files.failures)) == []
    assert len(records) == TASKS and not any(r["mask_sample"] for r in records)
    for record in records:
        _assert_evidence_complete(out, record, api)
    rescored = reverify_run(products.catalog, out, tmp_path / "reverified")
    assert (rescored.records, rescored.changed) == (TASKS, 0)  # the verifier's own rewards
    measured = {
        "harness": harness_name,
        "benchmark": benchmark,
        "api": api,
        "records": len(records),
        "masked": 0,
        "rewards": [r["reward"] for r in records],
        "seconds_per_rollout": round(result.seconds / TASKS, 2),
    }
    print(json.dumps(measured))  # the numbers docs/rollouts.md quotes (pytest -s shows them)


@pytest.mark.parametrize("harness_name", HARNESSES)
def test_told_the_server_speaks_responses_a_run_fails_and_says_why(
    real_model: str,
    products: Products,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    harness_name: str,
) -> None:
    """llama.cpp's server has no /v1/responses: with ``--upstream-api responses`` every call
    404s, each rollout is masked as the endpoint's failure naming the 404, and the run fails."""
    _harness(harness_name)  # skips when a cli harness is not installed
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    out = tmp_path / "run"
    argv = ["rollouts", "--benchmark", "units", "--harness", harness_name, "--out", str(out)]
    argv += ["--upstream", "openai", "--base-url", real_model, "--api-key-env", API_KEY_ENV]
    argv += ["--model", MODEL_ALIAS, "--upstream-api", "responses", "--limit", str(TASKS)]
    argv += ["--configs", str(REPO / "configs"), "--data-root", str(products.root)]
    assert main(argv) == 1
    assert f"{TASKS} of {TASKS} planned rollouts unmeasured" in capsys.readouterr().err
    records = list(read_jsonl(out / "rollouts.jsonl"))
    assert [r["failure_kind"] for r in records] == ["agent_request_failed"] * TASKS
    assert all(r["mask_sample"] and "404" in r["failure_reason"] for r in records)
