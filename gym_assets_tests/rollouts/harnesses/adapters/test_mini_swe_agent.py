"""The mini-swe-agent adapter: its config and argv, the bundle it reads from real ``traj.json``
files (fixtures recorded from mini-swe-agent 2.4.6 against a scripted gateway), and, when mini
is installed, the real program through the seven conformance scenarios.

Fixtures (``fixtures/mini_swe_agent/``; machine paths and ports scrubbed):
``submitted`` — ``echo 391 > answer.txt``, then the answer ``391`` with the submit command;
``tool_failed`` — a command exiting 7, then a submit; ``bad_request`` — one command, then
HTTP 400 on every try (mini gives up after three); ``format_errors`` — one command, then a
plain text answer three times (mini asks again each time, then stops);
``responses_submitted`` and ``responses_format_errors`` — the same with ``--model-class
litellm_response`` (the latter after a command exiting 7).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gym_assets.config.loader import load_configs
from gym_assets.records.evidence import AgentObservations
from gym_assets.rollouts.episodes.launch import EpisodeFiles
from gym_assets.rollouts.harnesses.adapters import ADAPTER_MODULES, CliEpisode, adapter_named
from gym_assets.rollouts.harnesses.adapters.mini_swe_agent import SUBMIT_COMMAND, trajectory_path
from gym_assets.rollouts.run import finishing
from gym_assets.suite.run import SuiteSummary, run_suite
from gym_assets.suite.scenarios import SCENARIO_NAMES
from gym_assets_tests.rollouts.harnesses.adapters.installed import REPO, installed_harness

FIXTURES = Path(__file__).parent / "fixtures" / "mini_swe_agent"
ADAPTER = adapter_named("mini_swe_agent")
SERVER = "policy_model"


def _episode(root: Path, **changes: Any) -> CliEpisode:
    fields: dict[str, Any] = {
        "files": EpisodeFiles(root).create(),
        "base_url": "http://127.0.0.1:8000/ng-rollout/0-0/invocation/root/v1",
        "model": "policy",
        "model_server": SERVER,
        "prompt": "Compute 17*23 and write only the number to answer.txt",
        "invocation_id": "root",
        "install_dir": Path("/opt/harnesses/mini_swe_agent"),
        "api": "chat",
        "stream": False,
        "offline_env": {"LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        "offline_args": (),
    }
    return CliEpisode(**{**fields, **changes})


def _read(tmp_path: Path, fixture: str, exit_code: int | None = 0) -> dict[str, Any]:
    episode = _episode(tmp_path / "activation")
    path = trajectory_path(episode.files)
    path.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / f"{fixture}.traj.json", path)
    bundle = ADAPTER.observations(episode, exit_code)
    return AgentObservations.model_validate(bundle).model_dump(mode="json")  # valid as written


def _parts(bundle: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    invocation, *tools = bundle["records"]
    assert invocation["kind"] == "agent_invocation" and invocation["invocation_id"] == "root"
    assert all(tool["kind"] == "tool_call" for tool in tools)
    return invocation, tools


def _response_ids(fixture: str) -> list[str]:
    """The ids of the model replies mini kept in the file (``extra.response.id``)."""
    messages = json.loads((FIXTURES / f"{fixture}.traj.json").read_text())["messages"]
    kept = [m.get("extra", {}).get("response") for m in messages]
    return [response["id"] for response in kept if isinstance(response, dict)]


def test_prepare_points_mini_at_the_gateway_with_its_offline_profile(tmp_path: Path) -> None:
    episode = _episode(tmp_path / "activation", offline_args=("--cost-limit", "0"))
    prepared = ADAPTER.prepare(episode)
    argv = list(prepared.argv)
    assert argv[0] == "/opt/harnesses/mini_swe_agent/bin/mini"
    assert argv[argv.index("-t") + 1] == episode.prompt
    assert argv[argv.index("-o") + 1] == str(trajectory_path(episode.files))
    assert {"-y", "--exit-immediately"} <= set(argv) and argv[-2:] == ["--cost-limit", "0"]
    configs = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-c"]
    assert configs[0] == "mini.yaml"  # ours is merged over mini's own defaults
    ours = yaml.safe_load(Path(configs[1]).read_text())
    assert ours["model"] == {
        "model_name": "openai/policy",
        "model_kwargs": {"api_base": episode.base_url},
    }
    assert "environment" not in ours  # commands run in mini's cwd, the workspace
    assert SUBMIT_COMMAND in ours["agent"]["instance_template"]
    assert "{{task}}" in ours["agent"]["instance_template"]
    assert prepared.env["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"
    assert prepared.env["MSWEA_CONFIGURED"] == "true"
    # everything it writes stays in the activation's private home
    assert Path(prepared.env["MSWEA_GLOBAL_CONFIG_DIR"]).is_relative_to(episode.files.home)
    assert Path(configs[1]).is_relative_to(episode.files.home)
    assert "--model-class" not in argv  # Chat Completions: mini's default model class
    responses = ADAPTER.prepare(_episode(tmp_path / "responses", api="responses")).argv
    assert responses[responses.index("--model-class") + 1] == "litellm_response"


def test_a_submitted_run_is_completed_with_its_conversation_and_tools(tmp_path: Path) -> None:
    invocation, tools = _parts(_read(tmp_path, "submitted"))
    assert invocation["status"] == "completed"
    conversation = invocation["conversation"]
    assert [(i["type"], i.get("role")) for i in conversation] == [
        ("message", "system"),
        ("message", "user"),  # mini's rendering of our instructions around the task
        ("function_call", None),
        ("function_call_output", None),
        ("message", "assistant"),  # the final answer, in the reply that submits
        ("function_call", None),
        ("function_call_output", None),
    ]
    assert "Compute 17*23" in conversation[1]["content"]
    assert json.loads(conversation[2]["arguments"]) == {"command": "echo 391 > answer.txt"}
    assert conversation[4]["content"] == [{"type": "output_text", "text": "391"}]
    assert json.loads(conversation[5]["arguments"]) == {"command": SUBMIT_COMMAND}
    calls = [item["call_id"] for item in conversation if item["type"] == "function_call"]
    outputs = [item["call_id"] for item in conversation if item["type"] == "function_call_output"]
    assert calls == outputs == [tool["tool_call_id"] for tool in tools]
    assert json.loads(conversation[3]["output"]) == {"returncode": 0, "output": ""}
    # mini files its submit command as "not executed"; its Submitted exit says it ran
    assert "action was not executed" in conversation[6]["output"]
    assert [(t["tool_name"], t["status"]) for t in tools] == [("bash", "completed")] * 2
    assert all(t["timing_source"] == "artifact" and t["completed_at"] > 0 for t in tools)
    # every model reply mini kept is referenced by its response id, nothing else
    refs = invocation["model_calls"]
    assert [ref["response_id"] for ref in refs] == _response_ids("submitted")
    assert len(refs) == 2 and all(ref["model_ref"]["name"] == SERVER for ref in refs)


def test_a_command_exiting_non_zero_is_a_failed_tool(tmp_path: Path) -> None:
    invocation, tools = _parts(_read(tmp_path, "tool_failed"))
    assert invocation["status"] == "completed"
    assert [t["status"] for t in tools] == ["failed", "completed"]
    assert json.loads(invocation["conversation"][3]["output"]) == {
        "returncode": 7,
        "output": "oops\n",
    }


def test_a_permanent_http_error_is_the_failure_mini_recorded_whatever_the_exit(
    tmp_path: Path,
) -> None:
    """Three 400s (mini's retries) are not in the file; its exit message names the error."""
    for exit_code in (1, 0):
        invocation, tools = _parts(_read(tmp_path / str(exit_code), "bad_request", exit_code))
        assert (invocation["status"], invocation["error_type"]) == ("failed", "BadRequestError")
        assert [t["status"] for t in tools] == ["completed"]
        assert [ref["response_id"] for ref in invocation["model_calls"]] == _response_ids(
            "bad_request"
        )


def test_replies_mini_refused_stay_in_the_conversation(tmp_path: Path) -> None:
    """A text answer without a tool call is a format error to mini: it drops the reply from
    what it sends next, keeps it beside its correction, and stops after the third."""
    invocation, _ = _parts(_read(tmp_path, "format_errors"))
    assert (invocation["status"], invocation["error_type"]) == ("failed", "RepeatedFormatError")
    conversation = invocation["conversation"]
    tail = [(item.get("role"), item["content"]) for item in conversation[4:]]
    refused = ("assistant", [{"type": "output_text", "text": "391"}])
    assert [role for role, _ in tail] == ["assistant", "user"] * 3
    assert all(entry == refused for entry in tail[0::2])
    assert all("No tool calls found" in content for _, content in tail[1::2])
    assert len(invocation["model_calls"]) == 4 == len(_response_ids("format_errors"))


def test_with_the_responses_api_the_server_ids_are_read_out_of_litellms(tmp_path: Path) -> None:
    """``--model-class litellm_response`` keeps each reply as a whole Responses object under an
    id litellm made (``resp_`` + base64 of ``litellm:...;response_id:<the server's id>``)."""
    messages = json.loads((FIXTURES / "responses_submitted.traj.json").read_text())["messages"]
    kept = [m["id"] for m in messages if m.get("object") == "response"]
    assert all(rid.startswith("resp_bGl0ZWxsbT") for rid in kept)  # "litellm" in base64
    invocation, tools = _parts(_read(tmp_path, "responses_submitted"))
    assert invocation["status"] == "completed"
    ids = [ref["response_id"] for ref in invocation["model_calls"]]
    assert [re.fullmatch(r"resp_[0-9a-f]{24}_t(\d)", rid)[1] for rid in ids] == ["0", "1"]
    conversation = invocation["conversation"]
    assert [(i["type"], i.get("role")) for i in conversation[2:]] == [
        ("function_call", None),
        ("function_call_output", None),
        ("message", "assistant"),
        ("function_call", None),
        ("function_call_output", None),
    ]
    assert conversation[4]["content"] == [{"type": "output_text", "text": "391"}]
    assert [t["status"] for t in tools] == ["completed", "completed"]


def test_with_the_responses_api_refused_replies_and_failed_tools_are_kept(tmp_path: Path) -> None:
    invocation, tools = _parts(_read(tmp_path, "responses_format_errors"))
    assert (invocation["status"], invocation["error_type"]) == ("failed", "RepeatedFormatError")
    assert [t["status"] for t in tools] == ["failed"]
    refused = [
        item["content"]
        for item in invocation["conversation"]
        if item.get("role") == "assistant" and item["type"] == "message"
    ]
    assert refused == [[{"type": "output_text", "text": "391"}]] * 3
    assert len(invocation["model_calls"]) == 4


@pytest.mark.parametrize(("content", "said"), [(None, "wrote no traj.json"), ("{", "is not a")])
def test_a_missing_or_broken_trajectory_is_a_gap(tmp_path: Path, content, said) -> None:
    episode = _episode(tmp_path / "activation")
    if content is not None:
        trajectory_path(episode.files).parent.mkdir(parents=True)
        trajectory_path(episode.files).write_text(content)
    bundle = ADAPTER.observations(episode, None)
    assert bundle["records"] == []
    [gap] = bundle["gaps"]
    assert gap["code"] == "agent_observations_invalid" and said in gap["detail"]


def test_a_run_stopped_before_mini_recorded_an_exit_is_incomplete(tmp_path: Path) -> None:
    episode = _episode(tmp_path / "activation")
    messages = json.loads((FIXTURES / "submitted.traj.json").read_text())["messages"][:4]
    trajectory_path(episode.files).parent.mkdir(parents=True)
    trajectory_path(episode.files).write_text(json.dumps({"messages": messages}))
    invocation = ADAPTER.observations(episode, None)["records"][0]
    assert invocation["status"] == "incomplete"


def test_a_reference_answer_is_played_with_minis_submit_command() -> None:
    steps = [{"call": "calculate", "args": {}, "tool": "python3 -c 'print(1)'"}, {"text": "1"}]
    assert finishing(steps, ADAPTER.finish_command) == [
        steps[0],
        {"text": "1", "tool": SUBMIT_COMMAND},
    ]
    assert finishing(steps, None) == steps  # a harness a text reply ends


def test_every_adapter_says_how_its_episode_ends() -> None:
    """A reference run asks each cli harness's adapter; one that forgot would fail there."""
    for name in ADAPTER_MODULES:
        finish = adapter_named(name).finish_command
        assert finish is None or (isinstance(finish, str) and finish), name
    assert ADAPTER.finish_command == SUBMIT_COMMAND


# --------------------------------------------------------------------------- the real program


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SuiteSummary]:
    installed_harness("mini_swe_agent")
    output = tmp_path_factory.mktemp("conformance") / "run"
    yield run_suite(
        load_configs(REPO / "configs"),
        harnesses=["mini_swe_agent"],
        scenarios=None,
        output=output,
        timeout_s=90,
        jobs=2,
        configs=str(REPO / "configs"),
    )


