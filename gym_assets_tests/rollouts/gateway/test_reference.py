"""The reference upstream: every rollout answered from its own script."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import openai
import pytest
from openai import OpenAI

from gym_assets.rollouts.gateway import ReferenceUpstream, ScriptedUpstream, ScriptError
from gym_assets_tests.rollouts.gateway.conftest import capture_lines

USER = [{"role": "user", "content": "solve"}]


def _ask(gateway, rollout_id: str, **kw) -> str | None:
    client = OpenAI(base_url=gateway.url_for(rollout_id), api_key="dummy", max_retries=0)
    done = client.chat.completions.create(model="policy", messages=USER, **kw)
    return done.choices[0].message.content


def test_each_rollout_gets_its_own_script(start_gateway, tmp_path: Path) -> None:
    gateway = start_gateway(ReferenceUpstream())
    gateway.set_reference_script("task-1-0", [{"text": "answer one"}])
    gateway.set_reference_script("task-2-0", [{"error": 500, "times": 1}, {"text": "answer two"}])
    assert _ask(gateway, "task-1-0") == "answer one"
    with pytest.raises(openai.InternalServerError):
        _ask(gateway, "task-2-0")
    assert _ask(gateway, "task-2-0") == "answer two"
    assert len(capture_lines(tmp_path / "capture", "task-1-0")) == 1
    assert len(capture_lines(tmp_path / "capture", "task-2-0")) == 2


def test_unknown_rollout_is_404_with_a_clear_error(start_gateway, tmp_path: Path) -> None:
    gateway = start_gateway(ReferenceUpstream())
    with pytest.raises(openai.NotFoundError) as raised:
        _ask(gateway, "nobody")
    assert "no reference script for rollout 'nobody'" in raised.value.body["message"]
    [line] = capture_lines(tmp_path / "capture", "nobody")
    assert (line["status_code"], line["error_category"]) == (404, "not_found")


def test_rescripting_a_rollout_starts_it_afresh(start_gateway) -> None:
    gateway = start_gateway(ReferenceUpstream())
    script = [{"error": 429, "times": 1}, {"text": "ok"}]
    gateway.set_reference_script("r", script)
    with pytest.raises(openai.RateLimitError):
        _ask(gateway, "r")
    assert _ask(gateway, "r") == "ok"
    gateway.set_reference_script("r", script)  # e.g. a second attempt of the task
    with pytest.raises(openai.RateLimitError):
        _ask(gateway, "r")


def test_set_reference_script_checks_its_inputs(start_gateway) -> None:
    gateway = start_gateway(ReferenceUpstream())
    with pytest.raises(ValueError, match="must match"):
        gateway.set_reference_script("../escape", [{"text": "x"}])
    with pytest.raises(ScriptError, match="step 0"):
        gateway.set_reference_script("r", [{"say": "x"}])
    scripted = start_gateway(ScriptedUpstream([{"text": "x"}]))
    with pytest.raises(TypeError, match="needs a ReferenceUpstream"):
        scripted.set_reference_script("r", [{"text": "x"}])


def test_a_dropped_script_is_gone(start_gateway) -> None:
    gateway = start_gateway(ReferenceUpstream())
    gateway.set_reference_script("r", [{"text": "ok"}])
    assert _ask(gateway, "r") == "ok"
    gateway.drop_reference_script("r")
    with pytest.raises(openai.NotFoundError, match="no reference script for rollout 'r'"):
        _ask(gateway, "r")
    gateway.drop_reference_script("never-scripted")  # nothing to drop: no error


def test_dropping_each_finished_rollout_s_script_keeps_the_upstream_flat() -> None:
    upstream = ReferenceUpstream()
    script = [{"error": 500, "times": 1}, {"text": "x" * 2_000}]
    tracemalloc.start()
    try:
        for n in range(200):  # warm: the first scripts allocate what every later one reuses
            upstream.set_script(f"r-{n}", script)
            upstream.drop_script(f"r-{n}")
        before = tracemalloc.get_traced_memory()[0]
        for n in range(5_000):
            upstream.set_script(f"r-{n}", script)
            upstream.drop_script(f"r-{n}")
        grown = tracemalloc.get_traced_memory()[0] - before
        for n in range(5_000):
            upstream.set_script(f"kept-{n}", script)
        kept = tracemalloc.get_traced_memory()[0] - before - grown
    finally:
        tracemalloc.stop()
    assert grown < kept / 50  # dropped: next to nothing; kept: every script
