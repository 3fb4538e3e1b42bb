"""The run's gateway in a child process: real HTTP, captures, scripts over the control pipe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from gym_assets.errors import UserError
from gym_assets.rollouts.collection import gateway_process
from gym_assets.rollouts.collection.gateway_process import GatewayProcess, GatewayProcessError
from gym_assets.rollouts.gateway.capture import capture_path
from gym_assets.rollouts.harnesses import upstream_of

BODY = {"model": "policy", "messages": [{"role": "user", "content": "hi"}]}


def _chat(base_url: str) -> dict:
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(BODY).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())


def _gateway(tmp_path: Path, mode: str, **kwargs) -> GatewayProcess:
    return GatewayProcess(
        upstream_of(mode=mode),
        tmp_path / "capture",
        model_name="policy",
        model_server_name="policy_model",
        **kwargs,
    )


def test_serves_and_captures_from_another_process(tmp_path: Path) -> None:
    with _gateway(tmp_path, "scripted", script=[{"text": "pong"}]) as gateway:
        assert gateway.origin.startswith("http://127.0.0.1:")
        answer = _chat(gateway.url_for("r-1"))
        assert answer["choices"][0]["message"]["content"] == "pong"
        assert gateway._process is not None and gateway._process.pid != os.getpid()
    (line,) = capture_path(tmp_path / "capture", "r-1").read_text().splitlines()
    assert json.loads(line)["request"] == BODY
    gateway.stop()  # stopping twice is harmless


def test_reference_scripts_reach_the_child_before_the_call(tmp_path: Path) -> None:
    with _gateway(tmp_path, "reference") as gateway:
        gateway.set_reference_script("r-1", [{"text": "first"}])
        gateway.set_reference_script("r-2", [{"text": "second"}])
        assert _chat(gateway.url_for("r-2"))["choices"][0]["message"]["content"] == "second"
        assert _chat(gateway.url_for("r-1"))["choices"][0]["message"]["content"] == "first"


def test_the_childs_refusals_raise_in_the_parent(tmp_path: Path) -> None:
    with (
        _gateway(tmp_path, "scripted", script=[{"text": "pong"}]) as gateway,
        pytest.raises(GatewayProcessError, match="ReferenceUpstream"),
    ):
        gateway.set_reference_script("r-1", [{"text": "x"}])
    with _gateway(tmp_path, "reference") as gateway:
        with pytest.raises(GatewayProcessError, match="must match"):
            gateway.set_reference_script("no spaces", [{"text": "x"}])
        gateway.set_reference_script("r-1", [{"text": "still serving"}])
        answer = _chat(gateway.url_for("r-1"))["choices"][0]["message"]["content"]
        assert answer == "still serving"


def test_a_start_failure_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GYM_TEST_MISSING_KEY", raising=False)
    upstream = upstream_of(
        mode="openai", base_url="http://127.0.0.1:9/v1", api_key_env="GYM_TEST_MISSING_KEY"
    )
    gateway = GatewayProcess(
        upstream, tmp_path / "capture", model_name="policy", model_server_name="policy_model"
    )
    with pytest.raises(GatewayProcessError, match=r"did not start.*GYM_TEST_MISSING_KEY") as err:
        gateway.start()
    assert isinstance(err.value, UserError)  # the command line prints it and exits 1
    assert gateway._process is None


def test_a_dead_child_is_a_clear_error(tmp_path: Path) -> None:
    with _gateway(tmp_path, "reference") as gateway:
        assert gateway._process is not None
        os.kill(gateway._process.pid, signal.SIGKILL)  # not reaped: the error waits for it
        with pytest.raises(GatewayProcessError, match=r"exited \(code -9\)"):
            gateway.set_reference_script("r-1", [{"text": "x"}])


def test_stray_output_on_the_control_channel_is_a_clear_error(tmp_path: Path) -> None:
    gateway = _gateway(tmp_path, "reference")
    script = "import sys; sys.stdin.readline(); print('hello', flush=True); sys.stdin.read()"
    gateway._process = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        with pytest.raises(GatewayProcessError, match="wrote 'hello"):
            gateway.set_reference_script("r-1", [{"text": "x"}])
    finally:
        gateway.stop()


def test_a_silent_child_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gateway_process, "ANSWER_TIMEOUT_S", 0.5)
    gateway = _gateway(tmp_path, "reference")
    gateway._process = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    with pytest.raises(GatewayProcessError, match=r"did not answer within 0\.5 s"):
        gateway.set_reference_script("r-1", [{"text": "x"}])
    gateway.stop()


def test_ctrl_c_is_left_to_the_run(tmp_path: Path) -> None:
    """The child ignores SIGINT (sent to the whole group by Ctrl-C); the run stops it."""
    with _gateway(tmp_path, "scripted", script=[{"text": "pong"}]) as gateway:
        process = gateway._process
        assert process is not None
        os.kill(process.pid, signal.SIGINT)
        assert _chat(gateway.url_for("r-1"))["choices"][0]["message"]["content"] == "pong"
    assert process.returncode == 0
