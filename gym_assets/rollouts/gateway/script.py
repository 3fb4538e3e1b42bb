"""The step engine shared by the offline upstreams: which scripted answer a request gets.

The turn is read from the request history (how many assistant turns it already holds), never
from a counter, so a client that retries a request gets the same turn again and a harness that
re-sends the whole conversation stays in step. Error steps are budgets attached to the turn
they precede: each attempt at that turn spends one, so ``{"error": 500, "times": 1}`` fails the
first try and lets the client's own retry through. Requests that offer no tools while the
script uses tools are auxiliary (title generation and the like): they get a short text answer
and touch neither the script nor its error budgets. Step forms are listed in
``gym_assets.records.contracts``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from gym_assets.records.contracts import Step
from gym_assets.rollouts.gateway.ids import new_id
from gym_assets.rollouts.gateway.render import AssistantTurn, FunctionCall, Usage

Dialect = Literal["chat", "responses"]

# A tool is shell-like when its name, after any ``namespace__`` prefix, is one of these.
SHELL_TOOL_NAMES = ("bash", "shell", "terminal", "shell_command", "exec_command")
AUXILIARY_TEXT = "OK."
_TOOL_STEPS = ("call", "tool")


class ScriptError(ValueError):
    """A script step is malformed."""


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error the upstream answers instead of a turn."""

    status: int
    message: str
    type: str = "scripted_error"

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "code": str(self.status)}}


@dataclass(frozen=True)
class _Turn:
    errors: tuple[ErrorReply, ...]
    step: Step | None  # None: the script ends in errors


def _check_step(index: int, step: Any) -> None:
    where = f"script step {index}"
    if not isinstance(step, Mapping):
        raise ScriptError(f"{where}: expected an object, got {type(step).__name__}")
    kinds = [k for k in ("text", "call", "tool", "error") if k in step]
    if not kinds or ("error" in kinds and len(kinds) > 1):
        raise ScriptError(
            f"{where}: needs an error, or a text and/or a call or tool (a call with a tool: "
            f"the named tool when offered, else the shell command); got {kinds}"
        )
    if "error" in step:
        status, times = step["error"], step.get("times", 1)
        if not isinstance(status, int) or not 400 <= status <= 599:
            raise ScriptError(f"{where}: error must be an HTTP status 400..599, got {status!r}")
        if not isinstance(times, int) or times < 1:
            raise ScriptError(f"{where}: times must be a positive integer, got {times!r}")
        return
    if "call" in step and not isinstance(step.get("args", {}), Mapping):
        raise ScriptError(f"{where}: args must be an object")
    for kind in kinds:
        if not isinstance(step[kind], str):
            raise ScriptError(f"{where}: {kind} must be a string")


def compile_script(steps: Sequence[Step]) -> tuple[_Turn, ...]:
    """Group error steps with the answer that follows them; validate every step."""
    turns: list[_Turn] = []
    errors: list[ErrorReply] = []
    for index, step in enumerate(steps):
        _check_step(index, step)
        if "error" in step:
            message = step.get("message") or "scripted model failure"
            errors.extend([ErrorReply(step["error"], str(message))] * step.get("times", 1))
        else:
            turns.append(_Turn(tuple(errors), step))
            errors = []
    if errors:
        turns.append(_Turn(tuple(errors), None))
    return tuple(turns)


def uses_tools(script: tuple[_Turn, ...]) -> bool:
    return any(t.step is not None and any(k in t.step for k in _TOOL_STEPS) for t in script)


# --------------------------------------------------------------------------- request reading


