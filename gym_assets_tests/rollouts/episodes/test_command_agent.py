"""The ``command`` harness agent: its launch contract, process supervision and what counts as
its result (docs/harnesses.md). Every program here is a real child process talking real HTTP
to a real gateway."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from gym_assets.rollouts.episodes.failures import ModelRequestFailed, classify
from gym_assets.rollouts.episodes.launch import DUMMY_API_KEY, base_environment
from gym_assets.rollouts.gateway import ModelGateway, ScriptedUpstream
from gym_assets.rollouts.protocol import EpisodeId, TaskId
from gym_assets.servers.responses_api_agents.command_agent.app import (
    CommandAgent,
    HarnessWroteNothing,
    create,
)

EPISODE = EpisodeId(rollout_id="r1")
TASK = TaskId(taskset="t", task_id="1")
PARAMS = {"input": [{"role": "user", "content": "Say DONE."}]}
DONE = [{"text": "DONE"}]

# Shared by the programs below: write a bundle whose one invocation says ``status``.
PRELUDE = """
import json, os, subprocess, sys, time, urllib.error, urllib.request
E = os.environ

def bundle(status="completed", conversation=()):
    invocation = {"kind": "agent_invocation", "invocation_id": E["GYM_INVOCATION_ID"],
                  "status": status, "model_calls": [], "conversation": list(conversation)}
    with open(E["GYM_OBSERVATIONS_PATH"], "w") as out:
        json.dump({"source": "test_program", "records": [invocation]}, out)

def ask(text):
    body = json.dumps({"model": E["GYM_MODEL"], "input": text}).encode()
    headers = {"Content-Type": "application/json", "x-session-id": E["GYM_INVOCATION_ID"]}
    request = urllib.request.Request(E["GYM_BASE_URL"] + "/responses", body, headers)
    with urllib.request.urlopen(request) as reply:
        return json.load(reply)

def spawn_sleepers():
    grouped = subprocess.Popen(["sleep", "300"])
    escaped = subprocess.Popen(["sleep", "300"], start_new_session=True)
    with open("pids.json", "w") as out:
        json.dump([grouped.pid, escaped.pid], out)
