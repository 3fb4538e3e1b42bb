"""Make sure a benchmark's prepared rows, collated taskset and plan exist before a run."""

from __future__ import annotations

from collections.abc import Callable

from gym_assets.plans.pipeline import plan_benchmark
from gym_assets.plans.publish import publish_plan
from gym_assets.tasks.catalog import Catalog
from gym_assets.tasks.pipeline import collate_benchmark, collated_path
from gym_assets.tasks.prepare import prepare_benchmark


def ensure_products(catalog: Catalog, name: str, say: Callable[[str], None]) -> None:
    """Prepare, collate and plan ``name`` where those products are missing (never redone)."""
    benchmark = catalog.get(name)
    workspace = catalog.workspace
    if benchmark.prepare_script is not None and not benchmark.rows_path.is_file():
        say(f"preparing {name} ...")
        prepare_benchmark(benchmark)
    taskset_dir = workspace.taskset_dir(name)
    if not collated_path(taskset_dir, benchmark).is_file():
        say(f"collating {name} into {taskset_dir} ...")
        collate_benchmark(catalog, name, taskset_dir)
    if not workspace.plan_path(name).is_file():
        say(f"planning {name} into {workspace.plan_path(name)} ...")
        publish_plan(plan_benchmark(benchmark), benchmark)
