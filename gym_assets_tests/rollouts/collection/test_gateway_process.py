"""The run's gateway in a child process: real HTTP, captures, scripts over the control pipe,
driven from the run's event loop."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from gym_assets.errors import UserError
from gym_assets.rollouts import run
from gym_assets.rollouts.collection import gateway_process
from gym_assets.rollouts.collection.gateway_process import GatewayProcess, GatewayProcessError
from gym_assets.rollouts.gateway.capture import capture_path
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.rollouts.options import RunOptions

BODY = {"model": "policy", "messages": [{"role": "user", "content": "hi"}]}
# A stand-in child that answers the start-up, then holds the answer to the first command
# until the second has arrived, and refuses the second.
HOLDS_THE_FIRST_ANSWER = """
import json, sys
sys.stdin.readline()
print(json.dumps({"origin": "http://127.0.0.1:9"}), flush=True)
sys.stdin.readline()
sys.stdin.readline()
print(json.dumps({"ok": True}), flush=True)
print(json.dumps({"error": "the second command is refused"}), flush=True)
sys.stdin.read()
"""


def _chat_sync(base_url: str) -> str:
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(BODY).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())["choices"][0]["message"]["content"]


async def _chat(base_url: str) -> str:
    return await asyncio.to_thread(_chat_sync, base_url)


def _gateway(tmp_path: Path, mode: str, **kwargs: Any) -> GatewayProcess:
    return GatewayProcess(
        upstream_config(mode=mode),
        tmp_path / "capture",
        model_name="policy",
        model_server_name="policy_model",
        **kwargs,
    )


def _run(scenario: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(scenario())


def _stand_in(monkeypatch: pytest.MonkeyPatch, code: str) -> None:
    monkeypatch.setattr(gateway_process, "CHILD_COMMAND", (sys.executable, "-c", code))


def test_serves_and_captures_from_another_process(tmp_path: Path) -> None:
    gateway = _gateway(tmp_path, "scripted", script=[{"text": "pong"}])

    async def scenario() -> None:
        async with gateway:
            assert gateway.origin.startswith("http://127.0.0.1:")
            assert await _chat(gateway.url_for("r-1")) == "pong"
            assert gateway._process is not None and gateway._process.pid != os.getpid()
        await gateway.stop()  # stopping twice is harmless

    _run(scenario)
    (line,) = capture_path(tmp_path / "capture", "r-1").read_text().splitlines()
    assert json.loads(line)["request"] == BODY  # written before the child exited


def test_reference_scripts_reach_the_child_before_the_call(tmp_path: Path) -> None:
    async def scenario() -> list[str]:
        async with _gateway(tmp_path, "reference") as gateway:
            keys = [f"r-{k}" for k in range(50)]
            await asyncio.gather(
                *(gateway.set_reference_script(key, [{"text": key}]) for key in keys)
            )
            return [await _chat(gateway.url_for(key)) for key in reversed(keys)]

    assert _run(scenario) == [f"r-{k}" for k in reversed(range(50))]


def _status(base_url: str) -> int:
    try:
        _chat_sync(base_url)
    except urllib.error.HTTPError as error:
        return error.code
    return 200


def test_a_released_script_is_dropped_with_the_next_script(tmp_path: Path) -> None:
    async def scenario() -> list[int]:
        async with _gateway(tmp_path, "reference") as gateway:
            await gateway.set_reference_script("r-1", [{"text": "one"}])
            gateway.release_reference_script("r-1")
            statuses = [await asyncio.to_thread(_status, gateway.url_for("r-1"))]  # not sent yet
            await gateway.set_reference_script("r-2", [{"text": "two"}])
            statuses.append(await asyncio.to_thread(_status, gateway.url_for("r-1")))
            statuses.append(await asyncio.to_thread(_status, gateway.url_for("r-2")))
            return statuses

    assert _run(scenario) == [200, 404, 200]


def test_a_run_releases_every_script_it_sets(products, tmp_path: Path, monkeypatch) -> None:
    scripted: list[str] = []
    released: list[str] = []

    class Watched(GatewayProcess):
        async def set_reference_script(self, rollout_id: str, steps: Any) -> None:
            assert rollout_id not in scripted  # each attempt's key once
            scripted.append(rollout_id)
            await super().set_reference_script(rollout_id, steps)

        def release_reference_script(self, rollout_id: str) -> None:
            assert rollout_id in scripted and rollout_id not in released
            released.append(rollout_id)
            super().release_reference_script(rollout_id)

    monkeypatch.setattr(run, "GatewayProcess", Watched)
    products.plan("units")
    harness = load_harnesses(products.catalog.loaded.data)["simple_agent"]
    with open(os.devnull, "w") as quiet:
        done = run.run_rollouts(
            products.catalog,
            "units",
            harness,
            tmp_path / "run",
            upstream_config(mode="reference"),
            RunOptions(concurrency=4, workers=1),
            progress_stream=quiet,
        )
    assert done.totals.outcomes.measured == len(scripted) == 30
    assert sorted(released) == sorted(scripted)


def test_each_answer_reaches_its_own_command(tmp_path: Path) -> None:
    """Commands in the pipe together: a refusal among them fails only its own command."""

    async def scenario() -> tuple[list[Any], str]:
        async with _gateway(tmp_path, "reference") as gateway:
            keys = ["r-0", "r-1", "not valid", "r-3"]
            outcomes = await asyncio.gather(
                *(gateway.set_reference_script(key, [{"text": "x"}]) for key in keys),
                return_exceptions=True,
            )
            return outcomes, await _chat(gateway.url_for("r-3"))

    outcomes, answer = _run(scenario)
    assert [type(o).__name__ for o in outcomes] == [
        "NoneType",
        "NoneType",
        "GatewayProcessError",
        "NoneType",
    ]
    assert "must match" in str(outcomes[2]) and answer == "x"


def test_the_childs_refusals_raise_in_the_parent(tmp_path: Path) -> None:
    async def scenario() -> str:
        async with _gateway(tmp_path, "scripted", script=[{"text": "pong"}]) as gateway:
            with pytest.raises(GatewayProcessError, match="ReferenceUpstream"):
                await gateway.set_reference_script("r-1", [{"text": "x"}])
        async with _gateway(tmp_path, "reference") as gateway:
            with pytest.raises(GatewayProcessError, match="must match"):
                await gateway.set_reference_script("no spaces", [{"text": "x"}])
            await gateway.set_reference_script("r-1", [{"text": "still serving"}])
            return await _chat(gateway.url_for("r-1"))

    assert _run(scenario) == "still serving"


def test_a_command_waiting_for_its_answer_holds_up_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child answers the first command only once the second has arrived: both are sent,
    so waiting for an answer blocks neither the loop nor the other rollouts."""
    _stand_in(monkeypatch, HOLDS_THE_FIRST_ANSWER)
    gateway = _gateway(tmp_path, "reference")

    async def scenario() -> list[Any]:
        async with gateway:
            return await asyncio.gather(
                gateway.set_reference_script("r-1", [{"text": "x"}]),
                gateway.set_reference_script("r-2", [{"text": "y"}]),
                return_exceptions=True,
            )

    first, second = _run(scenario)
    assert first is None
    assert isinstance(second, GatewayProcessError) and "second command" in str(second)


