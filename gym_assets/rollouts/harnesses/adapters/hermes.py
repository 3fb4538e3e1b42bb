"""hermes-agent (PyPI ``hermes-agent``): one-shot ``hermes -z`` against the gateway.

Configuration: ``$HERMES_HOME/config.yaml`` under the activation's home. For Chat the model is
a ``custom`` provider at the invocation's gateway URL; for Responses a named provider with
``transport: codex_responses``. Either way hermes streams, and before its first turn probes
``GET /v1/models`` (and a few Ollama/LM Studio paths, which may 404). The config states the
context length: without it hermes looks the model up in OpenRouter's online catalogue.

Evidence: the usage report of ``--usage-file`` says how the run ended (``completed`` /
``failed``: hermes exits 0 after a failed model call, so this report is the only record of the
failure) and the session hermes keeps in ``$HERMES_HOME/state.db`` (tables ``sessions`` and
``messages``: what ``hermes sessions export`` prints), read-only, gives the conversation and
each tool result (the ``terminal`` tool's result carries the command's ``exit_code``). hermes
keeps no response id and no tool clock: the invocation names no model calls (the gateway
attributes them through the base URL) and tool timing is a gap.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from gym_assets.records.evidence import GapCode
from gym_assets.rollouts.episodes.launch import DUMMY_API_KEY
from gym_assets.rollouts.harnesses.adapters.base import Api, CliEpisode, Prepared
from gym_assets.rollouts.harnesses.adapters.bundles import JsonObject, bundle, gap, where
from gym_assets.rollouts.harnesses.adapters.stores import (
    StoreUnreadable,
    assistant_message,
    function_call,
    function_call_output,
    json_object,
    json_value,
    query,
    read_json_object,
    user_message,
)

PROVIDER = "gym"
CONTEXT_TOKENS = 128_000


def hermes_home(home: Path) -> Path:
    return home / ".hermes"


def usage_path(home: Path) -> Path:
    return home / "usage.json"


class HermesAdapter:
    name = "hermes"
    supports: frozenset[tuple[Api, bool]] = frozenset({("chat", True), ("responses", True)})
    finish_command = None  # a text reply ends its episode

    def executable(self, install_dir: Path) -> Path:
        return install_dir / "bin" / "hermes"

    def prepare(self, episode: CliEpisode) -> Prepared:
        config_dir = hermes_home(episode.files.home)
        config_dir.mkdir(parents=True, exist_ok=True)
        text = yaml.safe_dump(_config(episode), sort_keys=False)
        (config_dir / "config.yaml").write_text(text, encoding="utf-8")
        argv = (
            str(self.executable(episode.install_dir)),
            f"--oneshot={episode.prompt}",  # one token: a prompt starting with '-' stays a prompt
            "--yolo",
            "--usage-file",
            str(usage_path(episode.files.home)),
            *episode.offline_args,
        )
        return Prepared(argv, {**episode.offline_env, "HERMES_HOME": str(config_dir)})

    def observations(self, episode: CliEpisode, exit_code: int | None) -> dict[str, Any]:
        gaps: list[JsonObject] = []
        try:
            usage: JsonObject = read_json_object(usage_path(episode.files.home), episode)
        except StoreUnreadable as exc:
            usage = {}
            gaps.append(gap(GapCode.INVOCATION_STATUS_UNAVAILABLE, episode, str(exc)))
        try:
            rows = _messages(episode, usage.get("session_id"))
        except StoreUnreadable as exc:
            gaps.append(gap(GapCode.CONVERSATION_UNAVAILABLE, episode, str(exc)))
            return bundle(self.name, None, [], gaps)
        conversation, tools = _conversation(episode, rows)
        if tools:
            detail = f"hermes keeps no start or end time of a tool call in {_store_name(episode)}"
            gaps.append(gap(GapCode.TOOL_TIMING_UNAVAILABLE, episode, detail))
        invocation = {
            "invocation_id": episode.invocation_id,
            "status": _status(usage, exit_code),
            "conversation": conversation,
        }
        return bundle(self.name, invocation, tools, gaps)


def _config(episode: CliEpisode) -> JsonObject:
    if episode.api == "chat":
        model = {"provider": "custom", "default": episode.model, "base_url": episode.base_url}
        return {"model": {**model, "api_key": DUMMY_API_KEY, "context_length": CONTEXT_TOKENS}}
    provider = {
        "name": PROVIDER,
        "api": episode.base_url,
        "api_key": DUMMY_API_KEY,
        "default_model": episode.model,
        "transport": "codex_responses",
    }
    model = {"provider": PROVIDER, "default": episode.model, "context_length": CONTEXT_TOKENS}
    return {"model": model, "providers": {PROVIDER: provider}}


def _store_name(episode: CliEpisode) -> str:
    return where(hermes_home(episode.files.home) / "state.db", episode)


def _messages(episode: CliEpisode, session_id: Any) -> list[tuple]:
    """The session's messages in order. The usage report names the session when the run
    finished; a failed run leaves it out, and then the fresh home's one session is it."""
    store = hermes_home(episode.files.home) / "state.db"
    if isinstance(session_id, str) and session_id:
        sessions = query(store, episode, "SELECT id FROM sessions WHERE id = ?", (session_id,))
    else:
        sessions = query(store, episode, "SELECT id FROM sessions WHERE parent_session_id IS NULL")
    if len(sessions) != 1:
        raise StoreUnreadable(
            f"{len(sessions)} matching sessions in {_store_name(episode)}; expected 1"
        )
    return query(
        store,
        episode,
        "SELECT role, content, tool_call_id, tool_calls, tool_name FROM messages "
        "WHERE session_id = ? ORDER BY id",
        sessions[0],
    )


