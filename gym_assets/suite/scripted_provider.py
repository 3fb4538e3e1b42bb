"""The scripted conformance provider ("probe"): an upstream of the model gateway that plays one
scenario and witnesses every exchange (docs/conformance.md#the-scripted-provider-in-brief).

Served by the project's own ``ModelGateway``, so each exchange is captured exactly like a run
against a real model; the probe decides only what the model says and writes down what it saw.

Design: one episode = one episode process (``gym_assets.suite.episode``). That
process runs the gateway in-process with this upstream (a thread of its own, as the gateway
always runs) and the conformance resources server on the rollout's event loop. Both observers
feed the same ``witness.json`` through :class:`~gym_assets.conformance.witness_log.WitnessLog`
(an exclusive lock around read-change-write), so neither needs a handle on the other and the
witness on disk is current after every event — also when a harness is killed mid-episode.

Per request (both dialects, JSON or SSE):

1. Tool results in the history (Chat ``tool`` messages, Responses ``function_call_output``
   items) are matched to the calls the probe issued; a call's result is *seen* once its unique
   token occurs in the result, each distinct result is kept, and a call counts as *executed*
   when its marker file holds exactly the token.
2. A request that carries no tools is auxiliary (a harness asking for a title): it gets a short
   text answer and never consumes a scripted error. Otherwise the n-th tool-carrying request
   gets the scenario's n-th HTTP error, the last one forever if the error is terminal, else 200.
3. An error reply has an error body (no ``id``) and ``Retry-After: 0``. A 200 is refused with
   HTTP 409 and a recorded violation when it comes after the final answer, while an issued call
   is not both executed and seen, or when no shell tool is offered. Otherwise the next shell
   call (a fresh token written to ``<workspace>/tool-<i>.txt`` and printed; the first call
   exits with the scenario's code), or the final answer ``CONFORMANCE_DONE``.
4. Usage per attempt (prompt 20+attempt, completion 8, cached 3, reasoning 2) unless the
   scenario omits it.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from typing import Any

from gym_assets.conformance.behavioral_checks import carries_tools
from gym_assets.conformance.witness_log import WitnessData, WitnessLog
from gym_assets.rollouts.gateway.ids import new_id
from gym_assets.rollouts.gateway.render import (
    AssistantTurn,
    FunctionCall,
    chat_completion,
    chat_sse,
    response_object,
    responses_sse,
)
from gym_assets.rollouts.gateway.script import (
    AUXILIARY_TEXT,
    Dialect,
    ErrorReply,
    scripted_usage,
    shell_call,
)
from gym_assets.rollouts.gateway.sse import StreamAssembler
from gym_assets.rollouts.gateway.upstreams import ModelRequest, UpstreamReply, json_reply
from gym_assets.suite.scenarios import FINAL_ANSWER, Scenario
from gym_assets.untrusted_files import RefusedFile, read_beneath

RETRY_NOW = {"retry-after": "0", "retry-after-ms": "0"}
REASONING = "Perform the prescribed check."
TOOL_DESCRIPTION = "Run conformance shell check"
PROTOCOL_ERROR = "probe_protocol_error"
CREATED = 1  # fixed, so the witness and every saved copy agree byte for byte


def marker_path(workspace: Path, index: int) -> Path:
    return workspace / f"tool-{index}.txt"


def shell_command(token: str, marker: Path, exit_code: int) -> str:
    """Write the token to the marker, print it, exit with the prescribed code."""
    return f"printf %s {token} > {shlex.quote(str(marker))}; echo {token}; exit {exit_code}"


def _marker_holds(marker: str, token: str) -> bool:
    """Whether the command wrote the token to its marker, read from the workspace the
    harness's commands write without following a link or blocking on a FIFO."""
    path = Path(marker)
    try:
        return read_beneath(path.parent, path.name, len(token.encode())) == token.encode()
    except (OSError, RefusedFile):
        return False


def _results_in(dialect: Dialect, body: Mapping[str, Any]) -> Iterable[tuple[Any, Any]]:
    """(call id, result) of every tool result in the request history."""
    items = body.get("messages") if dialect == "chat" else body.get("input")
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, Mapping):
            continue
        if item.get("role") == "tool":
            yield item.get("tool_call_id"), item.get("content")
        elif item.get("type") == "function_call_output":
            yield item.get("call_id"), item.get("output")


def observe(data: WitnessData, dialect: Dialect, body: Mapping[str, Any]) -> None:
    """Step 1: results seen, outputs kept, markers checked, for every issued call."""
    calls = {call["id"]: call for call in data["tool_calls"]}
    for call_id, result in _results_in(dialect, body):
        call = calls.get(call_id)
        if call is None:
            continue
        if call["token"] in json.dumps(result):
            call["result_seen"] = True
        if not any(json.dumps(seen) == json.dumps(result) for seen in call["outputs"]):
            call["outputs"].append(result)
    refresh_executed(data)


