"""The two roots and where every product lives under the data root.

The CLI (``gym_assets.cli.flags.workspace_of``) and the Dagster resource
(``GymWorkspace.paths``) each build one ``Workspace`` with ``Workspace.resolve``, so
``--configs``, ``GYM_ASSETS_CONFIGS``, ``--data-root`` and ``GYM_ASSETS_DATA_ROOT`` mean the
same thing everywhere, and the CLI, the assets and the docs agree on every path:

    <data>/prepared/<benchmark>/              rows written by a benchmark's prepare script
    <data>/tasksets/<benchmark>/              collated taskset, metrics, validation report
    <data>/collations/<mode>/                 every dataset of the configs, collated by type
    <data>/plans/<benchmark>/plan.json        eval plan (plan.previous.json: the one before)
    <data>/metrics/<benchmark>/               metrics sidecar of a dataset outside both roots
    <data>/metrics_conflicts/tasksets/<b>/    new metrics a collation found conflicting
    <data>/metrics_conflicts/collations/<m>/  (the latest collation of <b> or <m>)
    <data>/rollouts/<benchmark>/<harness>/    the rollouts asset's run
    <data>/rollout_shards/<benchmark>/<harness>/<I>-of-<N>/   shard I of N of a sharded run
    <data>/alerts/                            the failed-check alert log
    <data>/conformance/harnesses/<harness>/   a harness's conformance suite runs
    <data>/conformance/matrix/                the matrix over every harness's latest run
    <data>/flavors/<token>/                   a benchmark flavor's own products, laid out as above
    <data>/services/<server>/                 a local Postgres or Redis's state

Each product directory is marked as gym-assets' own (``gym_assets.outputs``, which takes the
workspace wherever it wants the roots: ``Target.of``); a service's state directory is claimed by
the server itself (``gym_assets.local_services.roots``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CONFIGS_ROOT = "configs"
DEFAULT_DATA_ROOT = ".gym_assets"
CONFIGS_ENV = "GYM_ASSETS_CONFIGS"
DATA_ROOT_ENV = "GYM_ASSETS_DATA_ROOT"


@dataclass(frozen=True)
class Workspace:
    """The configs tree (read, never a product) and the data root (where products live).

    Both are made absolute on construction, so a path shown in the UI or a message can be
    opened as shown, whatever the working directory of whoever reads it.
    """

    configs: Path
    data: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "configs", Path(self.configs).absolute())
        object.__setattr__(self, "data", Path(self.data).absolute())

    @classmethod
    def resolve(
        cls, configs: str | Path | None = None, data: str | Path | None = None
    ) -> Workspace:
        """The roots a user gave, else ``$GYM_ASSETS_CONFIGS`` / ``$GYM_ASSETS_DATA_ROOT``,
        else ``./configs`` / ``./.gym_assets`` (an empty value counts as not given)."""
        return cls(
            Path(configs or os.environ.get(CONFIGS_ENV) or DEFAULT_CONFIGS_ROOT),
            Path(data or os.environ.get(DATA_ROOT_ENV) or DEFAULT_DATA_ROOT),
        )

    def flavor_root(self, token: str) -> Path:
        """The data root of a flavor's products: flavors of one benchmark may share its
        dataset name, which keys every product, so each flavor gets its own tree."""
        return self.data / "flavors" / token

    def prepared_dir(self, benchmark: str) -> Path:
        return self.data / "prepared" / benchmark

    def taskset_dir(self, benchmark: str) -> Path:
        return self.data / "tasksets" / benchmark

    def collation_dir(self, mode: str) -> Path:
        """Every in-scope dataset of the configs collated in ``mode``, one file per type."""
        return self.data / "collations" / mode

    def metrics_dir_of(self, instance: str, dataset: str) -> Path:
        """Where the metrics sidecar of a non-benchmark dataset outside the configs tree goes
        (dataset names are unique per instance only)."""
        return self.data / "metrics" / f"{instance}.{dataset}"

    def conflicts_dir(self, product_dir: str, name: str) -> Path:
        """Where the metrics that the latest collation of ``name`` (a benchmark's taskset, or
        a mode's collation: ``product_dir`` is ``tasksets`` or ``collations``) found
        conflicting are written: under the data root, never beside a sidecar in the configs."""
        return self.data / "metrics_conflicts" / product_dir / name

    def plan_dir(self, benchmark: str) -> Path:
        return self.data / "plans" / benchmark

    def plan_path(self, benchmark: str) -> Path:
        return self.plan_dir(benchmark) / "plan.json"

    def previous_plan_path(self, benchmark: str) -> Path:
        """The plan this benchmark had before its latest plan (for drift reports)."""
        return self.plan_dir(benchmark) / "plan.previous.json"

    def metrics_dir(self, benchmark: str) -> Path:
        """Where the metrics sidecar of a dataset outside the configs and data roots goes."""
        return self.data / "metrics" / benchmark

    def rollouts_root(self) -> Path:
        """Where the ``rollouts`` asset keeps its runs, ``<benchmark>/<harness>/`` each."""
        return self.data / "rollouts"

    def rollouts_run_dir(self, benchmark: str, harness: str) -> Path:
        """Where the ``rollouts`` asset keeps the run of one benchmark × harness (a CLI run
        writes wherever ``--out`` says)."""
        return self.rollouts_root() / benchmark / harness

    def scoreboard_dir(self) -> Path:
        """Where the scoreboard keeps every run result it has seen and renders them."""
        return self.data / "scoreboard"

    def rollout_shards_dir(self, benchmark: str, harness: str) -> Path:
        """Where the shards of a sharded ``rollouts`` partition run before they are merged
        into ``rollouts_run_dir`` (``rollouts/collection/shards.py``)."""
        return self.data / "rollout_shards" / benchmark / harness

    def alerts_dir(self) -> Path:
        return self.data / "alerts"

    def conformance_runs_dir(self, harness: str) -> Path:
        return self.data / "conformance" / "harnesses" / harness

    def conformance_matrix_dir(self) -> Path:
        return self.data / "conformance" / "matrix"

    def services_dir(self, server: str) -> Path:
        """Where a local Postgres or Redis (``gym_assets.local_services``) keeps its state
        when no ``--root`` is given."""
        return self.data / "services" / server
