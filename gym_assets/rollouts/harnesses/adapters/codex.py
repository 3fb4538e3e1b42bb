"""OpenAI Codex CLI (``codex exec``): Responses over SSE only; its shell tool is ``exec_command``.

Configuration: ``$CODEX_HOME/config.toml`` (under the activation's home) names one model
provider, the gateway, with the dummy key read from ``GYM_API_KEY``; analytics and feedback
are off there, the feature flags that reach the internet are the registry entry's offline
arguments (``--disable plugins`` ...). Codex's own sandbox is bypassed: the activation runs in
ours.

Evidence: the session rollout Codex writes, ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``.
Its ``response_item`` lines are the Responses items of the conversation (the task message
onwards; the developer instructions and environment context Codex puts before it are its own
prompt, not the task), its ``item_completed`` events carry each command's recorded status
(``failed`` for a non-zero exit) and clocks, its ``token_usage_record`` lines the response id of
every answered call (the references), and ``task_complete`` says whether the turn ended in an
error. Attempts that failed (HTTP 4xx/5xx, retried or not) are in no Codex artifact; the
gateway attributes them through the per-invocation base URL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gym_assets.rollouts.harnesses.adapters.base import Api, CliEpisode, Prepared
from gym_assets.rollouts.harnesses.adapters.bundles import JsonObject, bundle
from gym_assets.rollouts.harnesses.adapters.session_log import (
    only_session,
    read_entries,
    response_refs,
)

NAME = "codex"
KEY_VARIABLE = "GYM_API_KEY"  # the dummy key of the command contract, already in the env
PROVIDER = "gym"
SESSIONS = "sessions"
SESSION_PATTERN = "*/*/*/rollout-*.jsonl"
# Responses item fields worth keeping (Codex adds its own bookkeeping beside them).
ITEM_KEYS = (
    "type",
    "id",
    "role",
    "content",
    "status",
    "name",
    "namespace",
    "arguments",
    "input",
    "call_id",
    "output",
    "summary",
)
TOOL_ITEMS = ("function_call", "custom_tool_call")
TOOL_STATUS = {"completed": "completed", "failed": "failed", "declined": "cancelled"}


def _toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are a subset TOML accepts)."""
    return json.dumps(value, ensure_ascii=False)


def _config(episode: CliEpisode) -> str:
    return "\n".join(
        [
            f"model = {_toml_string(episode.model)}",
            f'model_provider = "{PROVIDER}"',
            'web_search = "disabled"',
            "[analytics]",
            "enabled = false",
            "[feedback]",
            "enabled = false",
            f"[model_providers.{PROVIDER}]",
            'name = "gym-assets model gateway"',
            f"base_url = {_toml_string(episode.base_url)}",
            f'env_key = "{KEY_VARIABLE}"',
            'wire_api = "responses"',
            "",
        ]
    )


class CodexAdapter:
    name = NAME
    supports: frozenset[tuple[Api, bool]] = frozenset({("responses", True)})
    finish_command = None  # a text reply ends its episode

    def executable(self, install_dir: Path) -> Path:
        return install_dir / "node_modules" / ".bin" / "codex"

    def _codex_home(self, episode: CliEpisode) -> Path:
        return episode.files.home.absolute() / ".codex"

    def prepare(self, episode: CliEpisode) -> Prepared:
        codex_home = self._codex_home(episode)
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(_config(episode), encoding="utf-8")
        argv = (
            str(self.executable(episode.install_dir)),
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            *episode.offline_args,
            "--",
            episode.prompt,
        )
        return Prepared(argv, {"CODEX_HOME": str(codex_home), **episode.offline_env})

    def observations(self, episode: CliEpisode, exit_code: int | None) -> dict[str, Any]:
        path, gaps = only_session(SESSION_PATTERN, self._codex_home(episode) / SESSIONS, episode)
        if path is None:
            return bundle(NAME, None, [], gaps)
        entries, unreadable = read_entries(path, episode)
        invocation, tools = read_session(entries, episode)
        return bundle(NAME, invocation, tools, gaps + unreadable)


def read_session(
    entries: list[JsonObject], episode: CliEpisode
) -> tuple[JsonObject, list[JsonObject]]:
    """The invocation and its tool calls from a rollout file's entries."""
    items = [_payload(e) for e in entries if e.get("type") == "response_item"]
    events = [_payload(e) for e in entries if e.get("type") == "event_msg"]
    start = _task_index(items, episode.prompt)
    conversation = [{key: item[key] for key in ITEM_KEYS if key in item} for item in items[start:]]
    ends = [e for e in events if e.get("type") in ("task_complete", "turn_aborted")]
    end = ends[-1] if ends else None
    usage = [_payload(e) for e in entries if e.get("type") == "token_usage_record"]
    invocation: JsonObject = {
        "invocation_id": episode.invocation_id,
        "status": _status(end),
        "model_calls": response_refs(episode, (u.get("response_id") for u in usage)),
        "conversation": conversation,
        **_ending(end),
    }
    names = {
        item.get("call_id"): item.get("name")
        for item in conversation
        if item.get("type") in TOOL_ITEMS
    }
    return invocation, _tools(events, names, episode)


def _payload(entry: JsonObject) -> JsonObject:
    payload = entry.get("payload")
    return payload if isinstance(payload, dict) else {}


def _text(item: JsonObject) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(p.get("text", "") for p in parts if isinstance(p, dict))


def _task_index(items: list[JsonObject], prompt: str) -> int:
    """Where the task message is: the first user message holding the prompt (0 when Codex did
    not keep it verbatim, so nothing it recorded is dropped)."""
    for index, item in enumerate(items):
        user = item.get("type") == "message" and item.get("role") == "user"
        if user and _text(item).strip() == prompt.strip():
            return index
    return 0


def _status(end: JsonObject | None) -> str:
    """``failed`` when the last task ended on an error, ``completed`` when it ended without one,
    ``incomplete`` when it was aborted or Codex recorded no end (it was stopped or crashed)."""
    if end is None or end.get("type") == "turn_aborted":
        return "incomplete"
    return "failed" if end.get("error") else "completed"


def _ending(end: JsonObject | None) -> JsonObject:
    """The task's duration and, when it failed, Codex's category of the error."""
    if end is None:
        return {}
    error = end.get("error")
    category = error.get("codex_error_info") if isinstance(error, dict) else None
    duration = end.get("duration_ms")
    return {
        **({"error_type": category} if isinstance(category, str) and category else {}),
        **({"duration_ms": duration} if isinstance(duration, int) and duration >= 0 else {}),
    }


def _tools(
    events: list[JsonObject], names: dict[Any, Any], episode: CliEpisode
) -> list[JsonObject]:
    """One record per executed tool call: the ``item_completed`` event whose item id is a
    call's ``call_id`` (a command, a patch), with the status and clocks Codex recorded."""
    tools = []
    for event in events:
        item = event.get("item")
        if event.get("type") != "item_completed" or not isinstance(item, dict):
            continue
        call_id = item.get("id")
        if call_id not in names or not isinstance(call_id, str):
            continue
        tool: JsonObject = {
            "invocation_id": episode.invocation_id,
            "tool_call_id": call_id,
            "tool_name": names[call_id],
            "status": TOOL_STATUS.get(str(item.get("status")), "unknown"),
        }
        started, completed = event.get("started_at_ms"), event.get("completed_at_ms")
        if isinstance(started, int) and isinstance(completed, int):
            tool |= {
                "started_at": started / 1000,
                "completed_at": completed / 1000,
                "timing_source": "harness",
            }
        tools.append(tool)
    return tools


ADAPTER = CodexAdapter()
