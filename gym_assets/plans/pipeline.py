"""Plan one catalogued benchmark: the code path the CLI and the ``eval_plan`` asset share."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from gym_assets.plans.build import PlanSpec, build_plan_from_file, refuse_prompt_template
from gym_assets.plans.model import Plan, PlannedTask
from gym_assets.plans.provenance import current_gym, project_root, recorded_config_paths
from gym_assets.plans.verify import taskset_tasks
from gym_assets.tasks.catalog import Benchmark


def plan_benchmark(
    benchmark: Benchmark,
    selected_task_ids: Iterable[str] | None = None,
    warn: Callable[[str], None] | None = None,
) -> Plan:
    """Build the benchmark's plan from its prepared rows, with every refusal of the format;
    ``warn`` hears what the plan normalized (integer ids)."""
    refuse_prompt_template(benchmark.name, benchmark.dataset.prompt_config)
    rows = benchmark.require_rows()
    root = project_root()
    spec = PlanSpec(
        benchmark=benchmark.name,
        taskset=benchmark.taskset,
        gym=current_gym(root),
        config_paths=recorded_config_paths(benchmark.config_paths, root),
        selected_task_ids=selected_task_ids,
    )
    return build_plan_from_file(rows, spec, warn)


def collated_tasks(plan: Plan, collated: Path) -> Iterable[PlannedTask | None]:
    """The tasks of a collated taskset as a run of ``plan``'s benchmark would dispatch them."""
    return taskset_tasks(collated, flat_taskset=plan.benchmark)
