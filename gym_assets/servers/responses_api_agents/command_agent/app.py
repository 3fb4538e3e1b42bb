"""The agent of ``kind: command`` harnesses: any program, run once per activation.

The contract (docs/harnesses.md): the program gets the gateway's base URL, a model name, a
dummy key, the task prompt and request, a working directory and the paths where it writes its
``ng_agent_observations`` bundle (required) and its final Responses object (optional), all in
a scrubbed environment (``gym_assets.rollouts.episodes.launch``). It talks to the model only
through the gateway, which captures every exchange.

What the activation returns is what the program wrote plus what the gateway captured — never
its exit code. The response is the program's ``response.json``, or else the items its
invocation's conversation gained after the task input, with the usage the gateway captured.
The bundle is the program's, as written; a missing or invalid one is an
``agent_observations_invalid`` gap, never a record made up on its behalf. Each activation runs
in the run's sandbox (``run_isolated``), whose ``sandbox`` record (ours, not the program's)
joins the bundle either way, so the evidence says what isolation it had; a ``sandbox`` record
the program wrote itself is dropped, with a gap, so none can pose as ours. The sandbox's
network log is kept beside the rollout's capture (``network_logs``). When the gateway's
last exchange of the activation failed, the activation failed with it
(``agent_request_failed``), whatever the program claimed; a program that died of a fault
signal (SIGSEGV, SIGILL, ...) failed too (``agent_crashed``), whatever it wrote; one that
left a file for the run that is not a regular file of at most 64 MiB (a link, a FIFO) is never
followed or blocked on and fails the activation as the model's (``agent_output_refused``); and
one that left no usable bundle (or never ran) has no result to grade, and the activation fails
too.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gym_assets.fileio import atomic_write_text, parse_json_bytes
from gym_assets.records import keys
from gym_assets.records.contracts import GatewayHandle, ResourcesServer
from gym_assets.records.evidence import AgentObservations, GapCode, SandboxObservation
from gym_assets.rollouts.episodes.agents import ActivationSettings, AgentSession, SessionAgent
from gym_assets.rollouts.episodes.failures import (
    HarnessCrashed,
    HarnessKilled,
    HarnessOutputRefused,
    ModelRequestFailed,
    crash_signal,
    death_signal,
)
from gym_assets.rollouts.episodes.launch import EpisodeFiles, launch_of, run_isolated
from gym_assets.rollouts.episodes.network_logs import keep_network_log, network_log_path
from gym_assets.rollouts.episodes.observations import Invocation
from gym_assets.rollouts.episodes.responses import input_items, message_text
from gym_assets.rollouts.gateway import read_capture
from gym_assets.rollouts.gateway.capture import answered
from gym_assets.rollouts.gateway.script import is_assistant_item
from gym_assets.rollouts.harnesses.adapters import Adapter, Api, CliEpisode, adapter_named
from gym_assets.sandbox import Isolation, SandboxPolicy
from gym_assets.untrusted_files import RefusedFile

SANDBOX = "sandbox"  # the kind of the records only the run writes
# What a cli harness is told: the task's instructions (system, developer) and its user text.
INSTRUCTION_ROLES = ("system", "developer", "user")
# Responses usage keys and the capture's token fields they sum.
USAGE_FIELDS = (
    ("input_tokens", "tokens_in"),
    ("output_tokens", "tokens_out"),
    ("total_tokens", "tokens_total"),
)


class AdapterSettings(BaseModel):
    """A ``cli`` harness as the registry hands it over (``harnesses.adapter_settings``)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    install_dir: str
    api: Api
    stream: bool
    offline_env: dict[str, str] = Field(default_factory=dict)
    offline_args: list[str] = Field(default_factory=list)


