"""Resources: where configs are read from and where products are written."""

import dagster as dg
from pydantic import PrivateAttr

from gym_assets.tasks.catalog import Catalog, load_catalog
from gym_assets.workspace import Workspace


class GymWorkspace(dg.ConfigurableResource):
    """Where configs are read from and products written: `configs_root` (default
    `$GYM_ASSETS_CONFIGS`, else `./configs`) and `data_root` (default `$GYM_ASSETS_DATA_ROOT`,
    else `./.gym_assets`), both made absolute, so every path in the UI can be opened as shown."""

    configs_root: str | None = None
    data_root: str | None = None
    _catalog: Catalog | None = PrivateAttr(default=None)
    _per_run: bool = PrivateAttr(default=False)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """Within a run (or a sensor tick) every step reads the configs once and sees the same
        catalog; Dagster sets up a fresh copy of the resource for each run."""
        self._per_run = True

    @property
    def paths(self) -> Workspace:
        """The roots and product paths, resolved as the CLI resolves its flags."""
        return Workspace.resolve(self.configs_root, self.data_root)

    def catalog(self) -> Catalog:
        """The configs as they are now; within a run, as they were when the run first read
        them (a config error is not kept: each step that asks reports it)."""
        if self._catalog is not None:
            return self._catalog
        catalog = load_catalog(self.paths)
        for message in catalog.loaded.warnings:  # a generated relay; said once per read
            dg.get_dagster_logger().warning(message.splitlines()[0])
        if self._per_run:
            self._catalog = catalog
        return catalog