def is_assistant_item(item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    kind = item.get("type")
    if kind in ("function_call", "reasoning", "custom_tool_call", "local_shell_call"):
        return True
    return kind in (None, "message") and item.get("role") == "assistant"


def _response_turn(response_id: Any) -> int | None:
    """The turn a response of ours answered, read back from its id (see :func:`_response_id`)."""
    if not isinstance(response_id, str) or not response_id.startswith("resp_"):
        return None
    _, _, turn = response_id.rpartition("_t")
    return int(turn) if turn.isdigit() else None


def turn_of(dialect: Dialect, body: Mapping[str, Any]) -> int:
    """How many assistant turns the request history already holds.

    Chat counts assistant messages; Responses counts runs of assistant-side items and
    continues from ``previous_response_id`` when the client relies on stored state.
    """
    if dialect == "chat":
        messages = body.get("messages")
        if not isinstance(messages, list):
            return 0
        return sum(1 for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant")
    items = body.get("input")
    turns, in_run = 0, False
    for item in items if isinstance(items, list) else ():
        assistant = is_assistant_item(item)
        turns += assistant and not in_run
        in_run = assistant
    previous = body.get("previous_response_id")
    if previous is not None:
        base = _response_turn(previous)
        if base is None:
            raise LookupError(f"unknown previous_response_id {previous!r}")
        turns += base + 1
    return turns


def _tool_specs(dialect: Dialect, body: Mapping[str, Any]) -> list[tuple[str, Mapping]]:
    """(name, JSON-schema parameters) of each function tool the request offers; the tools of
    a Responses ``namespace`` tool are flattened as ``<namespace>__<name>``."""
    tools = body.get("tools")
    specs: list[tuple[str, Mapping]] = []
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, Mapping):
            continue
        if dialect == "responses" and tool.get("type") == "namespace":
            inner = {**body, "tools": tool.get("tools")}
            specs += [(f"{tool.get('name')}__{n}", p) for n, p in _tool_specs(dialect, inner)]
            continue
        if tool.get("type", "function") != "function":
            continue
        fn = tool.get("function") if dialect == "chat" else tool
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            specs.append((fn["name"], params if isinstance(params, Mapping) else {}))
    return specs


def _placeholder(name: str, schema: Mapping[str, Any], description: str) -> Any:
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    by_type = {"integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}
    if schema.get("type") in by_type:
        return by_type[schema["type"]]
    return description if name == "description" else name


def shell_call(
    dialect: Dialect,
    body: Mapping[str, Any],
    command: str,
    description: str = "Run shell command",
) -> tuple[str, dict[str, Any]]:
    """Name and arguments for running ``command`` through the request's shell-like tool."""
    for name, params in _tool_specs(dialect, body):
        if name.rpartition("__")[2] not in SHELL_TOOL_NAMES:
            continue
        props = params.get("properties")
        props = props if isinstance(props, Mapping) else {}
        if "cmd" in props:
            args: dict[str, Any] = {"cmd": command}
        elif "command" in props:
            as_list = isinstance(props["command"], Mapping) and props["command"].get("type")
            args = {"command": ["sh", "-c", command] if as_list == "array" else command}
        else:
            continue
        required = params.get("required")
        for field in required if isinstance(required, list) else ():
            if field not in args:
                spec = props.get(field)
                args[field] = _placeholder(
                    field, spec if isinstance(spec, Mapping) else {}, description
                )
        return name, args
    offered = [name for name, _ in _tool_specs(dialect, body)]
    raise LookupError(
        f"the script runs a shell command but the request offers no shell-like tool "
        f"(looked for {', '.join(SHELL_TOOL_NAMES)} with a cmd or command parameter; "
        f"offered: {offered})"
    )


# --------------------------------------------------------------------------- engine


def _response_id(turn: int) -> str:
    """Response ids carry the turn they answer, so ``previous_response_id`` needs no state."""
    return f"{new_id('resp')}_t{turn}"


def scripted_usage(attempt: int) -> Usage:
    """Deterministic per attempt, and different for each attempt, so double counting shows."""
    return Usage(input_tokens=20 + attempt, output_tokens=8, cached_tokens=3, reasoning_tokens=2)


class ScriptRunner:
    """Answers requests from scripts; remembers only per-rollout error budgets and attempts."""

    def __init__(self) -> None:
        self._spent: dict[str, dict[int, int]] = {}  # rollout → turn → attempts at that turn
        self._attempts: dict[str, int] = {}  # rollout → scripted (non-auxiliary) attempts

    def forget(self, rollout_id: str) -> None:
        self._spent.pop(rollout_id, None)
        self._attempts.pop(rollout_id, None)

    def answer(
        self,
        script: tuple[_Turn, ...],
        rollout_id: str,
        dialect: Dialect,
        body: Mapping[str, Any],
        model: str,
    ) -> AssistantTurn | ErrorReply:
        try:
            turn = turn_of(dialect, body)
        except LookupError as exc:
            return ErrorReply(400, str(exc), "invalid_request_error")
        if not body.get("tools") and uses_tools(script):
            return AssistantTurn(_response_id(turn), model, scripted_usage(0), AUXILIARY_TEXT)
        attempt = self._attempts.get(rollout_id, 0)
        self._attempts[rollout_id] = attempt + 1
        if turn >= len(script):
            return ErrorReply(
                409,
                f"the script has {len(script)} turns and this request is at turn {turn}: "
                "the model already gave its final answer",
                "script_exhausted",
            )
        planned = script[turn]
        spent = self._spent.setdefault(rollout_id, {})
        tries = spent.get(turn, 0)
        spent[turn] = tries + 1
        if tries < len(planned.errors):
            return planned.errors[tries]
        if planned.step is None:
            return planned.errors[-1]
        return self._render(planned.step, turn, attempt, dialect, body, model)

    @staticmethod
    def _render(
        step: Step, turn: int, attempt: int, dialect: Dialect, body: Mapping, model: str
    ) -> AssistantTurn | ErrorReply:
        usage = scripted_usage(attempt)
        response_id = _response_id(turn)
        text = step.get("text")
        if not any(k in step for k in _TOOL_STEPS):
            return AssistantTurn(response_id, model, usage, text=text)
        try:
            name, args = _tool_of(step, dialect, body)
        except LookupError as exc:
            return ErrorReply(409, str(exc), "script_error")
        call = FunctionCall(new_id("call"), name, orjson.dumps(args).decode())
        return AssistantTurn(response_id, model, usage, text=text, calls=(call,))


def _tool_of(step: Step, dialect: Dialect, body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The call a step makes: its named tool when the request offers it (or when the step has
    no shell equivalent), else its shell command through the request's shell-like tool."""
    if "call" in step:
        offered = {name for name, _ in _tool_specs(dialect, body)}
        if step["call"] in offered or "tool" not in step:
            return step["call"], dict(step.get("args", {}))
    return shell_call(dialect, body, step["tool"])