def _conversation(
    episode: CliEpisode, rows: list[tuple]
) -> tuple[list[JsonObject], list[JsonObject]]:
    conversation: list[JsonObject] = []
    tools: list[JsonObject] = []
    called: dict[str, str] = {}  # call id → the tool the model named
    for role, content, tool_call_id, tool_calls, tool_name in rows:
        if role == "user":
            conversation.append(user_message(content or ""))
        elif role == "assistant":
            if content:
                conversation.append(assistant_message(content))
            calls = _calls(tool_calls)
            called |= {call["call_id"]: call["name"] for call in calls}
            conversation += calls
        elif role == "tool" and tool_call_id:
            conversation.append(function_call_output(tool_call_id, content or ""))
            name = tool_name or called.get(tool_call_id)
            if name:
                tools.append(
                    {
                        "invocation_id": episode.invocation_id,
                        "tool_call_id": tool_call_id,
                        "tool_name": name,
                        "status": _tool_status(content),
                    }
                )
    return conversation, tools


def _calls(tool_calls: Any) -> list[JsonObject]:
    """The function calls of an assistant message (hermes keeps the argument strings as sent)."""
    calls = json_value(tool_calls)
    items = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        call_id = call.get("call_id") or call.get("id") or ""
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        items.append(function_call(str(call_id), str(function.get("name", "")), arguments))
    return items


def _tool_status(content: Any) -> str:
    """A result hermes marked with an error or a non-zero ``exit_code`` is a failure."""
    result = json_object(content) or {}
    exit_code = result.get("exit_code")
    if result.get("error") or (isinstance(exit_code, int) and exit_code != 0):
        return "failed"
    return "completed"


def _status(usage: JsonObject, exit_code: int | None) -> str:
    """How the run ended, as the usage report says (never the exit code)."""
    if usage.get("failed") is True:
        return "failed"
    if exit_code is not None and usage.get("completed") is True:
        return "completed"
    return "incomplete" if usage else "unknown"


ADAPTER = HermesAdapter()
