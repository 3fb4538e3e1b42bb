"""Exact-match verifier: the final answer, normalised, equals the expected answer or an alias.

Normalisation forgives what a correct answer may differ in — case, surrounding whitespace and
quotes, runs of spaces, one trailing full stop — and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gym_assets.records.contracts import Step
from gym_assets.rollouts.episodes.resources import SessionResources, graded
from gym_assets.rollouts.episodes.responses import final_text
from gym_assets.servers.resources_servers.exact_match.task_data import TaskData


def normalise(text: str) -> str:
    text = " ".join(text.split()).strip("\"'`").strip()
    return text.removesuffix(".").strip().casefold()


class ExactMatchResources(SessionResources[None]):
    grades_saved_answer = True

    async def verify(
        self, session_id: str, body: Mapping[str, Any], *, cookie: str | None = None
    ) -> dict:
        self.sessions.state(session_id, cookie)
        task = TaskData.model_validate(
            {key: body[key] for key in ("expected_answer", "aliases") if key in body}
        )
        answer = normalise(final_text(body.get("response")))
        accepted = {normalise(task.expected_answer), *(normalise(a) for a in task.aliases)}
        return graded(body, 1.0 if answer in accepted else 0.0)

    def reference_script(self, task_data: Mapping[str, Any]) -> list[Step]:
        return [{"text": str(task_data["expected_answer"])}]


def create(name: str, settings: Mapping[str, Any]) -> ExactMatchResources:
    return ExactMatchResources(name)
