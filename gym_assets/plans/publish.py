"""Write a benchmark's plan into the data root, keeping the one it replaces for drift reports.

``<data_root>/plans/<benchmark>/`` is a product directory (``gym_assets.outputs``): it is
created and marked by the first plan, and a directory there that gym-assets did not write is
refused rather than written into.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gym_assets.fileio import atomic_link
from gym_assets.outputs.claims import claimed_dir
from gym_assets.outputs.markers import PLAN_DIR
from gym_assets.outputs.targets import Target
from gym_assets.plans.model import Plan, load_plan
from gym_assets.plans.render import write_plan
from gym_assets.tasks.catalog import Benchmark
from gym_assets.tasks.fingerprint import Inputs, forget_inputs, record_inputs


@dataclass(frozen=True)
class PublishedPlan:
    path: Path
    sha256: str
    replaced_previous: bool


def publish_plan(plan: Plan, benchmark: Benchmark, inputs: Inputs | None = None) -> PublishedPlan:
    """Keep the benchmark's current plan (if any) as the previous one and write ``plan``.

    The current file becomes the previous one by a second name (a hard link), not a copy:
    neither it nor the new plan is ever held in memory. The directory records ``inputs``
    (``InputsOf(...).product("plan")``) beside the plan, never in it: the file stays the
    reference's, byte for byte.
    """
    workspace = benchmark.workspace
    path, previous_path = (
        workspace.plan_path(benchmark.name),
        workspace.previous_plan_path(benchmark.name),
    )
    directory = workspace.plan_dir(benchmark.name)
    with claimed_dir(Target.of(directory, PLAN_DIR, workspace)):
        forget_inputs(directory)
        replaced = path.is_file()
        if replaced:
            atomic_link(path, previous_path)
        sha256 = write_plan(path, plan)
        if inputs is not None:
            record_inputs(directory, inputs)
    return PublishedPlan(path, sha256, replaced)


def load_previous(previous_path: Path) -> Plan | None:
    return load_plan(previous_path) if previous_path.is_file() else None