class Settings(ActivationSettings):
    """``command``: the argv (placeholders already filled by the harness registry), or
    ``adapter``: a ``cli`` harness driven by its adapter, which writes the bundle from what the
    program kept; ``harness``: its registry name (the bundle's source when it writes none);
    ``episodes_dir``: where activation directories go (default: a temporary directory removed
    at close); ``writable_dirs``: host directories the sandboxed program may write besides its
    activation directory (a conformance episode's workspace)."""

    command: list[str] = Field(default_factory=list)
    adapter: AdapterSettings | None = None
    harness: str = "command"
    episodes_dir: str | None = None
    writable_dirs: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_program(self) -> Settings:
        if bool(self.command) == (self.adapter is not None):
            raise ValueError("give exactly one of command (an argv) or adapter (a cli harness)")
        return self


class HarnessDiedUnanswered(RuntimeError):
    """The program died of a signal before the model had answered it: ours, not the model's."""


class HarnessWroteNothing(RuntimeError):
    """The program left no evidence of what it did: the activation has no result to grade."""


class CommandAgent(SessionAgent):
    source = "command_agent"

    def __init__(
        self, name: str, settings: Settings, gateway: GatewayHandle, isolation: Isolation
    ) -> None:
        super().__init__(name, gateway, settings)
        self.settings = settings
        self.isolation = isolation
        self._sandboxes: dict[str, list[dict[str, Any]]] = {}  # capture key → sandbox records
        self._reported: dict[str, list[dict[str, Any]]] = {}  # capture key → bundles
        self._scratch: dict[str, Path] = {}  # capture key → temporary episodes dir

    async def _activate(
        self, session: AgentSession, invocation: Invocation, params: Mapping[str, Any]
    ) -> dict[str, Any]:
        key = session.capture_key
        files = EpisodeFiles(self._episodes_root(key) / key / invocation.invocation_id).create()
        files.request.write_text(json.dumps(dict(params), ensure_ascii=False), encoding="utf-8")
        episode = self._cli_episode(files, key, invocation, params)
        prepared = None if episode is None else self._adapter().prepare(episode)
        base_url = self.gateway.url_for(key) if episode is None else episode.base_url
        launch = launch_of(
            self.settings.command if prepared is None else prepared.argv,
            files,
            base_url=base_url,
            model=self.gateway.model_name,
            model_server=self.gateway.model_server_name,
            prompt=_prompt(params),
            invocation_id=invocation.invocation_id,
            extra_env={} if prepared is None else prepared.env,
        )
        before = len(self._captured(key))
        exit_code: int | None = None
        refused: list[str] = []  # files it left that the run will not read, and why
        written: dict[str, Any] | None = None
        try:
            exit_code = await run_isolated(
                launch,
                self.isolation,
                files,
                gateway_url=base_url,
                sandbox_id=f"{key}/{invocation.invocation_id}",
                records=self._sandboxes.setdefault(key, []),
                read_only=[] if episode is None else [episode.install_dir],
                writable=[Path(d) for d in self.settings.writable_dirs],
            )
        finally:  # stopped or not, what it wrote so far is its evidence
            if self.isolation.kind == "bwrap":  # else the program could have written the log
                kept = network_log_path(self.gateway.capture_dir, key, invocation.invocation_id)
                keep_network_log(files.root, kept)
            if episode is not None:
                try:
                    kept = self._adapter().observations(episode, exit_code)
                except RefusedFile as exc:
                    refused.append(str(exc))
                    kept = _invalid(self.settings.harness, f"its session is refused: {exc}")
                atomic_write_text(files.observations, json.dumps(kept, ensure_ascii=False))
            bundle = _bundle(files, self.settings.harness, refused)
            self._reported.setdefault(key, []).append(bundle)
            written = _written_response(files, refused)
            session.partial_response = _response(written, bundle, invocation, params)
        crashed = crash_signal(exit_code)
        if crashed is not None:
            raise HarnessCrashed(
                f"the harness was killed by {crashed.name} (exit code {exit_code}); see {files.log}"
            )
        calls = self._captured(key)[before:]
        if calls and not answered(calls[-1]):
            raise ModelRequestFailed(calls[-1].get("status_code"), calls[-1].get("error_category"))
        if refused:
            raise HarnessOutputRefused("; ".join(refused))
        killer = death_signal(exit_code)
        if killer is not None:
            raise (HarnessKilled if any(map(answered, calls)) else HarnessDiedUnanswered)(
                f"the harness died of {killer.name} (exit code {exit_code}); see {files.log}"
            )
        if not bundle["records"]:
            raise HarnessWroteNothing(
                f"the harness wrote no usable {files.observations.name} (exit code {exit_code}); "
                f"see {files.log}"
            )
        response = session.partial_response
        if written is None:
            response = {**response, "usage": _captured_usage(calls)}
        metadata = {
            **(response.get("metadata") or {}),
            keys.TERMINATION_REASON: "completed",
            keys.HARNESS_EXIT_CODE: str(exit_code),
        }
        return {**response, "metadata": metadata}

    def _observations(self, session: AgentSession) -> dict[str, Any]:
        bundles = self._reported.pop(session.capture_key, [])
        sandboxes = self._sandboxes.pop(session.capture_key, [])
        scratch = self._scratch.pop(session.capture_key, None)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        source = bundles[0]["source"] if bundles else self.settings.harness
        merged = {
            "source": source,
            "records": [record for bundle in bundles for record in bundle["records"]],
            "gaps": [gap for bundle in bundles for gap in bundle["gaps"]],
        }
        try:
            kept = AgentObservations.model_validate(merged).model_dump(mode="json")
        except ValidationError as exc:  # e.g. two activations reusing one invocation id
            detail = f"the activations' bundles do not merge ({exc.error_count()} errors)"
            kept = _invalid(source, detail)
        ours = [SandboxObservation.model_validate(r).model_dump(mode="json") for r in sandboxes]
        kept = _without_posing(kept)
        return {**kept, "records": [*kept["records"], *ours]}

    def _adapter(self) -> Adapter:
        assert self.settings.adapter is not None
        return adapter_named(self.settings.adapter.name)

    def _cli_episode(
        self, files: EpisodeFiles, key: str, invocation: Invocation, params: Mapping[str, Any]
    ) -> CliEpisode | None:
        """The activation as the adapter sees it (None for a plain command harness). Its base
        URL names the invocation, so the gateway gives it every call the program makes."""
        adapter = self.settings.adapter
        if adapter is None:
            return None
        return CliEpisode(
            files=files,
            base_url=self.gateway.url_for(key, invocation.invocation_id),
            model=self.gateway.model_name,
            model_server=self.gateway.model_server_name,
            prompt=_prompt(params, INSTRUCTION_ROLES),
            invocation_id=invocation.invocation_id,
            install_dir=Path(adapter.install_dir),
            api=adapter.api,
            stream=adapter.stream,
            offline_env=adapter.offline_env,
            offline_args=tuple(adapter.offline_args),
        )

    def _episodes_root(self, key: str) -> Path:
        if self.settings.episodes_dir is not None:
            return Path(self.settings.episodes_dir)
        if key not in self._scratch:
            self._scratch[key] = Path(tempfile.mkdtemp(prefix="gym-harness-"))
        return self._scratch[key]

    def _captured(self, key: str) -> list[dict[str, Any]]:
        return read_capture(self.gateway.capture_dir, key, include_payloads=False)["calls"]


