"""The conformance resources server: seeds and verifications witnessed, shell tools sandboxed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gym_assets.conformance.witness import load_witness
from gym_assets.conformance.witness_log import WitnessLog
from gym_assets.rollouts.episodes.resources import ToolFailed
from gym_assets.sandbox import SandboxPolicy
from gym_assets.servers.resources_servers.conformance.app import create
from gym_assets.suite.scenarios import FINAL_ANSWER
from gym_assets.suite.scripted_provider import shell_command


def _answer(text: str) -> dict:
    content = [{"type": "output_text", "text": text}]
    return {"output": [{"type": "message", "role": "assistant", "content": content}]}


def _server(tmp_path: Path, reward: float, sandbox: SandboxPolicy):
    (tmp_path / "workspace").mkdir()
    WitnessLog(tmp_path / "witness.json").create()
    settings = {
        "witness": str(tmp_path / "witness.json"),
        "workspace": str(tmp_path / "workspace"),
        "expected_reward": reward,
    }
    return create("conformance_resources", settings, sandbox=sandbox)


@pytest.mark.parametrize(("expected", "reward"), [(1.0, 1.0), (0.0, 0.0)])
def test_seed_and_verify_are_witnessed(tmp_path: Path, expected: float, reward: float) -> None:
    with SandboxPolicy() as sandbox:
        server = _server(tmp_path, expected, sandbox)

        async def episode() -> dict:
            await server.seed_session("s", "0-0", {})
            return await server.verify("s", {"response": _answer(FINAL_ANSWER)})

        verified = asyncio.run(episode())
    assert verified["reward"] == reward
    assert (verified["evaluation_completed"], verified["mask_sample"]) == (True, False)
    witness = load_witness(tmp_path / "witness.json")
    assert witness is not None and witness.seeded == 1
    assert [(v.reward, v.answer_seen) for v in witness.verifications] == [(reward, True)]


def test_a_wrong_answer_is_not_seen_and_grades_0(tmp_path: Path) -> None:
    with SandboxPolicy() as sandbox:
        server = _server(tmp_path, 1.0, sandbox)

        async def episode() -> dict:
            await server.seed_session("s", "0-0", {})
            return await server.verify("s", {"response": _answer(FINAL_ANSWER + " maybe")})

        assert asyncio.run(episode())["reward"] == 0.0
    witness = load_witness(tmp_path / "witness.json")
    assert witness is not None and not witness.verifications[0].answer_seen


def test_shell_commands_run_in_the_sandbox_and_a_failure_is_a_failed_tool(tmp_path) -> None:
    with SandboxPolicy() as sandbox:
        server = _server(tmp_path, 1.0, sandbox)
        marker = tmp_path / "workspace" / "tool-0.txt"

        async def episode() -> tuple[str, ToolFailed]:
            await server.seed_session("s", "0-0", {})
            ok = await server.call_tool("s", "bash", {"command": shell_command("tok_a", marker, 0)})
            with pytest.raises(ToolFailed) as failed:
                await server.call_tool("s", "bash", {"command": shell_command("tok_b", marker, 7)})
            return ok, failed.value

        ok, failed = asyncio.run(episode())
    assert ok == "tok_a\n"
    assert failed.output == "tok_b\n[exit code 7]" and failed.error_type == "exit_code_7"
    assert marker.read_text() == "tok_b"
    # nothing outside the workspace was writable
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "witness.json", "witness.json.lock", "workspace",
    ]  # fmt: skip


def test_a_command_cannot_write_outside_the_workspace(tmp_path: Path) -> None:
    with SandboxPolicy() as sandbox:
        server = _server(tmp_path, 1.0, sandbox)
        target = tmp_path / "witness.json"

        async def episode() -> tuple[bytes, ToolFailed]:
            await server.seed_session("s", "0-0", {})
            before = target.read_bytes()
            with pytest.raises(ToolFailed) as failed:
                command = f"echo forged > {target}; echo x > {tmp_path}/escape.txt"
                await server.call_tool("s", "bash", {"command": command})
            return before, failed.value

        before, failed = asyncio.run(episode())
    assert failed.error_type.startswith("exit_code_")
    assert target.read_bytes() == before
    assert not (tmp_path / "escape.txt").exists()
