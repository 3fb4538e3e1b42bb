"""Third-party CLI harnesses run the arith tool-use benchmark and HumanEval end to
end through the gateway on the reference upstream, graded by the real verifiers.

The reference solution is played through whatever the harness offers: arith's ``calculate``
becomes the same computation in the harness's own shell tool, and a harness that ends only
through a command (mini's submit) gets its final answer in the reply that runs it. The rewards
are the verifiers' own: the same run with every answer corrupted scores 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_assets.conformance.checker import check_record
from gym_assets.conformance.scope import EvidenceScope
from gym_assets.rollouts.collection.files import read_jsonl
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import run_rollouts
from gym_assets_tests.rollouts.collection.conftest import Products
from gym_assets_tests.rollouts.harnesses.adapters.installed import installed_harness

TASKS = 2
HARNESSES = ("mini_swe_agent", "codex")


@pytest.fixture(scope="module")
def products(tmp_path_factory: pytest.TempPathFactory) -> Products:
    return Products(tmp_path_factory.mktemp("data"))


def _rewards(products: Products, benchmark: str, harness_name: str, out: Path, **upstream):
    harness = installed_harness(harness_name)
    products.plan(benchmark)
    result = run_rollouts(
        products.catalog,
        benchmark,
        harness,
        out,
        upstream_config(mode="reference", **upstream),
        RunOptions(limit=TASKS, concurrency=TASKS),
    )
    assert result.harness["kind"] == "cli" and result.harness["harness"] == harness_name
    records = list(read_jsonl(result.files.records))
    assert len(records) == TASKS and not list(read_jsonl(result.files.failures))
    return records


@pytest.mark.slow
@pytest.mark.parametrize("harness", HARNESSES)
@pytest.mark.parametrize("benchmark", ["arith", "humaneval"])
def test_reference_rollouts_through_a_cli_harness_earn_verified_rewards(
    products: Products, tmp_path: Path, benchmark: str, harness: str
) -> None:
    records = _rewards(products, benchmark, harness, tmp_path / "reference")
    assert [r["reward"] for r in records] == [1.0] * TASKS
    for record in records:
        trajectory = record["ng_trajectory"]
        assert not trajectory["gaps"] and trajectory["turns"]
        assert [i["status"] for i in trajectory["invocations"]] == ["completed"]
        if benchmark == "arith":  # calculate was played through the harness's own shell
            assert trajectory["tool_calls"][0]["status"] == "completed"
            assert trajectory["tool_calls"][0]["tool_name"] != "calculate"
            assert record["expected_answer"] in str(trajectory["tool_calls"][0]["output"])
        else:  # the unit tests ran
            assert record["test_result"] == "passed"
        # HumanEval prescribes no tool (a harness may still run one: mini's submit)
        verdict = check_record(record, EvidenceScope(tools=benchmark == "arith"))
        assert verdict.verdict == "fulfilled", [c.id for c in verdict.rows if c.status == "fail"]
    wrong = _rewards(products, benchmark, harness, tmp_path / "corrupted", corrupt_fraction=1.0)
    assert [r["reward"] for r in wrong] == [0.0] * TASKS
    assert all(r["evaluation_completed"] and not r["mask_sample"] for r in wrong)
