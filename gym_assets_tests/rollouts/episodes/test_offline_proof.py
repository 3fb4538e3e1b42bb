"""Offline proof: each installed third-party harness runs one scripted activation
in the harness sandbox against the gateway, completes the scripted shell step, and contacts
nothing but the gateway: its ``network.jsonl`` holds gateway connections and no looked-up name
and no outside attempt beyond the ones listed below for a harness, each with its reason.

The harnesses come from ``$GYM_ASSETS_HARNESSES_DIR/<name>`` (else ``.harnesses/<name>``); each
is started with a minimal offline argv of its own here (the settings docs/harnesses.md gives
for each harness), not through its adapter, so the proof does not depend on one. A harness that
is not installed, or a machine without namespaces, is a skip that says so.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gym_assets.rollouts.episodes.launch import EpisodeFiles, launch_of, run_isolated
from gym_assets.rollouts.gateway import ModelGateway, ScriptedUpstream
from gym_assets.sandbox import SandboxPolicy, SandboxUnavailable

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
HARNESSES = Path(os.environ.get("GYM_ASSETS_HARNESSES_DIR") or REPO / ".harnesses")
TASK = "Run the shell command `echo 391 > answer.txt`, then say done."
TOOL = {"tool": "echo 391 > answer.txt"}
KEY = "sk-offline-proof"


@dataclass(frozen=True)
class Offline:
    """How this test starts a harness offline: its program in the install folder, the config
    it gets (``configure(home, base_url, model) -> (args, env)``), the script it is answered
    with, and the outside names it is known to look up whatever it is told, with why."""

    program: str
    configure: Callable[[Path, str, str], tuple[list[str], dict[str, str]]]
    script: list[dict] = field(default_factory=lambda: [TOOL, {"text": "done"}])
    known_lookups: dict[str, str] = field(default_factory=dict)


def _codex(home: Path, base_url: str, model: str) -> tuple[list[str], dict[str, str]]:
    codex_home = home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        f'model = "{model}"\nmodel_provider = "gateway"\nweb_search = "disabled"\n'
        "[analytics]\nenabled = false\n[feedback]\nenabled = false\n"
        f'[model_providers.gateway]\nname = "gateway"\nbase_url = "{base_url}"\n'
        'env_key = "OPENAI_API_KEY"\nwire_api = "responses"\n'
    )
    flags = ["plugins", "remote_plugin", "apps", "in_app_updates", "goals", "multi_agent"]
    args = ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
    args += [arg for flag in flags for arg in ("--disable", flag)]
    return [*args, "--json", TASK], {"CODEX_HOME": str(codex_home)}


def _pi(home: Path, base_url: str, model: str) -> tuple[list[str], dict[str, str]]:
    agent = home / "agent"
    agent.mkdir()
    provider = {
        "baseUrl": base_url,
        "api": "openai-completions",
        "apiKey": "OPENAI_API_KEY",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": model, "contextWindow": 128000, "maxTokens": 4096}],
    }
    (agent / "models.json").write_text(json.dumps({"providers": {"gateway": provider}}))
    args = ["-p", "--mode", "json", "--provider", "gateway", "--model", model, TASK]
    return args, {"PI_CODING_AGENT_DIR": str(agent), "PI_OFFLINE": "1"}


def _opencode(home: Path, base_url: str, model: str) -> tuple[list[str], dict[str, str]]:
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "gateway",
        "options": {"baseURL": base_url, "apiKey": KEY},
        "models": {model: {"name": model, "limit": {"context": 128000, "output": 4096}}},
    }
    config = {
        "provider": {"gateway": provider},
        "model": f"gateway/{model}",
        "small_model": f"gateway/{model}",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"bash": "allow", "edit": "allow", "webfetch": "deny"},
    }
    (home / "opencode.json").write_text(json.dumps(config))
    env = {"OPENCODE_CONFIG": str(home / "opencode.json")}
    for setting in ("MODELS_FETCH", "AUTOUPDATE", "LSP_DOWNLOAD", "DEFAULT_PLUGINS", "SHARE"):
        env[f"OPENCODE_DISABLE_{setting}"] = "true"
    return ["run", "--pure", "--format", "json", "-m", f"gateway/{model}", TASK], env


def _hermes(home: Path, base_url: str, model: str) -> tuple[list[str], dict[str, str]]:
    hermes_home = home / ".hermes"
    hermes_home.mkdir()
    (hermes_home / "config.yaml").write_text(
        f"model:\n  provider: custom\n  default: {model}\n  base_url: {base_url}\n"
        f"  api_key: {KEY}\n"
    )
    args = ["-z", TASK, "--yolo", "--usage-file", str(home / "usage.json")]
    return args, {"HERMES_HOME": str(hermes_home)}


def _mini(home: Path, base_url: str, model: str) -> tuple[list[str], dict[str, str]]:
    args = ["-m", f"openai/{model}", "-t", TASK, "-y", "--exit-immediately"]
    args += ["-o", str(home / "traj.json"), "-c", "mini.yaml"]
    args += ["-c", f"model.model_kwargs.api_base={base_url}"]
    env = {
        "MSWEA_CONFIGURED": "true",
        "MSWEA_GLOBAL_CONFIG_DIR": str(home / "mini"),
        "MSWEA_COST_TRACKING": "ignore_errors",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    return args, env


HARNESS_RUNS = {
    "codex": Offline("node_modules/.bin/codex", _codex),
    "pi": Offline("node_modules/.bin/pi", _pi),
    "opencode": Offline(
        "node_modules/.bin/opencode",
        _opencode,
        known_lookups={
            "registry.npmjs.org": "opencode 1.18.33 asks the npm registry about its provider "
            "and plugin packages even with --pure and every OPENCODE_DISABLE_* setting; the "
            "lookup fails and it goes on with the copy it bundles",
        },
    ),
    "hermes": Offline(
        "bin/hermes",
        _hermes,
        known_lookups={
            "openrouter.ai": "hermes-agent 0.19.0 fetches OpenRouter's model metadata "
            "(agent/model_metadata.py) whatever the provider, with no setting to stop it; "
            "it goes on without it",
        },
    ),
    "mini": Offline(
        "bin/mini",
        _mini,
        script=[TOOL, {"tool": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}],
    ),
}


@pytest.fixture(scope="module")
def isolation():
    try:
        resolved = SandboxPolicy().isolation()
    except SandboxUnavailable as exc:
        pytest.skip(f"no namespaces for the harness sandbox here: {exc}")
    return resolved


@pytest.mark.parametrize("name", sorted(HARNESS_RUNS))
def test_the_harness_runs_offline_in_the_sandbox(name, isolation, tmp_path) -> None:
    offline = HARNESS_RUNS[name]
    program = HARNESSES / name / offline.program
    if not program.exists():
        pytest.skip(
            f"{name} is not installed under {HARNESSES} (gym-assets harness install {name}, "
            "or set GYM_ASSETS_HARNESSES_DIR to a folder holding it)"
        )
    files = EpisodeFiles(tmp_path / "activation").create()
    with ModelGateway(ScriptedUpstream(offline.script), tmp_path / "capture") as gateway:
        base_url = gateway.url_for("proof", "root")
        args, env = offline.configure(files.home, base_url, gateway.model_name)
        launch = launch_of(
            [str(program), *args],
            files,
            base_url=base_url,
            model=gateway.model_name,
            model_server=gateway.model_server_name,
            prompt=TASK,
            invocation_id="root",
            extra_env=env,
        )
        records: list[dict] = []
        run = run_isolated(
            launch,
            isolation,
            files,
            gateway_url=base_url,
            sandbox_id=f"proof/{name}",
            records=records,
            read_only=[HARNESSES / name],
        )
        exit_code = asyncio.run(asyncio.wait_for(run, 240))
    log_tail = files.log.read_text(errors="replace")[-2000:]
    assert exit_code == 0, log_tail
    (record,) = records
    assert record["provider"] == "bwrap" and record["outcome"] == "completed"
    # The scripted shell step ran in the sandbox's workspace: the activation completed.
    assert (files.workdir / "answer.txt").read_text().strip() == "391", log_tail
    network = [json.loads(line) for line in (files.root / "network.jsonl").open()]
    assert network[0]["event"] == "sandbox_ready"
    events = network[1:]
    gateway_port = base_url.split("/")[2]
    assert {e["to"] for e in events if e["event"] == "gateway_connection"} == {gateway_port}
    looked_up = {e["name"] for e in events if e["event"] == "dns_query"}
    assert looked_up <= set(offline.known_lookups), network
    assert [e for e in events if e["event"] == "blocked_connection"] == [], network
