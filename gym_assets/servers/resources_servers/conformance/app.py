"""The conformance resources server: the seed/verify side of a scripted scenario.

It witnesses what the harness under test does with the episode, beside the scripted provider
(``gym_assets.suite.scripted_provider``), in the same ``witness.json``:

* ``seed_session`` counts the seed (``seeded`` += 1; exactly one is expected);
* ``verify`` sees the answer iff the response holds an assistant message whose text part is
  exactly ``CONFORMANCE_DONE``, grades 1.0 only then and only when the scenario expects 1.0
  (so ``verifier_failure`` grades 0 after a perfect episode), and records
  ``{reward, answer_seen}``;
* it offers a ``bash`` tool for agents that execute tools through their resources server (the
  built-in ones). The command comes from the model, so it runs only in the sandbox, in the
  episode's workspace — the one host directory the sandbox may write — where the provider
  looks for its marker files. A non-zero exit is a failed tool call (``ToolFailed``); its
  output is still what the model sees.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from gym_assets.conformance.witness_log import WitnessData, WitnessLog
from gym_assets.records.contracts import Step
from gym_assets.rollouts.episodes.resources import SessionResources, ToolFailed, graded
from gym_assets.rollouts.episodes.responses import message_text
from gym_assets.sandbox import CandidateRaised, GuestFault, GuestSession, Limits, SandboxPolicy
from gym_assets.suite.scenarios import FINAL_ANSWER
from gym_assets.suite.scripted_provider import refresh_executed

SHELL_TOOL = {
    "type": "function",
    "name": "bash",
    "description": "Run a shell command in the episode's workspace; returns its output.",
    "parameters": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
        "additionalProperties": False,
    },
    "strict": True,
}
OUTPUT_CHARS = 16_384
# Runs inside the sandbox (stdlib only): the command under sh, in the bound workspace. Each
# call gets a fresh uid, so files are made world-writable for the episode's later commands.
_SHELL_GUEST = """
import os, subprocess

def run(command, cwd, timeout):
    os.umask(0)
    done = subprocess.run(["/bin/sh", "-c", command], cwd=cwd, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return [done.returncode, done.stdout.decode("utf-8", "replace")[:LIMIT]]
""".replace("LIMIT", str(OUTPUT_CHARS))


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    witness: Path  # the episode's witness.json
    workspace: Path  # the directory shell commands run in (and may write)
    expected_reward: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    tool_timeout_seconds: float = Field(default=10.0, gt=0, le=600, allow_inf_nan=False)


def answer_seen(response: Any) -> bool:
    """An assistant message whose text is exactly the final answer."""
    output = response.get("output") if isinstance(response, Mapping) else None
    for item in output if isinstance(output, list) else ():
        if (
            isinstance(item, Mapping)
            and item.get("type") == "message"
            and item.get("role", "assistant") == "assistant"
            and message_text(item) == FINAL_ANSWER
        ):
            return True
    return False


class ConformanceResources(SessionResources[None]):
    def __init__(self, name: str, settings: Settings, sandbox: SandboxPolicy) -> None:
        super().__init__(name)
        self.settings = settings
        self.sandbox = sandbox
        self.witness = WitnessLog(settings.witness)

    async def seed_session(
        self, session_id: str, episode_id: str, task_data: Mapping, *, cookie: str | None = None
    ) -> dict:
        def count(data: WitnessData) -> None:
            data["seeded"] += 1

        self.witness.update(count)
        return await super().seed_session(session_id, episode_id, task_data, cookie=cookie)

    def tools(self, session_id: str) -> Sequence[Mapping[str, Any]]:
        return [SHELL_TOOL]

    async def call_tool(self, session_id: str, name: str, arguments: Mapping) -> str:
        self.sessions.state(session_id)
        if name != SHELL_TOOL["name"]:
            return await super().call_tool(session_id, name, arguments)
        command = arguments.get("command")
        if not isinstance(command, str):
            raise ToolFailed("the command must be a string", "invalid_arguments")
        code, output = await asyncio.to_thread(self._run, command)
        if code != 0:
            raise ToolFailed(f"{output}[exit code {code}]", f"exit_code_{code}")
        return output

    def _run(self, command: str) -> tuple[int, str]:
        """Run ``command`` in a single-use sandbox; its answer is untrusted plain data."""
        workspace = self.settings.workspace
        os.chmod(workspace, 0o777)  # the sandbox's own uid writes here
        timeout = self.settings.tool_timeout_seconds
        limits = Limits(cpu_seconds=int(timeout) + 1, processes=16)
        try:
            with GuestSession(self.sandbox.isolation(), limits, workspace) as guest:
                guest.load(_SHELL_GUEST, timeout + 5)
                answer = guest.call("run", [command, str(workspace), timeout], {})
        except (CandidateRaised, GuestFault) as exc:
            raise ToolFailed(f"the command did not finish: {exc}", type(exc).__name__) from None
        if (
            not isinstance(answer, list)
            or len(answer) != 2
            or type(answer[0]) is not int
            or not isinstance(answer[1], str)
        ):
            raise ToolFailed("the sandbox answered something other than a result", "bad_answer")
        return answer[0], answer[1]

    async def verify(
        self, session_id: str, body: Mapping[str, Any], *, cookie: str | None = None
    ) -> dict:
        self.sessions.state(session_id, cookie)
        seen = answer_seen(body.get("response"))
        reward = 1.0 if seen and self.settings.expected_reward == 1.0 else 0.0

        def record(data: WitnessData) -> None:
            refresh_executed(data)
            data["verifications"].append({"reward": reward, "answer_seen": seen})

        self.witness.update(record)
        return graded(body, reward)

    def reference_script(self, task_data: Mapping[str, Any]) -> list[Step]:
        """A model that knows the answer just gives it (the probe, not this, drives episodes)."""
        return [{"text": FINAL_ANSWER}]


def create(
    name: str, settings: Mapping[str, Any], *, sandbox: SandboxPolicy
) -> ConformanceResources:
    return ConformanceResources(name, Settings.model_validate(dict(settings)), sandbox)
