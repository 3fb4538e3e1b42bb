"""Where every product lives under the data root.

One function per product so the CLI, the Dagster assets and the docs agree on paths:

    <data_root>/prepared/<benchmark>/        rows written by a benchmark's prepare script
    <data_root>/tasksets/<benchmark>/        collated taskset, metrics, validation report
    <data_root>/collations/<mode>/           every dataset of the configs, collated by type
    <data_root>/plans/<benchmark>/plan.json  eval plan (plan.previous.json: the one before)
    <data_root>/metrics/<benchmark>/         metrics sidecar of a dataset outside both roots
    <data_root>/rollouts/<benchmark>/<harness>/  the rollouts asset's run
    <data_root>/alerts/                      the failed-check alert log
    <data_root>/conformance/harnesses/<harness>/  a harness's conformance suite runs
    <data_root>/conformance/matrix/          the matrix over every harness's latest run
    <data_root>/flavors/<token>/             a benchmark flavor's own products, laid out as above

Each of these directories is a product marked as gym-assets' own (``gym_assets.outputs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    root: Path

    def flavor_root(self, token: str) -> Path:
        """The data root of a flavor's products: flavors of one benchmark may share its
        dataset name, which keys every product, so each flavor gets its own tree."""
        return self.root / "flavors" / token

    def prepared_dir(self, benchmark: str) -> Path:
        return self.root / "prepared" / benchmark

    def taskset_dir(self, benchmark: str) -> Path:
        return self.root / "tasksets" / benchmark

    def collation_dir(self, mode: str) -> Path:
        """Every in-scope dataset of the configs collated in ``mode``, one file per type."""
        return self.root / "collations" / mode

    def metrics_dir_of(self, instance: str, dataset: str) -> Path:
        """Where the metrics sidecar of a non-benchmark dataset outside the configs tree goes
        (dataset names are unique per instance only)."""
        return self.root / "metrics" / f"{instance}.{dataset}"

    def plan_dir(self, benchmark: str) -> Path:
        return self.root / "plans" / benchmark

    def plan_path(self, benchmark: str) -> Path:
        return self.plan_dir(benchmark) / "plan.json"

    def previous_plan_path(self, benchmark: str) -> Path:
        """The plan this benchmark had before its latest plan (for drift reports)."""
        return self.plan_dir(benchmark) / "plan.previous.json"

    def metrics_dir(self, benchmark: str) -> Path:
        """Where the metrics sidecar of a dataset outside the configs and data roots goes."""
        return self.root / "metrics" / benchmark

    def alerts_dir(self) -> Path:
        return self.root / "alerts"

    def conformance_runs_dir(self, harness: str) -> Path:
        return self.root / "conformance" / "harnesses" / harness

    def conformance_matrix_dir(self) -> Path:
        return self.root / "conformance" / "matrix"