def test_a_cancelled_command_does_not_shift_the_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stand_in(monkeypatch, HOLDS_THE_FIRST_ANSWER)
    gateway = _gateway(tmp_path, "reference")

    async def scenario() -> None:
        async with gateway:
            first = asyncio.create_task(gateway.set_reference_script("r-1", [{"text": "x"}]))
            await asyncio.sleep(0)  # the first command is written and waits for its answer
            first.cancel()
            with pytest.raises(asyncio.CancelledError):
                await first
            with pytest.raises(GatewayProcessError, match="second command"):
                await gateway.set_reference_script("r-2", [{"text": "y"}])

    _run(scenario)


def test_a_start_failure_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GYM_TEST_MISSING_KEY", raising=False)
    upstream = upstream_config(
        mode="openai", base_url="http://127.0.0.1:9/v1", api_key_env="GYM_TEST_MISSING_KEY"
    )
    gateway = GatewayProcess(
        upstream, tmp_path / "capture", model_name="policy", model_server_name="policy_model"
    )
    with pytest.raises(GatewayProcessError, match=r"did not start.*GYM_TEST_MISSING_KEY") as err:
        _run(gateway.start)
    assert isinstance(err.value, UserError)  # the command line prints it and exits 1
    assert gateway._process is None


def test_a_dead_child_is_a_clear_error(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with _gateway(tmp_path, "reference") as gateway:
            assert gateway._process is not None
            os.kill(gateway._process.pid, signal.SIGKILL)
            with pytest.raises(GatewayProcessError, match=r"exited \(code -9\)"):
                await gateway.set_reference_script("r-1", [{"text": "x"}])
            with pytest.raises(GatewayProcessError, match=r"exited \(code -9\)"):
                await gateway.set_reference_script("r-2", [{"text": "x"}])  # and stays so

    _run(scenario)


def test_stray_output_on_the_control_channel_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stand_in(monkeypatch, "import sys; sys.stdin.readline(); print('hello', flush=True)")
    gateway = _gateway(tmp_path, "reference")
    with pytest.raises(GatewayProcessError, match="wrote 'hello'"):
        _run(gateway.start)
    assert gateway._process is None  # stopped and reaped


def test_a_silent_child_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gateway_process, "ANSWER_TIMEOUT_S", 0.5)
    _stand_in(monkeypatch, "import sys; sys.stdin.read()")
    gateway = _gateway(tmp_path, "reference")
    with pytest.raises(GatewayProcessError, match=r"did not answer within 0\.5 s"):
        _run(gateway.start)
    assert gateway._process is None


def test_ctrl_c_is_left_to_the_run(tmp_path: Path) -> None:
    """The child ignores SIGINT (sent to the whole group by Ctrl-C); the run stops it."""
    gateway = _gateway(tmp_path, "scripted", script=[{"text": "pong"}])

    async def scenario() -> asyncio.subprocess.Process:
        async with gateway:
            process = gateway._process
            assert process is not None
            os.kill(process.pid, signal.SIGINT)
            assert await _chat(gateway.url_for("r-1")) == "pong"
        return process

    assert _run(scenario).returncode == 0
