"""The independent tool witness: what the scripted provider itself observed in one episode.

The scripted model endpoint sees every exchange and every tool result the harness sends back,
and the scripted resources server sees every seed and verification. It records them in
``witness.json`` independently of anything the harness or the collector writes, so behavioral
checks can hold the retained evidence against it. Parsing is strict: a malformed witness is an
input error naming the file and the field, never the field's value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gym_assets.errors import UserError
from gym_assets.fileio import atomic_write_text, parse_json_line

WITNESS_FILE = "witness.json"


class WitnessError(UserError):
    """``witness.json`` exists but does not have the witness shape."""


@dataclass(frozen=True)
class WitnessedAttempt:
    """One model request the provider answered, exactly as it saw and sent it."""

    attempt_id: str
    request: Any
    response: Any
    status_code: int | None


@dataclass(frozen=True)
class WitnessedToolCall:
    """One tool call the provider prescribed, and what it later saw of its execution."""

    id: str
    name: str
    arguments: Any
    exit_code: int
    executed: bool
    result_seen: bool
    outputs: tuple[Any, ...] = ()
    token: str = ""
    marker: str = ""


@dataclass(frozen=True)
class WitnessedVerification:
    reward: float
    answer_seen: bool


@dataclass(frozen=True)
class Witness:
    """The whole witness of one episode."""

    attempts: tuple[WitnessedAttempt, ...] = ()
    tool_calls: tuple[WitnessedToolCall, ...] = ()
    violations: tuple[str, ...] = ()
    verifications: tuple[WitnessedVerification, ...] = ()
    seeded: int = 0
    finished: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "attempts": [
                {
                    "attempt_id": a.attempt_id,
                    "request": a.request,
                    "response": a.response,
                    "status_code": a.status_code,
                }
                for a in self.attempts
            ],
            "tool_calls": [
                {
                    "id": t.id,
                    "name": t.name,
                    "arguments": t.arguments,
                    "token": t.token,
                    "marker": t.marker,
                    "exit_code": t.exit_code,
                    "executed": t.executed,
                    "result_seen": t.result_seen,
                    "outputs": list(t.outputs),
                }
                for t in self.tool_calls
            ],
            "violations": list(self.violations),
            "verifications": [
                {"reward": v.reward, "answer_seen": v.answer_seen} for v in self.verifications
            ],
            "seeded": self.seeded,
            "finished": self.finished,
            **dict(self.extra),
        }


_KNOWN_KEYS = frozenset(
    {"attempts", "tool_calls", "violations", "verifications", "seeded", "finished"}
)


class _Reader:
    """Typed field access that reports the failing field's path, never its value."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, expected: str) -> WitnessError:
        return WitnessError(f"witness field {where} must be {expected}", path=self.source)

    def obj(self, value: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(where, "an object")
        return value

    def items(self, value: Mapping[str, Any], key: str, where: str) -> list[Any]:
        items = value.get(key, [])
        if not isinstance(items, list):
            raise self.fail(f"{where}{key}", "an array")
        return items

    def typed(self, value: Mapping[str, Any], key: str, where: str, *kinds: type) -> Any:
        """``value[key]`` if it is one of ``kinds``; a boolean never counts as a number."""
        item = value.get(key)
        if isinstance(item, bool) and bool not in kinds:
            raise self.fail(f"{where}{key}", _describe(kinds))
        if not isinstance(item, kinds):
            raise self.fail(f"{where}{key}", _describe(kinds))
        return item


_KIND_NAMES = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}


def _describe(kinds: tuple[type, ...]) -> str:
    return " or ".join(_KIND_NAMES.get(k, "null") for k in kinds)


def witness_from_json(value: Any, *, source: str = WITNESS_FILE) -> Witness:
    """Build a ``Witness`` from its JSON form, refusing anything with the wrong shape."""
    r = _Reader(source)
    top = r.obj(value, "(top level)")
    attempts = []
    for i, item in enumerate(r.items(top, "attempts", "")):
        where = f"attempts[{i}]."
        a = r.obj(item, where[:-1])
        attempts.append(
            WitnessedAttempt(
                attempt_id=r.typed(a, "attempt_id", where, str),
                request=a.get("request"),
                response=a.get("response"),
                status_code=r.typed(a, "status_code", where, int, type(None)),
            )
        )
    tools = []
    for i, item in enumerate(r.items(top, "tool_calls", "")):
        where = f"tool_calls[{i}]."
        t = r.obj(item, where[:-1])
        tools.append(
            WitnessedToolCall(
                id=r.typed(t, "id", where, str),
                name=r.typed(t, "name", where, str),
                arguments=t.get("arguments"),
                exit_code=r.typed(t, "exit_code", where, int),
                executed=r.typed(t, "executed", where, bool),
                result_seen=r.typed(t, "result_seen", where, bool),
                outputs=tuple(r.items(t, "outputs", where)),
                token=r.typed(t, "token", where, str) if "token" in t else "",
                marker=r.typed(t, "marker", where, str) if "marker" in t else "",
            )
        )
    violations = r.items(top, "violations", "")
    for i, text in enumerate(violations):
        if not isinstance(text, str):
            raise r.fail(f"violations[{i}]", "a string")
    verifications = []
    for i, item in enumerate(r.items(top, "verifications", "")):
        where = f"verifications[{i}]."
        v = r.obj(item, where[:-1])
        verifications.append(
            WitnessedVerification(
                reward=float(r.typed(v, "reward", where, int, float)),
                answer_seen=r.typed(v, "answer_seen", where, bool),
            )
        )
    return Witness(
        attempts=tuple(attempts),
        tool_calls=tuple(tools),
        violations=tuple(violations),
        verifications=tuple(verifications),
        seeded=r.typed(top, "seeded", "", int) if "seeded" in top else 0,
        finished=r.typed(top, "finished", "", bool) if "finished" in top else False,
        extra={k: v for k, v in top.items() if k not in _KNOWN_KEYS},
    )


def load_witness(path: str | Path) -> Witness | None:
    """Read ``witness.json``; ``None`` when absent (every behavioral check then fails)."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        value = parse_json_line(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise WitnessError("not valid JSON; expected one witness object", path=path) from None
    return witness_from_json(value, source=str(path))


def write_witness(path: str | Path, witness: Witness) -> None:
    """Rewrite the witness atomically, so a reader never sees half of it."""
    atomic_write_text(path, json.dumps(witness.to_json(), sort_keys=True, indent=2) + "\n")
