"""HumanEval verifier: the problem's unit tests, judged on the trusted side, against the
completion's code running in the sandbox.

The completion's code is the last fenced Python block of the final answer. If it defines the
entry point it is the whole program; otherwise it is the body that follows the prompt. The
program runs in a fresh, single-use guest (``gym_assets.sandbox``); the tests run here and call
it with plain data (``trusted_tests``). Whatever the program does (crash, hang, exhaust its
limits, print junk, return something that is not plain data) scores 0 with the reason in
``test_result``. Only a failure of our own machinery (no guest could start, the dataset's own
code failing) masks the sample.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gym_assets.records.contracts import Step
from gym_assets.rollouts.episodes.failures import describe
from gym_assets.rollouts.episodes.resources import SessionResources, graded
from gym_assets.rollouts.episodes.responses import final_text
from gym_assets.sandbox import GuestPool, Limits, SandboxPolicy
from gym_assets.servers.resources_servers.humaneval.trusted_tests import Outcome, run_tests

_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)


class Settings(BaseModel):
    model_config = ConfigDict(extra="allow")

    timeout_seconds: float = Field(default=10.0, gt=0, le=3600, allow_inf_nan=False, strict=True)
    memory_limit_mb: int = Field(default=512, ge=64, le=65536, strict=True)

    def limits(self) -> Limits:
        return Limits(
            cpu_seconds=math.ceil(self.timeout_seconds) + 1,
            memory_bytes=self.memory_limit_mb * 1024 * 1024,
        )


def extract_code(text: str) -> str:
    """The last ```python block (else the last fenced block, else the text itself)."""
    blocks = _FENCE.findall(text)
    python = [code for lang, code in blocks if lang.lower() in ("python", "py", "python3")]
    if python:
        return python[-1]
    return blocks[-1][1] if blocks else text


def program_parts(problem: Mapping[str, Any], code: str) -> tuple[str, str]:
    """``(prompt, completion)`` for check_correctness: whole code, or code after the prompt."""
    defines = re.search(rf"^\s*def\s+{re.escape(problem['entry_point'])}\s*\(", code, re.MULTILINE)
    return ("", code) if defines else (problem["prompt"], code)


def problem_of(task: Mapping[str, Any]) -> dict[str, Any]:
    """The problem from ``verifier_metadata`` (prepared rows) or the top level."""
    meta = task.get("verifier_metadata")
    source = meta if isinstance(meta, Mapping) else task
    return {
        "task_id": str(task.get("task_id", "task")),
        "prompt": source["prompt"],
        "entry_point": source["entry_point"],
        "test": source["test"],
        "canonical_solution": source.get("canonical_solution", ""),
    }


class HumanEvalResources(SessionResources[None]):
    grades_saved_answer = True

    def __init__(self, name: str, settings: Settings, guests: GuestPool) -> None:
        super().__init__(name)
        self.settings = settings
        self.guests = guests

    async def verify(self, session_id: str, body: Mapping[str, Any]) -> dict:
        self.sessions.state(session_id)
        try:
            problem = problem_of(body)
            prompt, completion = program_parts(
                problem, extract_code(final_text(body.get("response")))
            )
            outcome = await asyncio.to_thread(self._judge, problem, prompt + completion)
        except Exception as exc:  # our machinery or the dataset, never the candidate
            return {
                **body,
                "reward": 0.0,
                "evaluation_completed": False,
                "mask_sample": True,
                "failure_kind": "verifier_error",
                "failure_reason": describe(exc),
                "sandbox": self.guests.isolation.kind,
            }
        return graded(
            body,
            1.0 if outcome.passed else 0.0,
            test_result=outcome.result,
            sandbox=self.guests.isolation.kind,
        )

    def reference_script(self, task_data: Mapping[str, Any]) -> list[Step]:
        problem = problem_of(task_data)
        return [{"text": "```python\n" + problem["prompt"] + problem["canonical_solution"] + "```"}]

    def _judge(self, problem: Mapping[str, str], program: str) -> Outcome:
        with self.guests.session() as session:
            return run_tests(problem, program, session, self.settings.timeout_seconds)


def create(name: str, settings: Mapping[str, Any], *, sandbox: SandboxPolicy) -> HumanEvalResources:
    parsed = Settings.model_validate(dict(settings))
    return HumanEvalResources(name, parsed, sandbox.guests(parsed.limits()))