def _prompt(params: Mapping[str, Any], roles: tuple[str, ...] = ("user",)) -> str:
    """The task's text: every message of the input in ``roles`` (default: the user's), in
    order. A ``cli`` harness gets only this text, so it gets the task's instructions too."""
    items = input_items(params)
    return "\n\n".join(message_text(item) for item in items if item.get("role") in roles)


def _captured_usage(calls: list[dict[str, Any]]) -> dict[str, int] | None:
    """The activation's usage as the gateway captured it: the sum over its answered calls,
    or None when any count is unknown (never a zero for a count nobody reported)."""
    ok = [call for call in calls if answered(call)]
    usage: dict[str, int] = {}
    for key, field in USAGE_FIELDS:
        counts = [count for call in ok if isinstance(count := call.get(field), int)]
        if not ok or len(counts) < len(ok):
            return None
        usage[key] = sum(counts)
    return usage


def _bundle(files: EpisodeFiles, harness: str, refused: list[str]) -> dict[str, Any]:
    """The program's bundle as it wrote it; missing or invalid: an empty one with a gap (and
    one the run will not read is also added to ``refused``)."""
    path = files.observations
    try:
        data = parse_json_bytes(files.read(path))
        return AgentObservations.model_validate(data).model_dump(mode="json")
    except FileNotFoundError:
        detail = f"the harness wrote no {path.name}"
    except RefusedFile as exc:
        refused.append(str(exc))
        detail = f"{path.name} is refused: {exc}"
    except (OSError, ValueError) as exc:  # ValidationError and JSON errors are ValueErrors
        count = exc.error_count() if isinstance(exc, ValidationError) else 1
        detail = f"{path.name} is not an ng_agent_observations bundle ({count} errors)"
    return _invalid(harness, detail)