def refresh_executed(data: WitnessData) -> None:
    for call in data["tool_calls"]:
        call["executed"] = _marker_holds(call["marker"], call["token"])


async def _aiter(chunks: list[bytes]) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


class ProbeUpstream:
    """Plays ``scenario`` for every request; implements ``upstreams.Upstream``."""

    def __init__(self, scenario: Scenario, witness: WitnessLog, workspace: Path) -> None:
        self.scenario = scenario
        self.witness = witness
        self.workspace = Path(workspace)

    async def open(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def answer(self, request: ModelRequest) -> UpstreamReply:
        return self.witness.update(lambda data: self._answer(data, request))

    # ------------------------------------------------------------------ one attempt

    def _answer(self, data: WitnessData, request: ModelRequest) -> UpstreamReply:
        body, dialect = request.body, request.dialect
        observe(data, dialect, body)
        index = len(data["attempts"])
        model = body.get("model")
        model = model if isinstance(model, str) else "conformance-model"
        if not carries_tools(body):
            reply, response = self._reply(request, self._turn(model, index, text=AUXILIARY_TEXT))
        else:
            scripted = sum(1 for a in data["attempts"] if carries_tools(a["request"]))
            status = self.scenario.status_for(scripted)
            if status != 200:
                error = ErrorReply(status, "controlled model failure", "conformance_error")
                reply, response = json_reply(status, error.body(), RETRY_NOW), error.body()
            else:
                outcome = self._next(data, dialect, body, model, index)
                if isinstance(outcome, ErrorReply):
                    data["violations"].append(outcome.message)
                    reply = json_reply(409, outcome.body(), RETRY_NOW)
                    response = outcome.body()
                else:
                    reply, response = self._reply(request, outcome)
        data["attempts"].append(
            {
                "attempt_id": f"attempt-{index}",
                "request": dict(body),
                "response": response,
                "status_code": reply.status,
            }
        )
        return reply

    def _next(
        self, data: WitnessData, dialect: Dialect, body: Mapping[str, Any], model: str, index: int
    ) -> AssistantTurn | ErrorReply:
        """Step 3 for a 200: a protocol violation, the next shell call, or the final answer."""
        if data["finished"]:
            return _violation("a model request arrived after the final answer")
        pending = [c["id"] for c in data["tool_calls"] if not (c["executed"] and c["result_seen"])]
        if pending:
            return _violation(
                f"a model request arrived before tool call(s) {', '.join(pending)} were "
                "executed and their results sent back"
            )
        issued = len(data["tool_calls"])
        if issued >= self.scenario.tool_steps:
            data["finished"] = True
            return self._turn(model, index, text=FINAL_ANSWER)
        token = new_id("probe")
        marker = marker_path(self.workspace, issued)
        exit_code = self.scenario.tool_exit_code if issued == 0 else 0
        command = shell_command(token, marker, exit_code)
        try:
            name, arguments = shell_call(dialect, body, command, TOOL_DESCRIPTION)
        except LookupError as exc:
            return _violation(f"no usable shell tool advertised: {exc}")
        call_id = new_id("call")
        data["tool_calls"].append(
            {
                "id": call_id,
                "name": name,
                "arguments": arguments,
                "token": token,
                "marker": str(marker),
                "exit_code": exit_code,
                "executed": False,
                "result_seen": False,
                "outputs": [],
            }
        )
        namespace, _, bare = name.rpartition("__")
        encoded = json.dumps(arguments)
        if dialect == "responses" and namespace:
            call = FunctionCall(call_id, bare, encoded, namespace=namespace)
        else:
            call = FunctionCall(call_id, name, encoded)
        return self._turn(model, index, calls=(call,))

    def _turn(self, model: str, index: int, **content: Any) -> AssistantTurn:
        usage = scripted_usage(index) if self.scenario.usage else None
        return AssistantTurn(
            new_id("resp"), model, usage, reasoning=REASONING, created=CREATED, **content
        )

    @staticmethod
    def _reply(request: ModelRequest, turn: AssistantTurn) -> tuple[UpstreamReply, Any]:
        """The wire reply and the body as the capture will hold it (a stream reassembled)."""
        if request.body.get("stream") is not True:
            body = chat_completion(turn) if request.dialect == "chat" else response_object(turn)
            return json_reply(200, body), body
        if request.dialect == "chat":
            chunks = list(chat_sse(turn, include_usage=turn.usage is not None))
        else:
            chunks = list(responses_sse(turn))
        assembler = StreamAssembler(request.dialect)
        for chunk in chunks:
            assembler.feed(chunk)
        reply = UpstreamReply(200, stream=_aiter(chunks), media_type="text/event-stream")
        return reply, assembler.result()


def _violation(message: str) -> ErrorReply:
    return ErrorReply(409, message, PROTOCOL_ERROR)
