"""opencode (npm ``opencode-ai``): ``opencode run`` against the gateway, read back from its store.

Configuration: one ``opencode.json`` under the activation's home (``OPENCODE_CONFIG``) with a
``gym`` provider whose base URL is the invocation's gateway URL — ``@ai-sdk/openai-compatible``
for Chat, ``@ai-sdk/openai`` for Responses; the AI SDK always streams — and bash and edits
allowed. Its hidden ``title`` and ``summary`` agents are disabled, as in NeMo Gym's opencode
preset: the title agent sends an extra tool-less request, concurrent with the first turn, that
is no step of the task. opencode writes into HOME and every XDG directory from its first start,
which the scrubbed base environment points into the activation's home.

The prompt goes in on stdin: ``opencode run`` wraps every message argument holding a space in
double quotes and backslash-escapes its quotes, so an argv prompt would not reach the model as
written (a HumanEval docstring would arrive as ``\\"\\"\\"``); from stdin it arrives byte for
byte.

Evidence: the session opencode keeps in ``$XDG_DATA_HOME/opencode/opencode.db`` (tables
``session``, ``message``, ``part``: what ``opencode export`` prints), read-only. Its
``--format json`` event stream goes to the activation log only: it leaves out the task message.
A failed model call is an assistant message with an ``error`` (e.g. ``APIError`` with the HTTP
status), while the process exit code is never read. opencode keeps no response id, so the
invocation names no model calls: the gateway attributes every call through the invocation's
base URL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gym_assets.records.evidence import GapCode
from gym_assets.rollouts.episodes.launch import DUMMY_API_KEY, base_environment
from gym_assets.rollouts.harnesses.adapters.base import Api, CliEpisode, Prepared
from gym_assets.rollouts.harnesses.adapters.bundles import JsonObject, bundle, gap
from gym_assets.rollouts.harnesses.adapters.stores import (
    StoreUnreadable,
    assistant_message,
    function_call,
    function_call_output,
    json_object,
    query,
    user_message,
)

PROVIDER = "gym"
SDK_PACKAGES: dict[Api, str] = {"chat": "@ai-sdk/openai-compatible", "responses": "@ai-sdk/openai"}
# Runs the program with stdin read from the file named by the first argument.
STDIN_FROM_FILE = 'prompt=$1; shift; exec "$@" < "$prompt"'
CONTEXT_TOKENS = 128_000
OUTPUT_TOKENS = 4_096


def store_path(home: Path) -> Path:
    return Path(base_environment(home)["XDG_DATA_HOME"]) / "opencode" / "opencode.db"


class OpencodeAdapter:
    name = "opencode"
    supports: frozenset[tuple[Api, bool]] = frozenset({("chat", True), ("responses", True)})
    finish_command = None  # a text reply ends its episode

    def executable(self, install_dir: Path) -> Path:
        return install_dir / "node_modules" / ".bin" / "opencode"

    def prepare(self, episode: CliEpisode) -> Prepared:
        home = episode.files.home
        config = home / "opencode.json"
        config.write_text(json.dumps(_config(episode), indent=2), encoding="utf-8")
        prompt = home / "prompt.txt"
        prompt.write_text(episode.prompt, encoding="utf-8")
        argv = (
            "/bin/sh",
            "-c",
            STDIN_FROM_FILE,
            "sh",
            str(prompt),
            str(self.executable(episode.install_dir)),
            "run",
            "--format",
            "json",
            "--auto",
            "--model",
            f"{PROVIDER}/{episode.model}",
            *episode.offline_args,
        )
        # Only this config: none from the workspace, where the model's commands write.
        env = {"OPENCODE_CONFIG": str(config), "OPENCODE_DISABLE_PROJECT_CONFIG": "true"}
        return Prepared(argv, {**episode.offline_env, **env})

    def observations(self, episode: CliEpisode, exit_code: int | None) -> dict[str, Any]:
        store = store_path(episode.files.home)
        try:
            sessions = query(store, episode, "SELECT id FROM session WHERE parent_id IS NULL")
            if len(sessions) != 1:
                raise StoreUnreadable(
                    f"{len(sessions)} top-level sessions in the store; expected 1"
                )
            (session,) = sessions[0]
            messages = query(
                store,
                episode,
                "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id",
                (session,),
            )
            parts = query(
                store,
                episode,
                "SELECT message_id, data FROM part WHERE session_id = ? ORDER BY time_created, id",
                (session,),
            )
            children = query(store, episode, "SELECT id FROM session WHERE parent_id IS NOT NULL")
        except StoreUnreadable as exc:
            return bundle(
                self.name, None, [], [gap(GapCode.CONVERSATION_UNAVAILABLE, episode, str(exc))]
            )
        result = _read_session(episode, exit_code, messages, parts)
        if children:  # the task tool's subagents: their calls reach the gateway as this run's
            detail = (
                f"opencode ran {len(children)} subagent session(s); their conversations and "
                "tool calls are not in this bundle"
            )
            result["gaps"].append(gap(GapCode.CONVERSATION_UNAVAILABLE, episode, detail))
        return result


def _config(episode: CliEpisode) -> JsonObject:
    provider = {
        "npm": SDK_PACKAGES[episode.api],
        "name": "gym-assets model gateway",
        "options": {"baseURL": episode.base_url, "apiKey": DUMMY_API_KEY},
        "models": {
            episode.model: {
                "name": episode.model,
                "limit": {"context": CONTEXT_TOKENS, "output": OUTPUT_TOKENS},
            }
        },
    }
    model = f"{PROVIDER}/{episode.model}"
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {PROVIDER: provider},
        "model": model,
        "small_model": model,
        "autoupdate": False,
        "share": "disabled",
        "permission": {"bash": "allow", "edit": "allow", "webfetch": "deny"},
        "agent": {"title": {"disable": True}, "summary": {"disable": True}},
    }


def _read_session(
    episode: CliEpisode,
    exit_code: int | None,
    messages: list[tuple],
    parts: list[tuple],
) -> dict[str, Any]:
    gaps: list[JsonObject] = []
    by_message: dict[str, list[JsonObject]] = {}
    for message_id, part in _objects(parts, "a part of message", episode, gaps):
        by_message.setdefault(message_id, []).append(part)
    conversation: list[JsonObject] = []
    tools: list[JsonObject] = []
    last: JsonObject = {}
    for message_id, info in _objects(messages, "message", episode, gaps):
        for part in by_message.get(message_id, []):
            if info.get("role") == "user" and part.get("type") == "text":
                conversation.append(user_message(str(part.get("text", ""))))
            elif part.get("type") == "text":
                conversation.append(assistant_message(str(part.get("text", ""))))
            elif part.get("type") == "tool":
                conversation += _tool_items(part)
                tools += _tool_record(episode, part)
        if info.get("role") == "assistant":
            last = info
    invocation = {
        "invocation_id": episode.invocation_id,
        "status": _status(last, exit_code),
        "conversation": conversation,
        **_error_type(last),
    }
    return bundle(OpencodeAdapter.name, invocation, tools, gaps)


def _objects(
    rows: list[tuple], what: str, episode: CliEpisode, gaps: list[JsonObject]
) -> list[tuple[str, JsonObject]]:
    """Each row's key and JSON object, in order; a row holding no JSON object is a gap."""
    parsed = []
    for key, data in rows:
        value = json_object(data)
        if value is None:
            detail = f"{what} {key} in the store is not a JSON object"
            gaps.append(gap(GapCode.CONVERSATION_UNAVAILABLE, episode, detail))
        else:
            parsed.append((key, value))
    return parsed