def _scenario_dir(suite: SuiteSummary, scenario: str) -> Path:
    return Path(suite.output) / "mini_swe_agent" / scenario


@pytest.mark.slow
def test_mini_through_the_seven_conformance_scenarios(suite: SuiteSummary) -> None:
    """What is true of mini-swe-agent 2.4.6 (docs/harnesses.md has the table): it keeps every
    exchange, tool and retry as the checks want, but it ends an episode only through its submit
    command. The scripted provider's final answer is plain text, a format error to mini, so mini
    asks again after it (HTTP 409 from the provider, retried until mini gives up): the episode
    ends on a failed call and no answer reaches the verifier. With a 400 on every try it stops
    without asking for more, and that scenario meets the gate."""
    assert (Path(suite.output) / "conformance_report.md").is_file()
    results = {s.scenario: s for s in suite.harnesses["mini_swe_agent"].scenarios}
    assert set(results) == set(SCENARIO_NAMES)
    assert results["model_error"].verdict == "fulfilled"
    assert not results["model_error"].failing_checks
    answered = set(SCENARIO_NAMES) - {"model_error"}
    for name in answered:
        failing = set(results[name].failing_checks)
        assert {"model.protocol", "verifier.answer"} <= failing, name
        witness = json.loads((_scenario_dir(suite, name) / "witness.json").read_text())
        assert "a model request arrived after the final answer" in witness["violations"]
        assert witness["finished"] and not witness["verifications"]
    # The 400 is recorded in mini's own file and so in its bundle.
    [observations] = _scenario_dir(suite, "model_error").glob("harness/*/root/observations.json")
    invocation = json.loads(observations.read_text())["records"][0]
    assert (invocation["status"], invocation["error_type"]) == ("failed", "BadRequestError")
