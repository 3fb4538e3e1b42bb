"""Grading an answer outside its episode, in a freshly seeded resources session: how reverify
re-scores a saved record, and how a rollout whose model call failed for good still reaches its
verifier with its evidence (NeMo Gym PR #4048)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from gym_assets.records.contracts import ResourcesServer
from gym_assets.tasks.task_inputs import SingleAgentTurnTaskInput

ANSWER_KEYS = ("response", "conversation")  # what the agent produced, as the record kept it
REQUEST_KEY = "responses_create_params"


def reference_task_data(task_input: Mapping[str, Any]) -> dict[str, Any]:
    """What a resources server derives a reference script from: the task data together with
    the request (as verification sees them), or the task input as is for other protocols."""
    try:
        parsed = SingleAgentTurnTaskInput.model_validate(dict(task_input))
    except ValidationError:
        return dict(task_input)
    params = parsed.responses_create_params.model_dump(exclude_unset=True)
    return {**parsed.task_data, REQUEST_KEY: params}


def verification_request(
    task_input: Mapping[str, Any], answer: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(seed data, verify body)``: the task as the environment server gave it to the
    resources server, and the task with the answer (``ANSWER_KEYS`` of ``answer``)."""
    task = reference_task_data(task_input)
    seed = {k: v for k, v in task.items() if k != REQUEST_KEY}
    return seed, {**task, **{k: answer[k] for k in ANSWER_KEYS if k in answer}}


async def verify_answer(
    resources: ResourcesServer, task_input: Mapping[str, Any], answer: Mapping[str, Any], label: str
) -> dict[str, Any]:
    """The verifier's response to ``answer`` for the task (its exceptions propagate)."""
    seed, body = verification_request(task_input, answer)
    session, episode = f"{label}-session-{uuid.uuid4().hex}", f"{label}-{uuid.uuid4().hex}"
    await resources.seed_session(session, episode, seed)
    try:
        return dict(await resources.verify(session, body, cookie=session))
    finally:
        await resources.close_session(session, episode)
