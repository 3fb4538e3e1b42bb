"""Resources: where configs are read from and where products are written."""

from pathlib import Path

import dagster as dg

from gym_assets import settings
from gym_assets.tasks.catalog import Catalog, load_catalog
from gym_assets.tasks.layout import Layout


class GymWorkspace(dg.ConfigurableResource):
    """The configs tree and the data root (defaults: ``$GYM_ASSETS_CONFIGS`` or ./configs,
    ``$GYM_ASSETS_DATA_ROOT`` or ./.gym_assets)."""

    configs_root: str | None = None
    data_root: str | None = None

    @property
    def configs_path(self) -> Path:
        return settings.configs_root(self.configs_root)

    @property
    def layout(self) -> Layout:
        return Layout(settings.data_root(self.data_root))

    def catalog(self) -> Catalog:
        return load_catalog(self.configs_path, self.layout.root)
