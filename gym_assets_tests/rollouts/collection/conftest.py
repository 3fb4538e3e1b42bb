"""Fixtures for collection tests: bundled benchmarks collated and planned into a temp data root."""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_assets.plans.model import Plan
from gym_assets.plans.pipeline import plan_benchmark
from gym_assets.plans.publish import publish_plan
from gym_assets.tasks.catalog import Catalog, load_catalog
from gym_assets.tasks.pipeline import collate_benchmark, collated_path
from gym_assets.tasks.prepare import prepare_benchmark
from gym_assets.workspace import Workspace

REPO = Path(__file__).resolve().parents[3]


class Products:
    """A data root whose benchmarks are prepared, collated and planned on first use."""

    def __init__(self, root: Path, configs: Path = REPO / "configs"):
        self.root = root
        self.catalog: Catalog = load_catalog(Workspace(configs, root))
        self._plans: dict[str, Plan] = {}

    def taskset(self, name: str) -> Path:
        benchmark = self.catalog.get(name)
        out = self.catalog.workspace.taskset_dir(name)
        path = collated_path(out, benchmark)
        if not path.is_file():
            if benchmark.prepare_script is not None and not benchmark.rows_path.is_file():
                prepare_benchmark(benchmark)
            collate_benchmark(self.catalog, name, out)
        return path

    def plan(self, name: str) -> Plan:
        if name not in self._plans:
            self.taskset(name)
            benchmark = self.catalog.get(name)
            plan = plan_benchmark(benchmark)
            publish_plan(plan, benchmark)
            self._plans[name] = plan
        return self._plans[name]


@pytest.fixture(scope="session")
def products(tmp_path_factory: pytest.TempPathFactory) -> Products:
    return Products(tmp_path_factory.mktemp("data"))
