"""The session-keeping base of the bundled resources servers, and their default metrics.

Seeds and closes follow the session rules of ``sessions`` (identical seed reuses the session,
a conflicting one or one after close is refused, repeated closes answer the same receipt).
Seed and verify also take the caller's session cookie, as NeMo Gym's resources servers bind a
session by the cookie their seed set: the id it names must be the session's, so a caller
holding another session's cookie, or a malformed one, is refused (``SessionConflict``); a
caller without one is bound by id alone.
Subclasses add per-session state, tools, ``verify`` and ``reference_script``.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from gym_assets.rollouts.episodes.sessions import SessionBook

S = TypeVar("S")


class ToolFailed(Exception):
    """A tool ran and failed (e.g. a shell command exited non-zero). Its ``output`` is still
    what the model is shown; the agent records the execution as failed, not completed."""

    def __init__(self, output: str, error_type: str) -> None:
        super().__init__(error_type)
        self.output = output
        self.error_type = error_type


class SessionResources(Generic[S]):
    """Session bookkeeping plus a tool table; no tools and no state unless a subclass adds them.

    ``grades_saved_answer`` is True for a verifier whose grade follows from its verify body
    alone (the task and the answer), never from what the episode did in the session (a ticket
    the agent filed, a file it wrote): only such a grade can be given again to a saved record
    (``rollouts reverify``). False unless a subclass says so.
    """

    grades_saved_answer: ClassVar[bool] = False

    def __init__(self, name: str) -> None:
        self.name = name
        self.sessions: SessionBook[S | None] = SessionBook()

    def new_state(self, task_data: Mapping[str, Any]) -> S | None:
        """Per-session state built at seed time (stateless servers keep none)."""
        return None

    async def seed_session(
        self, session_id: str, episode_id: str, task_data: Mapping, *, cookie: str | None = None
    ) -> dict:
        """Bind the session; the reply's id is the one the caller's cookie then names."""
        binding = {"episode_id": episode_id, "task_data": dict(task_data)}
        self.sessions.seed(session_id, binding, lambda: self.new_state(task_data), cookie)
        return {"resources_session_id": session_id}

    def tools(self, session_id: str) -> Sequence[Mapping[str, Any]]:
        return []

    async def call_tool(self, session_id: str, name: str, arguments: Mapping) -> str:
        raise LookupError(f"{self.name} has no tool named {name!r}")

    async def close_session(self, session_id: str, episode_id: str) -> dict:
        return self.sessions.close(
            session_id, episode_id, lambda _state: {"resources_session_id": session_id}
        )


def graded(body: Mapping[str, Any], reward: float, **extras: Any) -> dict[str, Any]:
    """A completed verification: the verify body, its reward, and the grading fields that every
    rollout must state explicitly (a completed, unmasked evaluation unless ``extras`` say not)."""
    return {**body, "reward": reward, "evaluation_completed": True, "mask_sample": False, **extras}


def default_aggregate_metrics(verify_responses: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mean/min/max/median/std of every numeric top-level field; key metrics are the means."""
    columns: dict[str, list[float]] = {}
    for record in verify_responses:
        for key, value in record.items():
            if isinstance(value, int | float):
                columns.setdefault(key, []).append(float(value))
    agent_metrics: dict[str, float] = {}
    for key, values in columns.items():
        agent_metrics[f"mean/{key}"] = statistics.fmean(values)
        agent_metrics[f"min/{key}"] = min(values)
        agent_metrics[f"max/{key}"] = max(values)
        agent_metrics[f"median/{key}"] = statistics.median(values)
        agent_metrics[f"std/{key}"] = statistics.pstdev(values)
    key_metrics = {k: v for k, v in agent_metrics.items() if k.startswith("mean/")}
    return {
        "agent_metrics": agent_metrics,
        "key_metrics": key_metrics,
        "group_level_metrics": [],
        "repeat_level_metrics": [],
    }
