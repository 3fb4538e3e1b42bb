"""The scripted conformance scenarios: suite ``harness-p0-probes/v1`` (docs/conformance.md).

A scenario is what the scripted provider and the conformance resources server prescribe for
one episode; it never reaches the harness (the task the harness sees is only the prompt of
:func:`task_input`). Applicability of checks comes from the scenario alone (:meth:`scope`),
never from what a harness happened to save. Stdlib only: ``--list-scenarios`` prints the
manifest without loading the checks (``scope`` is a plain dataclass too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gym_assets.conformance.scope import EvidenceScope
from gym_assets.errors import UserError

SUITE_ID = "harness-p0-probes/v1"
ALL_EVIDENCE = tuple(f"TE-{n}" for n in range(1, 10))
FINAL_ANSWER = "CONFORMANCE_DONE"
PROMPT = f"Run the requested shell checks, then report {FINAL_ANSWER}."
MODEL = "conformance-model"  # the run's model: what the gateway tells a harness to send


@dataclass(frozen=True)
class Scenario:
    """One scripted episode: what the provider does and what the verdict expects."""

    name: str
    description: str
    evidence: tuple[str, ...] = ALL_EVIDENCE
    tool_steps: int = 2
    tool_exit_code: int = 0
    usage: bool = True
    http_errors: tuple[int, ...] = ()
    terminal_error: bool = False
    expected_reward: float = 1.0
    steps: bool = True
    health_expectations: Mapping[str, str] = field(default_factory=dict)

    def scope(self) -> EvidenceScope:
        """Which evidence classes the scenario puts in scope (docs/evidence-format.md#scope)."""
        return EvidenceScope.for_scenario(
            tool_steps=self.tool_steps, terminal_error=self.terminal_error, steps=self.steps
        )

    @property
    def create_params(self) -> Mapping[str, Any]:
        """The task's ``responses_create_params`` (a suite run has no overrides)."""
        return task_input(self)["responses_create_params"]

    @property
    def model(self) -> str:
        return MODEL

    def status_for(self, attempt: int) -> int:
        """The HTTP status the provider answers the ``attempt``-th tool-carrying request with."""
        if attempt < len(self.http_errors):
            return self.http_errors[attempt]
        if self.terminal_error and self.http_errors:
            return self.http_errors[-1]
        return 200

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "evidence": list(self.evidence),
            "tool_steps": self.tool_steps,
            "tool_exit_code": self.tool_exit_code,
            "usage": self.usage,
            "http_errors": list(self.http_errors),
            "terminal_error": self.terminal_error,
            "expected_reward": self.expected_reward,
            "steps": self.steps,
            "health_expectations": dict(self.health_expectations),
        }


_USAGE_OMITTED = {
    "model_call_missing_token_counts": "unhealthy",
    "rollout_token_count_mismatch": "unobserved",
}

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "tool_success",
        "Two shell calls, each result visible in the next request, then the final answer.",
    ),
    Scenario(
        "tool_failure",
        "The first shell command exits 7 and must be saved as failed; the second succeeds.",
        tool_exit_code=7,
    ),
    Scenario(
        "usage_omitted",
        "As tool_success, but no reply carries usage: every saved token count stays null.",
        usage=False,
        health_expectations=_USAGE_OMITTED,
    ),
    Scenario(
        "retry_429",
        "The first two attempts get HTTP 429; both are saved, with identical request bodies.",
        http_errors=(429, 429),
    ),
    Scenario(
        "retry_500",
        "One HTTP 500 whose error body is saved, then the tool sequence.",
        http_errors=(500,),
    ),
    Scenario(
        "model_error",
        "Every attempt gets a permanent HTTP 400 with an error body and no response id.",
        evidence=("TE-1", "TE-2", "TE-4", "TE-7", "TE-8"),
        tool_steps=0,
        http_errors=(400,),
        terminal_error=True,
        expected_reward=0.0,
        steps=False,
        health_expectations={
            "rollout_ended_on_failed_model_call": "unhealthy",
            "rollout_token_count_mismatch": "unobserved",
        },
    ),
    Scenario(
        "verifier_failure",
        "The full tool sequence and final answer, but the verifier grades 0.",
        expected_reward=0.0,
    ),
)

SCENARIO_NAMES = tuple(s.name for s in SCENARIOS)


def manifest() -> dict[str, Any]:
    """The suite manifest (``--list-scenarios`` and ``suite.json``)."""
    return {"version": SUITE_ID, "scenarios": [s.to_json() for s in SCENARIOS]}


def get_scenario(name: str) -> Scenario:
    for scenario in SCENARIOS:
        if scenario.name == name:
            return scenario
    raise UserError(f"unknown scenario '{name}'; the suite has {', '.join(SCENARIO_NAMES)}")


def select_scenarios(names: Sequence[str] | None) -> tuple[Scenario, ...]:
    """The named scenarios in catalogue order (all when ``names`` is empty or None)."""
    if not names:
        return SCENARIOS
    wanted = {get_scenario(name).name for name in names}
    return tuple(s for s in SCENARIOS if s.name in wanted)


def task_input(scenario: Scenario) -> dict[str, Any]:
    """What the harness is given: the prompt only; expectations never leak into it."""
    return {
        "responses_create_params": {"input": [{"role": "user", "content": PROMPT}]},
        "task_data": {},
    }
