"""pi coding agent (``pi -p``): Chat Completions or Responses, both over SSE; shell tool ``bash``.

Configuration: ``$PI_CODING_AGENT_DIR/models.json`` (under the activation's home) defines one
provider, the gateway, speaking ``openai-completions`` (chat) or ``openai-responses``, whose
key is read from ``GYM_API_KEY``. Sessions go to a fixed ``--session-dir``; context files
(AGENTS.md, CLAUDE.md of the directories above the workspace) are not loaded, so a run does not
depend on where its directory is. The offline profile (``PI_OFFLINE=1``) comes from the
registry entry.

Evidence: the session file pi writes (one JSON object a line: ``session``, ``model_change``,
``message`` entries linked by ``parentId``). Assistant messages carry the ``responseId`` of
the call that produced them (the references) and a ``stopReason``; a failed call is an
assistant message with ``stopReason: "error"`` and pi exits 0 all the same, so the status comes
from the last assistant message, never from the exit code. Tool results carry ``isError`` (set
for a non-zero exit) and the time the tool finished; when it started is not kept (a gap).
pi's SDK retries (HTTP 429/5xx) leave no trace in the session; the gateway attributes them
through the per-invocation base URL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gym_assets.records.evidence import GapCode
from gym_assets.rollouts.harnesses.adapters.base import Api, CliEpisode, Prepared
from gym_assets.rollouts.harnesses.adapters.bundles import JsonObject, bundle, gap
from gym_assets.rollouts.harnesses.adapters.session_log import (
    only_session,
    read_entries,
    response_refs,
)

NAME = "pi"
PROVIDER = "gym"
KEY_VARIABLE = "GYM_API_KEY"  # pi reads an apiKey that names a set variable from it
PI_API: dict[str, str] = {"chat": "openai-completions", "responses": "openai-responses"}
# pi's Responses provider keeps a call's id as "<call_id>|<item id>".
ID_SEPARATOR = "|"
STATUS = {
    "stop": "completed",
    "toolUse": "incomplete",
    "length": "incomplete",
    "aborted": "incomplete",
    "error": "failed",
}


class PiAdapter:
    name = NAME
    supports: frozenset[tuple[Api, bool]] = frozenset({("chat", True), ("responses", True)})
    finish_command = None  # a text reply ends its episode

    def executable(self, install_dir: Path) -> Path:
        return install_dir / "node_modules" / ".bin" / "pi"

    def _agent_dir(self, episode: CliEpisode) -> Path:
        return episode.files.home.absolute() / ".pi" / "agent"

    def _session_dir(self, episode: CliEpisode) -> Path:
        return episode.files.home.absolute() / "pi-sessions"

    def prepare(self, episode: CliEpisode) -> Prepared:
        agent_dir = self._agent_dir(episode)
        agent_dir.mkdir(parents=True, exist_ok=True)
        provider = {
            "baseUrl": episode.base_url,
            "api": PI_API[episode.api],
            "apiKey": KEY_VARIABLE,
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": episode.model, "contextWindow": 128000, "maxTokens": 4096}],
        }
        models = {"providers": {PROVIDER: provider}}
        (agent_dir / "models.json").write_text(json.dumps(models, indent=2), encoding="utf-8")
        argv = (
            str(self.executable(episode.install_dir)),
            "-p",
            "--no-context-files",
            "--session-dir",
            str(self._session_dir(episode)),
            "--provider",
            PROVIDER,
            "--model",
            episode.model,
            *episode.offline_args,
            # pi reads a leading "@" as a file to attach; a space keeps the prompt a message.
            f" {episode.prompt}" if episode.prompt.startswith(("@", "-")) else episode.prompt,
        )
        return Prepared(argv, {"PI_CODING_AGENT_DIR": str(agent_dir), **episode.offline_env})

    def observations(self, episode: CliEpisode, exit_code: int | None) -> dict[str, Any]:
        path, gaps = only_session("*.jsonl", self._session_dir(episode), episode)
        if path is None:
            return bundle(NAME, None, [], gaps)
        entries, unreadable = read_entries(path, episode)
        invocation, tools, missing = read_session(entries, episode)
        return bundle(NAME, invocation, tools, gaps + unreadable + missing)


def read_session(
    entries: list[JsonObject], episode: CliEpisode
) -> tuple[JsonObject, list[JsonObject], list[JsonObject]]:
    """The invocation, its tool calls and the gaps, from a session file's entries."""
    messages = [m for m in _branch(entries) if isinstance(m, dict)]
    conversation: list[JsonObject] = []
    tools: list[JsonObject] = []
    names: dict[str, str] = {}
    for message in messages:
        role = message.get("role")
        if role == "user":
            conversation.append(_user(message))
        elif role == "assistant":
            items = _assistant(message)
            conversation += items
            names |= {i["call_id"]: i["name"] for i in items if i["type"] == "function_call"}
        elif role == "toolResult":
            call_id = _call_id(message.get("toolCallId"))
            output = _joined_text(message.get("content"))
            conversation.append(
                {"type": "function_call_output", "call_id": call_id, "output": output}
            )
            tools.append(_tool(message, call_id, names, episode))
    answers = [m for m in messages if m.get("role") == "assistant"]
    invocation: JsonObject = {
        "invocation_id": episode.invocation_id,
        "status": _status(messages),
        "model_calls": response_refs(episode, (m.get("responseId") for m in answers)),
        "conversation": conversation,
    }
    missing = []
    if tools:
        detail = "pi keeps when a tool finished, not when it started"
        missing.append(gap(GapCode.TOOL_TIMING_UNAVAILABLE, episode, detail))
    return invocation, tools, missing


