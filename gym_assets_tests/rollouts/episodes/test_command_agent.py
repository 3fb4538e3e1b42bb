"""The ``command`` harness agent: its launch contract, process supervision and what counts as
its result (docs/harnesses.md). Every program here is a real child process talking real HTTP
to a real gateway, in the harness sandbox (and supervision also without it, as under
``--allow-unsandboxed``)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import psutil
import pytest

from gym_assets.records.episode import EpisodeId, TaskId
from gym_assets.rollouts.episodes.failures import ModelRequestFailed, classify
from gym_assets.rollouts.episodes.launch import DUMMY_API_KEY, base_environment
from gym_assets.rollouts.gateway import ModelGateway, ScriptedUpstream
from gym_assets.sandbox import Isolation
from gym_assets.servers.responses_api_agents.command_agent.app import (
    CommandAgent,
    HarnessWroteNothing,
    Settings,
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

def spawn_sleepers():  # a duration no other process has: pids differ inside a sandbox
    duration = "300.%06d" % int.from_bytes(os.urandom(3), "big")
    subprocess.Popen(["sleep", duration])
    subprocess.Popen(["sleep", duration], start_new_session=True)
    with open("sleepers.json", "w") as out:
        json.dump(duration, out)
"""


def program(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "program.py"
    path.write_text(PRELUDE + textwrap.dedent(body))
    return [sys.executable, str(path)]


def agent(
    gateway: ModelGateway,
    command: list[str],
    tmp_path: Path,
    isolation: Isolation | None = None,
    **settings: Any,
):
    """The agent in the run's sandbox, or under ``isolation`` when given."""
    episodes = tmp_path / "episodes"
    config = {"command": command, "episodes_dir": str(episodes), **settings}
    if isolation is None:
        made = create("agent", config, gateway=gateway, resources=None)
    else:
        made = CommandAgent("agent", Settings.model_validate(config), gateway, isolation)
    return made, episodes / EPISODE.capture_key / "root"


@pytest.fixture(params=["bwrap", "none"])
def isolation(request) -> Isolation | None:
    """Supervision holds in the sandbox (where its PID namespace also ends every descendant)
    and as the outer net on its own."""
    return None if request.param == "bwrap" else Isolation("none")


async def _activate(made: CommandAgent) -> dict[str, Any]:
    await made.seed_session("as", EPISODE, TASK)
    return await made.activate("as", PARAMS)


def sleeping(workspace: Path) -> list[psutil.Process]:
    """The live sleepers ``spawn_sleepers`` started (a zombie left to its parent is not)."""
    duration = json.loads((workspace / "sleepers.json").read_text())
    found = []
    for process in psutil.process_iter():
        try:
            if process.cmdline() == ["sleep", duration] and process.status() != "zombie":
                found.append(process)
        except psutil.Error:
            continue
    return found


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


def test_every_descendant_is_killed_when_the_program_exits(
    start_gateway, tmp_path, isolation
) -> None:
    command = program(
        tmp_path,
        """
        spawn_sleepers()
        time.sleep(1.5)  # long enough for the supervisor to have seen both children
        bundle()
        """,
    )
    made, root = agent(start_gateway(ScriptedUpstream(DONE)), command, tmp_path, isolation)
    asyncio.run(_activate(made))
    assert sleeping(root / "workspace") == []


def test_the_wall_time_stops_the_program_and_reports_wall_time(
    start_gateway, tmp_path, isolation
) -> None:
    command = program(
        tmp_path,
        """
        bundle(status="incomplete")
        spawn_sleepers()
        time.sleep(600)
        """,
    )
    gateway = start_gateway(ScriptedUpstream(DONE))
    made, root = agent(gateway, command, tmp_path, isolation, wall_time_s=2.0)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        response = await _activate(made)
        return response, await made.close_session("as", EPISODE)

    response, receipt = asyncio.run(scenario())
    assert response["status"] == "incomplete"
    assert response["metadata"]["ng_termination_reason"] == "wall_time"
    assert sleeping(root / "workspace") == []
    invocation, sandbox = receipt["agent_observations"]["records"]  # as written before the stop
    assert invocation["status"] == "incomplete"
    assert sandbox["outcome"] == "cancelled" and sandbox["provider"] == made.isolation.kind


def test_close_stops_a_running_program_and_reports_cancelled(
    start_gateway, tmp_path, isolation
) -> None:
    command = program(tmp_path, "spawn_sleepers()\ntime.sleep(600)\n")
    made, root = agent(start_gateway(ScriptedUpstream(DONE)), command, tmp_path, isolation)
    pids_file = root / "workspace" / "sleepers.json"

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
    assert sleeping(root / "workspace") == []
    # It wrote no bundle before it was stopped: a gap says so, nothing is made up.
    observations = receipt["agent_observations"]
    assert [record["kind"] for record in observations["records"]] == ["sandbox"]
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
    assert [record["kind"] for record in observations["records"]] == ["sandbox"]


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
    assert [record["kind"] for record in observations["records"]] == ["sandbox", "sandbox"]
    assert observations["gaps"][0]["detail"].startswith("the activations' bundles do not merge")
