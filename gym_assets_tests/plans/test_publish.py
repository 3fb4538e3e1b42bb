"""Publishing a benchmark's plan into the data root, keeping the one it replaces."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

from gym_assets.plans.model import load_plan
from gym_assets.plans.pipeline import plan_benchmark
from gym_assets.plans.publish import load_previous, publish_plan
from gym_assets.plans.render import plan_text
from gym_assets.tasks.catalog import load_catalog
from gym_assets.workspace import Workspace

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_the_replaced_plan_is_kept_as_the_previous_one_without_a_copy(tmp_path: Path) -> None:
    benchmark = load_catalog(Workspace(CONFIGS, tmp_path / "data")).get("units")
    previous = benchmark.workspace.previous_plan_path("units")
    plan = plan_benchmark(benchmark)

    first = publish_plan(plan, benchmark)
    assert not first.replaced_previous and load_previous(previous) is None
    assert first.sha256 == hashlib.sha256(first.path.read_bytes()).hexdigest()
    old_file = os.stat(first.path)

    fewer = dataclasses.replace(plan, tasks=plan.tasks[:3])
    second = publish_plan(fewer, benchmark)
    assert second.replaced_previous and second.path == first.path
    assert os.path.samestat(os.stat(previous), old_file)  # the old file under its second name
    assert hashlib.sha256(previous.read_bytes()).hexdigest() == first.sha256
    assert load_plan(previous).tasks == plan.tasks
    assert second.path.read_text("utf-8") == plan_text(fewer)
    assert second.sha256 == hashlib.sha256(second.path.read_bytes()).hexdigest()
