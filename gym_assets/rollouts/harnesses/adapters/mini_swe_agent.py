"""mini-swe-agent: one ``bash`` tool, no streaming, and ``traj.json``.

mini ends an episode only when a command it runs prints ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``
as its first line; a reply without a tool call is a format error it answers with a correction
(after three in a row it gives up). Our tasks want a final answer in text, so the instructions
this adapter writes ask for the answer as the text of the reply that runs the submit command
(:data:`SUBMIT_COMMAND`, also the adapter's ``finish_command``); that text is the last
assistant message of the conversation, which is how it reaches the response.

``prepare`` writes one config file merged over mini's own ``mini.yaml`` (our instructions and
the gateway as ``api_base``; commands run in the program's cwd, the workspace) and runs the
``mini`` CLI as users do (``-y --exit-immediately``; Chat Completions, or the Responses API
with ``--model-class litellm_response``). ``observations`` reads only ``traj.json``, which mini
rewrites after every step: its messages become the conversation, each tool result a tool call
with the status mini recorded (its ``returncode``), the id of each model reply it kept a
model-call reference, and its final ``exit`` message (``exit_status``) the invocation's status.
Retries happen inside the OpenAI SDK and mini's retry loop and are not in the file; the gateway
attributes them through the per-invocation base URL.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gym_assets.fileio import parse_json_bytes
from gym_assets.records.evidence import MODEL_SERVER_TYPE, GapCode
from gym_assets.rollouts.episodes.launch import EpisodeFiles
from gym_assets.rollouts.harnesses.adapters.base import Api, CliEpisode, Prepared

NAME = "mini_swe_agent"
SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
SUBMIT_COMMAND = f"echo {SUBMIT_MARKER}"
# mini retries a failed model call with 4-60 s exponential waits, 10 tries by default (six
# minutes for a permanent HTTP 400); three tries keep that within an activation's budget.
RETRY_ATTEMPTS = "3"
NOT_EXECUTED = "action was not executed"  # mini's note on actions it never ran

INSTANCE_TEMPLATE = f"""{{{{task}}}}

Work in the current directory with the bash tool: every reply must call it at least once, and
each command runs in a fresh subshell.