def _status(last: JsonObject, exit_code: int | None) -> str:
    """As the session's last assistant message records it: an ``error`` is a failed call, a
    ``stop`` finish a finished answer; anything else (stopped, cut at length) is incomplete."""
    if last.get("error"):
        return "failed"
    if exit_code is not None and last.get("finish") == "stop":
        return "completed"
    return "incomplete"


def _error_type(last: JsonObject) -> JsonObject:
    error = last.get("error")
    name = error.get("name") if isinstance(error, dict) else None
    return {"error_type": name} if isinstance(name, str) else {}


def _object(value: Any) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _tool_items(part: JsonObject) -> list[JsonObject]:
    """The call as the model made it, and the result opencode sent back once it had one.
    opencode keeps the parsed input, not the argument string, so the arguments are its JSON."""
    state = _object(part.get("state"))
    call_id = str(part.get("callID", ""))
    arguments = json.dumps(state.get("input", {}), ensure_ascii=False, separators=(",", ":"))
    items = [function_call(call_id, str(part.get("tool", "")), arguments)]
    if state.get("status") == "completed":
        items.append(function_call_output(call_id, state.get("output", "")))
    elif state.get("status") == "error":
        items.append(function_call_output(call_id, state.get("error", "")))
    return items


def _tool_record(episode: CliEpisode, part: JsonObject) -> list[JsonObject]:
    state = _object(part.get("state"))
    call_id, name = part.get("callID"), part.get("tool")
    if not (isinstance(call_id, str) and call_id.strip() and isinstance(name, str) and name):
        return []
    exit_status = _object(state.get("metadata")).get("exit")
    status = {"completed": "completed", "error": "failed"}.get(
        str(state.get("status")), "incomplete"
    )
    if status == "completed" and isinstance(exit_status, int) and exit_status != 0:
        status = "failed"
    record: JsonObject = {
        "invocation_id": episode.invocation_id,
        "tool_call_id": call_id,
        "tool_name": name,
        "status": status,
    }
    clock = _object(state.get("time"))
    start, end = clock.get("start"), clock.get("end")
    if isinstance(start, int | float) and isinstance(end, int | float) and 0 <= start <= end:
        record |= {"started_at": start / 1000, "completed_at": end / 1000}
        record["timing_source"] = "harness"
    return [record]


ADAPTER = OpencodeAdapter()
