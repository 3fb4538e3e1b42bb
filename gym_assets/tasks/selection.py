"""What a ``--benchmark`` value selects, and the catalog that runs it.

A value is a benchmark's dataset name (what Dagster partitions and products are keyed by) or a
selector token, ``NAME[/FLAVOR]`` (``gym_assets.config.flavors``). A token naming a flavor
loads the configs tree with that flavor in place of its benchmark's ``config.yaml``; a dataset
name that only a flavor declares selects that flavor too, so the hints that name a benchmark
by its dataset name (``gym-assets prepare --benchmark NAME``) work for flavors as well.
A flavor's products live in their own tree under the data root (``Workspace.flavor_root``), so
flavors of one benchmark may share its dataset name, as the reference's do.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from gym_assets.config.flavors import (
    TOKEN_RULE,
    benchmark_configs,
    benchmarks_dir,
    check_token,
    default_config_for,
    is_token,
    resolve_token,
    token_of,
)
from gym_assets.config.model import server_instances
from gym_assets.config.names import shown
from gym_assets.errors import ConfigError, UsageError, UserError
from gym_assets.tasks.catalog import Benchmark, Catalog, load_catalog
from gym_assets.workspace import Workspace


@dataclass(frozen=True)
class Selection:
    """The benchmarks one ``--benchmark`` value selects, in the catalog they resolve in."""

    value: str
    catalog: Catalog
    benchmarks: tuple[Benchmark, ...]

    def one(self) -> Benchmark:
        """The single benchmark a command runs; a config declaring several is refused."""
        if len(self.benchmarks) != 1:
            names = ", ".join(b.name for b in self.benchmarks)
            raise UserError(
                f"--benchmark {self.value} selects a config that declares "
                f"{len(self.benchmarks)} benchmark datasets ({names}); select one by its name"
            )
        return self.benchmarks[0]


def select_benchmark(workspace: Workspace, value: str) -> Selection:
    """Resolve ``value`` (see the module docstring); unknown names and tokens are refused,
    and so is a value that is no token at all, before any path is built from it."""
    check_token(value)
    configs_root = workspace.configs
    if "/" in value:
        return _select_file(workspace, value, resolve_token(configs_root, value))
    catalog = load_catalog(workspace)
    if value in catalog.names():
        return Selection(value, catalog, (catalog.get(value),))
    if (benchmarks_dir(configs_root) / value).is_dir():  # its config.yaml, or the hint
        return _in_file(catalog, value, resolve_token(configs_root, value))
    flavors = [c for c in benchmark_configs(configs_root) if c.flavor and value in c.datasets]
    if len(flavors) > 1:
        tokens = ", ".join(f"'{config.token}'" for config in flavors)
        raise UserError(
            f"benchmark '{value}' is declared by several flavors ({tokens}); select one by "
            "its token"
        )
    if flavors:
        return _select_file(workspace, value, flavors[0].path)
    raise _unknown_name(catalog, value)


def _unknown_name(catalog: Catalog, value: str) -> UsageError:
    """A name no benchmark has: the reference's refusal (the config the name implies, close
    tokens, where it looked), then ours (close dataset names, every configured one)."""
    try:
        resolve_token(catalog.workspace.configs, value)
    except UsageError as implied:
        try:
            catalog.get(value)
        except UserError as unknown:
            return UsageError(f"{implied.message}; {unknown.message}")
    raise AssertionError(f"{value!r} was taken for a name no benchmark has")


def _select_file(workspace: Workspace, value: str, path: Path) -> Selection:
    if default_config_for(workspace.configs, path) is None:
        return _in_file(load_catalog(workspace), value, path)
    token = token_of(workspace.configs, path)
    assert token is not None  # a flavor lies below benchmarks/
    if not is_token(token):  # the flag was a dataset name only this flavor declares
        raise ConfigError(
            f"this flavor's token {shown(token)} is not a benchmark token; {TOKEN_RULE}; "
            "rename the file or its folders",
            path=path,
        )
    flavored = replace(workspace, data=workspace.flavor_root(token))
    return _in_file(load_catalog(flavored, (path, token)), value, path)


def _in_file(catalog: Catalog, value: str, path: Path) -> Selection:
    """The benchmarks whose declaring instance is written in ``path``."""
    target = path.resolve()
    found = tuple(
        catalog.get(b.name)  # raises a refused manifest of the benchmark's folder
        for b in catalog
        if catalog.loaded.file_of(b.instance).resolve() == target
    )
    if not found:
        raise UserError(
            f"{_no_benchmark_found(catalog, target)} --benchmark {value} selects {path}, but no "
            "benchmark dataset of the resolved config is declared there (is its instance moved "
            "by `_inherit_from` into another file?); select the benchmark by its name",
            path=path,
        )
    return Selection(value, catalog, found)


def _no_benchmark_found(catalog: Catalog, target: Path) -> str:
    """The reference's refusal of a config with nothing to prepare: what it inspected, and
    the flags that select a benchmark."""
    loaded = catalog.loaded
    agents = [
        name
        for name, server in server_instances(loaded.data).items()
        if server.is_agent and loaded.file_of(name).resolve() == target
    ]
    inspected = (
        f"Inspected server instances {agents}, but none declared a `benchmark` dataset."
        if agents
        else "No server instances with `responses_api_agents` were found in it."
    )
    return (
        f"No benchmark config found. {inspected} Pass `--benchmark <name>` (or, for "
        "`collate`, `--mode` with `--config <path>`) to select what to prepare."
    )