def _status(messages: list[JsonObject]) -> str:
    """The stop reason of the last assistant message; a session ending on anything else (a tool
    result, the task itself) was stopped before the model answered."""
    last = messages[-1] if messages else {}
    if last.get("role") != "assistant":
        return "incomplete"
    return STATUS.get(str(last.get("stopReason")), "unknown")


def _branch(entries: list[JsonObject]) -> list[Any]:
    """The messages on the path from the session's root to its last entry (``parentId``
    links; a forked session keeps abandoned branches beside the one that ran last)."""
    by_id = {e.get("id"): e for e in entries if isinstance(e.get("id"), str)}
    linked = [e for e in entries if "parentId" in e]
    path: list[JsonObject] = []
    entry = linked[-1] if linked else None
    while entry is not None and len(path) <= len(entries):
        path.append(entry)
        parent = entry.get("parentId")
        entry = by_id.get(parent) if isinstance(parent, str) else None
    return [e.get("message") for e in reversed(path) if e.get("type") == "message"]


def _joined_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(
        p["text"] for p in parts if isinstance(p, dict) and p.get("type") == "text" and "text" in p
    )


def _call_id(raw: Any) -> str:
    return str(raw).split(ID_SEPARATOR, 1)[0]


def _user(message: JsonObject) -> JsonObject:
    text = _joined_text(message.get("content"))
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _assistant(message: JsonObject) -> list[JsonObject]:
    """An assistant message as Responses items: reasoning, text, then its function calls."""
    items: list[JsonObject] = []
    for part in message.get("content") or []:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "thinking" and part.get("thinking"):
            summary = [{"type": "summary_text", "text": part["thinking"]}]
            items.append({"type": "reasoning", "summary": summary})
        elif kind == "text":
            content = [{"type": "output_text", "text": part.get("text", "")}]
            items.append({"type": "message", "role": "assistant", "content": content})
        elif kind == "toolCall":
            items.append(
                {
                    "type": "function_call",
                    "call_id": _call_id(part.get("id")),
                    "name": part.get("name"),
                    "arguments": json.dumps(
                        part.get("arguments"), ensure_ascii=False, separators=(",", ":")
                    ),
                }
            )
    return items


def _tool(
    message: JsonObject, call_id: str, names: dict[str, str], episode: CliEpisode
) -> JsonObject:
    tool: JsonObject = {
        "invocation_id": episode.invocation_id,
        "tool_call_id": call_id,
        "tool_name": names.get(call_id) or message.get("toolName"),
        "status": "failed" if message.get("isError") else "completed",
    }
    finished = message.get("timestamp")
    if isinstance(finished, int | float) and not isinstance(finished, bool):
        tool |= {"completed_at": finished / 1000, "timing_source": "harness"}
    return tool


ADAPTER = PiAdapter()
