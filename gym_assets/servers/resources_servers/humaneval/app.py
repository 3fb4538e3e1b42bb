"""HumanEval verifier: the problem's unit tests, judged on the trusted side, against the
completion's code running in the sandbox.

The completion's code is the last fenced Python block of the final answer. If it defines the
entry point it is the whole program; otherwise it is the body that follows the prompt. The
program runs in a fresh, single-use guest (``gym_assets.sandbox``); the tests run here and call
it with plain data (``trusted_tests``). Whatever the program does (crash, hang, exhaust its
limits, print junk, return something that is not plain data) scores 0 with the reason in
``test_result``. Only a failure of our own machinery (no guest could start, the dataset's own
code failing) masks the sample.

The answer is model text, so reading it never backtracks: the fences and the entry point's
``def`` are found by scanning (a regex over it was quadratic on blank lines). All of the work,
the reading included, runs off the event loop and within ``timeout_seconds``; past it (and a
grace for the guest's teardown) the answer is ``timed out``.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gym_assets.records.contracts import Step
from gym_assets.rollouts.episodes.failures import describe
from gym_assets.rollouts.episodes.resources import SessionResources, graded
from gym_assets.rollouts.episodes.responses import final_text
from gym_assets.sandbox import TIMED_OUT, GuestPool, Limits, SandboxPolicy
from gym_assets.servers.resources_servers.humaneval.trusted_tests import Outcome, run_tests

FENCE = "```"
# Runs of one character class: each match is one linear scan, nothing to backtrack over.
_LANGUAGE = re.compile(r"[A-Za-z0-9_+-]*")
_FENCE_BLANKS = re.compile(r"[ \t]*")
_BLANKS = re.compile(r"[^\S\n]*")  # whitespace within a line
_SPACES = re.compile(r"\s*")
# What the verification may take beyond ``timeout_seconds`` before its answer is ``timed out``:
# the guest's own deadline kills it at ``timeout_seconds``; this covers the teardown.
TEARDOWN_GRACE_SECONDS = 5.0


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
    """The last ```python block (else the last fenced block, else the text itself): an
    opening fence is ``` with a language word, blanks and a newline; the block runs to the next
    ```. One pass: once a fence has no closing one, no later fence has either."""
    blocks: list[tuple[str, str]] = []
    at = text.find(FENCE)
    while at >= 0:
        word = at + len(FENCE)
        end = _skip(_LANGUAGE, text, word)
        body = _skip(_FENCE_BLANKS, text, end)
        if not text.startswith("\n", body):
            at = text.find(FENCE, at + 1)
            continue
        close = text.find(FENCE, body + 1)
        if close < 0:
            break
        blocks.append((text[word:end], text[body + 1 : close]))
        at = text.find(FENCE, close + len(FENCE))
    python = [code for lang, code in blocks if lang.lower() in ("python", "py", "python3")]
    if python:
        return python[-1]
    return blocks[-1][1] if blocks else text


def defines(code: str, name: str) -> bool:
    """Whether a line of ``code`` starts (after blanks) with ``def``, whitespace, ``name``,
    optional whitespace and ``(`` (whitespace there may span lines). Only a line's first
    ``def`` can start it, so each line is looked at once, from its first ``def``."""
    at = code.find("def")
    while at >= 0:
        line = code.rfind("\n", 0, at) + 1
        if _skip(_BLANKS, code, line) == at and _names(code, at + 3, name):
            return True
        line_end = code.find("\n", at)
        at = -1 if line_end < 0 else code.find("def", line_end + 1)
    return False


def _names(code: str, at: int, name: str) -> bool:
    """Whether whitespace, ``name``, optional whitespace and ``(`` follow ``at``. Only called
    after a line's ``def``: the whitespace it scans holds no other line's ``def``."""
    after = _skip(_SPACES, code, at)
    return (
        after > at
        and code.startswith(name, after)
        and code.startswith("(", _skip(_SPACES, code, after + len(name)))
    )


def _skip(run: re.Pattern[str], text: str, at: int) -> int:
    """Where the run of ``run`` (a pattern that matches the empty string) starting at ``at``
    ends."""
    found = run.match(text, at)
    assert found is not None
    return found.end()


def program_parts(problem: Mapping[str, Any], code: str) -> tuple[str, str]:
    """``(prompt, completion)`` for check_correctness: whole code, or code after the prompt."""
    whole = defines(code, problem["entry_point"])
    return ("", code) if whole else (problem["prompt"], code)


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

    async def verify(
        self, session_id: str, body: Mapping[str, Any], *, cookie: str | None = None
    ) -> dict:
        self.sessions.state(session_id, cookie)
        try:
            problem = problem_of(body)
            judging = asyncio.to_thread(self._judge, problem, final_text(body.get("response")))
            deadline = self.settings.timeout_seconds + TEARDOWN_GRACE_SECONDS
            outcome = await asyncio.wait_for(judging, deadline)
        except TimeoutError:
            outcome = Outcome(False, TIMED_OUT)
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

    def _judge(self, problem: Mapping[str, str], answer: str) -> Outcome:
        """Read the program out of the answer, then test it, all within the deadline."""
        started = time.monotonic()
        prompt, completion = program_parts(problem, extract_code(answer))
        left = self.settings.timeout_seconds - (time.monotonic() - started)
        if left <= 0:
            return Outcome(False, TIMED_OUT)
        with self.guests.session() as session:
            return run_tests(problem, prompt + completion, session, left)


def create(name: str, settings: Mapping[str, Any], *, sandbox: SandboxPolicy) -> HumanEvalResources:
    parsed = Settings.model_validate(dict(settings))
    return HumanEvalResources(name, parsed, sandbox.guests(parsed.limits()))