When you are done, give your final answer as the text of your reply and, in that same reply,
call the bash tool with exactly `{SUBMIT_COMMAND}` to submit it. After that command you cannot
continue.
"""

# mini's exit statuses that are not failures; any other (an exception's name,
# RepeatedFormatError) is one.
_FINAL_STATUSES = {
    "Submitted": "completed",
    "LimitsExceeded": "incomplete",
    "TimeExceeded": "incomplete",
}


def trajectory_path(files: EpisodeFiles) -> Path:
    return files.home / "mini" / "traj.json"


class MiniSweAgent:
    name = NAME
    supports: frozenset[tuple[Api, bool]] = frozenset({("chat", False), ("responses", False)})
    finish_command = SUBMIT_COMMAND

    def executable(self, install_dir: Path) -> Path:
        return install_dir / "bin" / "mini"

    def prepare(self, episode: CliEpisode) -> Prepared:
        folder = episode.files.home / "mini"
        (folder / "global").mkdir(parents=True, exist_ok=True)
        config = {
            "agent": {"instance_template": INSTANCE_TEMPLATE},
            "model": {
                # litellm routes an ``openai/`` model to the OpenAI-compatible api_base.
                "model_name": f"openai/{episode.model}",
                "model_kwargs": {"api_base": episode.base_url},
            },
        }
        overrides = folder / "gym_assets.yaml"  # JSON is YAML; mini merges it over mini.yaml
        overrides.write_text(json.dumps(config, indent=1), encoding="utf-8")
        argv = (
            str(self.executable(episode.install_dir)),
            *("-c", "mini.yaml", "-c", str(overrides)),
            *("-t", episode.prompt, "-o", str(trajectory_path(episode.files))),
            *("-y", "--exit-immediately"),
            *(("--model-class", "litellm_response") if episode.api == "responses" else ()),
            *episode.offline_args,
        )
        env = {
            "MSWEA_CONFIGURED": "true",  # no first-run setup wizard
            "MSWEA_GLOBAL_CONFIG_DIR": str(folder / "global"),
            "MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": RETRY_ATTEMPTS,
            **episode.offline_env,
        }
        return Prepared(argv, env)

    def observations(self, episode: CliEpisode, exit_code: int | None) -> dict[str, Any]:
        path = trajectory_path(episode.files)
        try:
            messages = parse_json_bytes(episode.files.read(path))["messages"]
            if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
                raise ValueError("messages is not a list of objects")
        except FileNotFoundError:
            return _only_gap(f"mini-swe-agent wrote no {path.name}")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return _only_gap(f"{path.name} is not a mini-swe-agent trajectory ({exc})")
        return read_messages(messages, episode.invocation_id, episode.model_server, exit_code)


def read_messages(
    messages: list[dict[str, Any]], invocation_id: str, model_server: str, exit_code: int | None
) -> dict[str, Any]:
    """The bundle of one ``traj.json`` message list (Chat messages, or with
    ``litellm_response`` each reply kept as a whole Responses object)."""
    conversation: list[dict[str, Any]] = []
    replies: list[Mapping[str, Any]] = []  # every model reply mini kept, in order
    tools: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # call id → tool name
    exit_extra: Mapping[str, Any] = {}
    for message in messages:
        role, extra = message.get("role"), message.get("extra") or {}
        response = extra.get("response")
        if message.get("object") == "response":
            replies.append(message)
            conversation += _reply_items(message, names)
        elif role == "exit":
            exit_extra = extra
        elif role == "assistant":
            replies += [response] if isinstance(response, Mapping) else []
            conversation += _reply_items(message, names)
        elif role == "tool" or message.get("type") == "function_call_output":
            call_id = str(message.get("tool_call_id") or message.get("call_id"))
            output = _text(message.get("content", message.get("output")))
            conversation.append(
                {"type": "function_call_output", "call_id": call_id, "output": output}
            )
            tools.append(_tool_record(call_id, names.get(call_id), extra, invocation_id))
        else:
            if extra.get("interrupt_type") == "FormatError" and isinstance(response, Mapping):
                # mini drops a refused reply from what it sends next but keeps it here
                replies.append(response)
                conversation += _reply_items(response, {})
            conversation.append(
                {"type": "message", "role": str(role), "content": _text(message.get("content"))}
            )
    _mark_submission(tools, exit_extra)
    invocation: dict[str, Any] = {
        "kind": "agent_invocation",
        "invocation_id": invocation_id,
        "status": _status(exit_extra, exit_code),
        "model_calls": [
            {"model_ref": {"type": MODEL_SERVER_TYPE, "name": model_server}, "response_id": rid}
            for reply in replies
            if (rid := _response_id(reply.get("id"))) is not None
        ],
        "conversation": conversation,
    }
    exit_status = exit_extra.get("exit_status")
    if invocation["status"] == "failed" and isinstance(exit_status, str):
        invocation["error_type"] = exit_status
    return {"source": NAME, "records": [invocation, *tools], "gaps": []}


def _response_id(kept: Any) -> str | None:
    """The id the server gave a reply. litellm hands mini a Responses reply under an id of its
    own, ``resp_`` + base64 of ``litellm:...;response_id:<the server's id>``: that one is read
    back out of it."""
    if not isinstance(kept, str) or not kept:
        return None
    try:
        decoded = base64.b64decode(kept.removeprefix("resp_") + "==", validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return kept
    _, _, server_id = decoded.partition(";response_id:")
    return server_id.split(";")[0] if decoded.startswith("litellm:") and server_id else kept


def _text(content: Any) -> str:
    """Message content as text (a string, or a list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def _reply_items(reply: Mapping[str, Any], names: dict[str, str]) -> list[dict[str, Any]]:
    """A model reply as Responses items: a Chat completion or assistant message (its text,
    then each function call), or a Responses object's output."""
    choices = reply.get("choices")
    if isinstance(choices, list):  # a whole Chat completion (kept beside a format error)
        first = choices[0] if choices and isinstance(choices[0], Mapping) else {}
        message = first.get("message")
        return _reply_items(message, names) if isinstance(message, Mapping) else []
    if isinstance(reply.get("output"), list):
        return [_output_item(item, names) for item in reply["output"] if isinstance(item, Mapping)]
    items: list[dict[str, Any]] = []
    text = _text(reply.get("content"))
    if text:
        content = [{"type": "output_text", "text": text}]
        items.append({"type": "message", "role": "assistant", "content": content})
    for call in reply.get("tool_calls") or []:
        function = call.get("function") or {}
        call = {"call_id": call.get("id"), "name": function.get("name")}
        items.append(_function_call({**call, "arguments": function.get("arguments")}, names))
    return items


def _output_item(item: Mapping[str, Any], names: dict[str, str]) -> dict[str, Any]:
    if item.get("type") == "function_call":
        return _function_call(item, names)
    if item.get("type") == "message":
        parts = item.get("content")
        parts = parts if isinstance(parts, list) else []
        content = [{"type": "output_text", "text": _text([part])} for part in parts]
        return {"type": "message", "role": "assistant", "content": content}
    return {key: value for key, value in item.items() if value is not None}


def _function_call(call: Mapping[str, Any], names: dict[str, str]) -> dict[str, Any]:
    call_id, name = str(call.get("call_id")), str(call.get("name"))
    names[call_id] = name
    arguments = call.get("arguments")
    arguments = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def _tool_record(
    call_id: str, name: str | None, extra: Mapping[str, Any], invocation_id: str
) -> dict[str, Any]:
    returncode = extra.get("returncode")
    if extra.get("exception_type") == "TimeoutExpired":
        status = "timeout"
    elif extra.get("exception_info") == NOT_EXECUTED:
        status = "cancelled"
    elif isinstance(returncode, int):
        status = "completed" if returncode == 0 else "failed"
    else:
        status = "unknown"
    record = {
        "kind": "tool_call",
        "invocation_id": invocation_id,
        "tool_call_id": call_id,
        "tool_name": name or "bash",
        "status": status,
    }
    if isinstance(extra.get("timestamp"), (int, float)):
        record |= {"completed_at": float(extra["timestamp"]), "timing_source": "artifact"}
    return record


def _mark_submission(tools: list[dict[str, Any]], exit_extra: Mapping[str, Any]) -> None:
    """mini files its submit command as not executed; its ``Submitted`` exit says the command
    ran, printed the marker first and exited 0 (the only way to submit), so it completed."""
    if exit_extra.get("exit_status") != "Submitted":
        return
    trailing = []  # the last reply's actions that mini did not record as run
    for record in reversed(tools):
        if record["status"] != "cancelled":
            break
        trailing.append(record)
    if trailing:
        trailing[-1]["status"] = "completed"


def _status(exit_extra: Mapping[str, Any], exit_code: int | None) -> str:
    exit_status = exit_extra.get("exit_status")
    if isinstance(exit_status, str) and exit_status:
        return _FINAL_STATUSES.get(exit_status, "failed")
    return "incomplete" if exit_code is None else "unknown"


def _only_gap(detail: str) -> dict[str, Any]:
    gap = {"code": GapCode.AGENT_OBSERVATIONS_INVALID.value, "detail": detail}
    return {"source": NAME, "records": [], "gaps": [gap]}


ADAPTER = MiniSweAgent()