"""


def program(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "program.py"
    path.write_text(PRELUDE + textwrap.dedent(body))
    return [sys.executable, str(path)]


def agent(gateway: ModelGateway, command: list[str], tmp_path: Path, **settings: Any):
    episodes = tmp_path / "episodes"
    made = create(
        "agent",
        {"command": command, "episodes_dir": str(episodes), **settings},
        gateway=gateway,
        resources=None,
    )
    return made, episodes / EPISODE.capture_key / "root"


async def _activate(made: CommandAgent) -> dict[str, Any]:
    await made.seed_session("as", EPISODE, TASK)
    return await made.activate("as", PARAMS)


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie left for its parent to reap is not)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return text[text.rindex(")") + 2] not in "ZX"


def test_the_program_gets_the_contract_and_nothing_of_the_parent(
    start_gateway, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    monkeypatch.setenv("GYM_TEST_TOKEN", "parent-token")
    gateway = start_gateway(ScriptedUpstream(DONE))
    command = program(
        tmp_path,
        """
        json.dump({"env": dict(E), "cwd": os.getcwd()}, open("seen.json", "w"))
        print("to stdout"); print("to stderr", file=sys.stderr)
        answer = ask(E["GYM_PROMPT"])
        bundle(conversation=[{"role": "user", "content": E["GYM_PROMPT"]}, *answer["output"]])
        """,
    )
    made, root = agent(gateway, command, tmp_path)
    response = asyncio.run(_activate(made))
    seen = json.loads((root / "workspace" / "seen.json").read_text())
    env = seen["env"]
    home = root / "home"
    assert seen["cwd"] == str(root / "workspace")
    assert env["PATH"] == os.environ["PATH"] and env["HOME"] == str(home)
    assert all(env[k].startswith(str(home)) for k in env if k.startswith("XDG_") or k == "TMPDIR")
    assert env == {
        **base_environment(home),
        "GYM_BASE_URL": gateway.url_for(EPISODE.capture_key),
        "GYM_MODEL": gateway.model_name,
        "GYM_MODEL_SERVER": gateway.model_server_name,
        "GYM_API_KEY": DUMMY_API_KEY,
        "GYM_PROMPT": "Say DONE.",
        "GYM_REQUEST_PATH": str(root / "request.json"),
        "GYM_WORKDIR": str(root / "workspace"),
        "GYM_OBSERVATIONS_PATH": str(root / "observations.json"),
        "GYM_RESPONSE_PATH": str(root / "response.json"),
        "GYM_INVOCATION_ID": "root",
        "OPENAI_BASE_URL": gateway.url_for(EPISODE.capture_key),
        "OPENAI_API_KEY": DUMMY_API_KEY,
    }
    assert json.loads((root / "request.json").read_text()) == PARAMS
    assert sorted((root / "episode.log").read_text().splitlines()) == ["to stderr", "to stdout"]
    # No response.json: the response is what the invocation's conversation gained, with the
    # usage the gateway captured (the scripted first attempt: 20 in, 8 out).
    assert response["usage"] == {"input_tokens": 20, "output_tokens": 8, "total_tokens": 28}
    assert response["status"] == "completed"
    assert [item["type"] for item in response["output"]] == ["message"]
    assert response["metadata"]["ng_harness_exit_code"] == "0"
    receipt = asyncio.run(made.close_session("as", EPISODE))
    assert receipt["agent_observations"]["source"] == "test_program"


def test_every_descendant_is_killed_when_the_program_exits(start_gateway, tmp_path) -> None:
    command = program(
        tmp_path,
        """
        spawn_sleepers()
        time.sleep(1.5)  # long enough for the supervisor to have seen both children
        bundle()
        """,
    )
    made, root = agent(start_gateway(ScriptedUpstream(DONE)), command, tmp_path)
    asyncio.run(_activate(made))
    pids = json.loads((root / "workspace" / "pids.json").read_text())
    assert not any(running(pid) for pid in pids)


def test_the_wall_time_stops_the_program_and_reports_wall_time(start_gateway, tmp_path) -> None:
    command = program(
        tmp_path,
        """
        bundle(status="incomplete")
        spawn_sleepers()
        time.sleep(600)
        """,
    )
    made, root = agent(start_gateway(ScriptedUpstream(DONE)), command, tmp_path, wall_time_s=2.0)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        response = await _activate(made)
        return response, await made.close_session("as", EPISODE)

    response, receipt = asyncio.run(scenario())
    assert response["status"] == "incomplete"
    assert response["metadata"]["ng_termination_reason"] == "wall_time"
    pids = json.loads((root / "workspace" / "pids.json").read_text())
    assert not any(running(pid) for pid in pids)
    (invocation,) = receipt["agent_observations"]["records"]  # what it wrote before the stop
    assert invocation["status"] == "incomplete"


def test_close_stops_a_running_program_and_reports_cancelled(start_gateway, tmp_path) -> None:
    command = program(tmp_path, "spawn_sleepers()\ntime.sleep(600)\n")
    made, root = agent(start_gateway(ScriptedUpstream(DONE)), command, tmp_path)
    pids_file = root / "workspace" / "pids.json"

    async def scenario() -> dict[str, Any]:
        activation = asyncio.create_task(_activate(made))
        while not pids_file.exists():
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # let the supervisor record the children
        receipt = await made.close_session("as", EPISODE)
        await asyncio.wait([activation])
        assert activation.cancelled()
        return receipt

    receipt = asyncio.run(scenario())
    assert receipt["partial_response"]["metadata"]["ng_termination_reason"] == "cancelled"
    assert not any(running(pid) for pid in json.loads(pids_file.read_text()))
    # It wrote no bundle before it was stopped: a gap says so, nothing is made up.
    observations = receipt["agent_observations"]
    assert observations["records"] == []
    assert [gap["code"] for gap in observations["gaps"]] == ["agent_observations_invalid"]


def test_a_nonzero_exit_does_not_undo_what_the_program_wrote(start_gateway, tmp_path) -> None:
    command = program(
        tmp_path,
        """
        answer = ask("hi")
        json.dump({**answer, "usage": {"input_tokens": 1}}, open(E["GYM_RESPONSE_PATH"], "w"))
        bundle()
        sys.exit(3)
        """,
    )
    made, _ = agent(start_gateway(ScriptedUpstream(DONE)), command, tmp_path)
    response = asyncio.run(_activate(made))
    assert response["status"] == "completed" and response["usage"] == {"input_tokens": 1}
    assert response["output"][0]["content"][0]["text"] == "DONE"
    assert response["metadata"]["ng_harness_exit_code"] == "3"


def test_a_failed_model_call_fails_the_activation_whatever_the_exit(
    start_gateway, tmp_path
) -> None:
    command = program(
        tmp_path,
        """
        try:
            ask("hi")
        except urllib.error.HTTPError:
            pass
        bundle(status="completed")  # it claims success and exits 0
        """,
    )
    upstream = ScriptedUpstream([{"error": 400, "times": 9, "message": "bad request"}])
    made, _ = agent(start_gateway(upstream), command, tmp_path)
    with pytest.raises(ModelRequestFailed, match="HTTP 400") as failed:
        asyncio.run(_activate(made))
    assert classify(failed.value, "agent") == (True, "agent_request_failed")
    assert classify(ModelRequestFailed(429, "rate_limit"), "agent") == (
        False,
        "agent_request_failed",
    )


def test_an_invalid_bundle_is_a_gap_and_no_result(start_gateway, tmp_path) -> None:
    command = program(
        tmp_path,
        """
        with open(E["GYM_OBSERVATIONS_PATH"], "w") as out:
            json.dump({"source": "x", "records": [{"kind": "agent_invocation"}]}, out)
        """,
    )
    made, _ = agent(start_gateway(ScriptedUpstream(DONE)), command, tmp_path)

    async def scenario() -> dict[str, Any]:
        with pytest.raises(HarnessWroteNothing, match=r"no usable observations\.json"):
            await _activate(made)
        return await made.close_session("as", EPISODE)

    observations = asyncio.run(scenario())["agent_observations"]
    (gap,) = observations["gaps"]
    assert gap["code"] == "agent_observations_invalid" and "errors" in gap["detail"]
    assert observations["records"] == []


def test_without_an_episodes_dir_the_activation_dirs_are_removed_at_close(
    start_gateway, tmp_path
) -> None:
    command = program(tmp_path, 'bundle()\nprint(os.getcwd())\nopen("/dev/null")\n')
    made = create("agent", {"command": command}, gateway=start_gateway(ScriptedUpstream(DONE)),
                  resources=None)  # fmt: skip

    async def scenario() -> Path:
        await _activate(made)
        (root,) = made._scratch.values()
        assert (root / EPISODE.capture_key / "root" / "episode.log").is_file()
        await made.close_session("as", EPISODE)
        return root

    assert not asyncio.run(scenario()).exists()


def test_an_activation_dir_that_exists_is_refused(start_gateway, tmp_path) -> None:
    made, root = agent(start_gateway(ScriptedUpstream(DONE)), program(tmp_path, ""), tmp_path)
    root.mkdir(parents=True)
    with pytest.raises(FileExistsError):
        asyncio.run(_activate(made))


def test_bundles_of_two_activations_that_clash_are_a_gap(start_gateway, tmp_path) -> None:
    # The program ignores GYM_INVOCATION_ID: both activations report an invocation "root".
    command = program(tmp_path, 'E["GYM_INVOCATION_ID"] = "root"\nbundle()\n')
    made, _ = agent(start_gateway(ScriptedUpstream(DONE)), command, tmp_path)

    async def scenario() -> dict[str, Any]:
        await _activate(made)
        await made.activate("as", {"input": "again"})
        return await made.close_session("as", EPISODE)

    observations = asyncio.run(scenario())["agent_observations"]
    assert observations["records"] == []
    assert observations["gaps"][0]["detail"].startswith("the activations' bundles do not merge")