def _without_posing(bundle: dict[str, Any]) -> dict[str, Any]:
    """The program's bundle without the ``sandbox`` records it wrote: those say how the run
    isolated it, so only the run writes them; each one dropped is a gap."""
    posing = [r for r in bundle["records"] if r.get("kind") == SANDBOX]
    if not posing:
        return bundle
    detail = (
        f"the harness wrote {len(posing)} sandbox record(s); only the run writes those, so "
        "they were dropped"
    )
    gap = {"code": GapCode.AGENT_OBSERVATIONS_INVALID.value, "detail": detail}
    kept = [r for r in bundle["records"] if r.get("kind") != SANDBOX]
    return {**bundle, "records": kept, "gaps": [*bundle["gaps"], gap]}


def _invalid(source: str, detail: str) -> dict[str, Any]:
    """A bundle holding only the gap that says why the program's own could not be kept."""
    gap = {"code": GapCode.AGENT_OBSERVATIONS_INVALID.value, "detail": detail}
    return {"source": source, "records": [], "gaps": [gap]}


def _written_response(files: EpisodeFiles, refused: list[str]) -> dict[str, Any] | None:
    """The program's ``response.json`` when it wrote an object with an ``output`` list (one
    the run will not read is added to ``refused``)."""
    try:
        written = parse_json_bytes(files.read(files.response))
    except RefusedFile as exc:
        refused.append(str(exc))
        return None
    except (OSError, ValueError):
        return None
    if isinstance(written, dict) and isinstance(written.get("output"), list):
        return written
    return None


def _response(
    written: dict[str, Any] | None,
    bundle: Mapping[str, Any],
    invocation: Invocation,
    params: Mapping[str, Any],
) -> dict[str, Any]:
    """The program's own response when it wrote one; else the items its invocation's
    conversation gained after the task input, ``completed`` when the invocation says so."""
    if written is not None:
        return written
    reported = next(
        (
            record
            for record in bundle["records"]
            if record.get("kind") == "agent_invocation"
            and record.get("invocation_id") == invocation.invocation_id
        ),
        {},
    )
    output = _gained(list(reported.get("conversation") or []), input_items(params))
    status = "completed" if reported.get("status") == "completed" else "incomplete"
    return {"object": "response", "status": status, "output": output, "usage": None}


def _gained(conversation: list[Any], task_input: list[dict[str, Any]]) -> list[Any]:
    """What the activation added to its conversation: the items after the task input when the
    conversation starts with it (a program that keeps the request's items), else the items from
    the model's first one on (a CLI harness words the task its own way: its own system prompt,
    instructions around the task, a system message dropped)."""
    if conversation[: len(task_input)] == task_input:
        return conversation[len(task_input) :]
    first = next(
        (i for i, item in enumerate(conversation) if is_assistant_item(item)), len(conversation)
    )
    return conversation[first:]


def create(
    name: str,
    settings: Mapping[str, Any],
    *,
    gateway: GatewayHandle,
    resources: ResourcesServer | None,
    sandbox: SandboxPolicy | None = None,
) -> CommandAgent:
    """``sandbox``: the run's policy; no sandbox and no ``--allow-unsandboxed`` is refused here,
    before any activation starts."""
    isolation = (sandbox or SandboxPolicy()).isolation()
    return CommandAgent(name, Settings.model_validate(dict(settings)), gateway, isolation)
