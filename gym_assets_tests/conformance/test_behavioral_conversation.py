"""``model.task_params`` and ``model.full_history``: what the harness sent, held against the task.

The baseline's requests are made turns of the conversation (they offer a tool); each test then
changes what one witnessed request carried, as a truncating or a model-overriding harness would.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from gym_assets.conformance.behavioral_checks import Prescription
from gym_assets.conformance.witness import Witness
from gym_assets_tests.conformance import fixtures as fx
from gym_assets_tests.conformance.witness_fixtures import BASELINE, baseline_witness, behavioral

TASK = Prescription(
    tool_steps=BASELINE.tool_steps,
    expected_reward=BASELINE.expected_reward,
    create_params={"input": [dict(fx.USER_MESSAGE)]},
    model=fx.MODEL_NAME,
)
NEW = ("model.task_params", "model.full_history")


def _turns() -> tuple[dict[str, Any], Witness]:
    record = fx.baseline_record()
    for call in fx.calls(record):
        call["request"]["tools"] = [dict(fx.TASK_TOOL)]
    return record, baseline_witness(record)


def _statuses(
    change: Callable[[list[dict[str, Any]]], None] | None = None,
    prescription: Prescription = TASK,
) -> dict[str, str]:
    """The new checks' statuses over the baseline's two turns plus the final-answer turn."""
    record, witness = _turns()
    final = copy.deepcopy(witness.attempts[-1])
    history = final.request["input"]
    history += [fx.function_call(2), fx.function_call_output(2)]
    final = dataclasses.replace(final, attempt_id="attempt-2", response={"output": []})
    witness = dataclasses.replace(witness, attempts=(*witness.attempts, final))
    requests = [a.request for a in witness.attempts]
    if change is not None:
        change(requests)
    rows = behavioral(record, witness, prescription).rows()
    return {row.id: str(row.status) for row in rows if row.id in NEW}


def test_a_harness_that_keeps_the_task_and_the_conversation_passes() -> None:
    assert _statuses() == dict.fromkeys(NEW, "pass")


def test_auxiliary_requests_are_not_turns() -> None:
    """A title request (no tools) may name a small model and carry only the prompt."""

    def title(requests: list[dict[str, Any]]) -> None:
        del requests[1]["tools"]
        requests[1].update(model="small-model", input=[])

    assert _statuses(title) == dict.fromkeys(NEW, "pass")


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r[1].update(model="another-model"),
        lambda r: r[0].update(temperature=0.2),
        lambda r: r[1].update(top_p=0.5),
    ],
    ids=["model", "temperature", "top_p"],
)
def test_another_model_or_other_sampling_fails_task_params(change: Callable) -> None:
    assert _statuses(change) == {"model.task_params": "fail", "model.full_history": "pass"}


def test_the_task_s_sampling_must_be_sent_and_defaults_may_be_spelled_out() -> None:
    asked = dataclasses.replace(
        TASK, create_params={**TASK.create_params, "temperature": 0.3, "max_output_tokens": 64}
    )
    assert _statuses(prescription=asked)["model.task_params"] == "fail"

    def honour(requests: list[dict[str, Any]]) -> None:
        for request in requests:
            request.update(temperature=0.3, max_output_tokens=64, top_p=1)

    assert _statuses(honour, asked)["model.task_params"] == "pass"


def test_the_task_s_model_wins_over_the_run_s() -> None:
    named = dataclasses.replace(TASK, create_params={**TASK.create_params, "model": "task-model"})
    assert _statuses(prescription=named)["model.task_params"] == "fail"


def _truncate(requests: list[dict[str, Any]]) -> None:
    """Keep the task and the latest exchange only, as a harness with a short window would."""
    requests[2]["input"] = requests[2]["input"][:1] + requests[2]["input"][-2:]


def _rewrite(requests: list[dict[str, Any]]) -> None:
    """An earlier tool result comes back summarised."""
    requests[2]["input"][2]["output"] = "summarised"


def _drop_task(requests: list[dict[str, Any]]) -> None:
    requests[1]["input"] = requests[1]["input"][1:]


def _drop_call(requests: list[dict[str, Any]]) -> None:
    """The result is kept but the model's call that asked for it is gone."""
    del requests[1]["input"][1]


@pytest.mark.parametrize("change", [_truncate, _rewrite, _drop_task, _drop_call])
def test_dropped_or_rewritten_turns_fail_full_history(change: Callable) -> None:
    assert _statuses(change) == {"model.task_params": "pass", "model.full_history": "fail"}
