"""The witness that matches the conformance baseline record, and the scenarios of the suite.

The baseline record (``fixtures.baseline_record``) is a ``verifier_failure`` episode: two tool
steps, reward 0.0. Its witness saw exactly the two retained exchanges, both tool executions
with output ``value``, one seed and one verification with the answer.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from gym_assets.conformance.behavioral_checks import Prescription, run_behavioral
from gym_assets.conformance.engine import Results
from gym_assets.conformance.witness import (
    Witness,
    WitnessedAttempt,
    WitnessedToolCall,
    WitnessedVerification,
)
from gym_assets_tests.conformance import fixtures as fx

SCENARIOS: dict[str, Prescription] = {
    "tool_success": Prescription(),
    "tool_failure": Prescription(),  # its exit code 7 is prescribed per call, in the witness
    "usage_omitted": Prescription(),
    "retry_429": Prescription(http_errors=(429, 429)),
    "retry_500": Prescription(http_errors=(500,)),
    "model_error": Prescription(
        tool_steps=0, http_errors=(400,), terminal_error=True, expected_reward=0.0
    ),
    "verifier_failure": Prescription(expected_reward=0.0),
}
BASELINE = SCENARIOS["verifier_failure"]


def attempt_for(call: dict[str, Any], index: int) -> WitnessedAttempt:
    """The witnessed twin of a retained call (what the provider saw and sent)."""
    return WitnessedAttempt(
        attempt_id=f"attempt-{index}",
        request=copy.deepcopy(call.get("request")),
        response=copy.deepcopy(call.get("response")),
        status_code=call["response_metadata"]["status_code"],
    )


def baseline_witness(record: dict[str, Any] | None = None) -> Witness:
    """The witness of the baseline episode (attempts mirror ``record``'s calls when given)."""
    record = record or fx.baseline_record()
    return Witness(
        attempts=tuple(attempt_for(c, i) for i, c in enumerate(fx.calls(record))),
        tool_calls=tuple(
            WitnessedToolCall(
                id=f"tool-{k}",
                name=fx.TOOL_NAME,
                arguments=json.loads(fx.TOOL_ARGUMENTS),
                exit_code=0,
                executed=True,
                result_seen=True,
                outputs=(fx.TOOL_OUTPUT,),
            )
            for k in fx.STEPS
        ),
        verifications=(WitnessedVerification(reward=0.0, answer_seen=True),),
        seeded=1,
        finished=True,
    )


def behavioral(
    record: dict[str, Any] | None,
    witness: Witness | None,
    prescription: Prescription = BASELINE,
    **kwargs: Any,
) -> Results:
    return run_behavioral(witness, record, prescription, **kwargs)


def failing(results: Results) -> set[str]:
    return {row.id for row in results.rows() if row.status == "fail"}


def reasons(results: Results) -> list[str]:
    return [reason for row in results.rows() for reason in row.reasons]
