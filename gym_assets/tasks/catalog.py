"""The benchmark catalogue: every ``type: benchmark`` dataset of the configs tree.

A benchmark is named by its dataset name, which is unique across the configs tree and is also
its Dagster partition key. The catalogue resolves the paths a benchmark needs: relative paths
in a config resolve against the directory of the YAML file that declares them, except the
``jsonl_fpath`` of a dataset with a ``prepare_script``, which is a product and so lives under
the data root (``prepared/<benchmark>/``).

A benchmark folder may also hold an environment manifest (``manifest.yaml`` beside its config,
``gym_assets.config.manifests``): the catalogue validates every manifest when it loads and
attaches each to the benchmarks it describes; a benchmark without one is ``no-manifest``. A
refused manifest blocks only the benchmarks of its folder: ``get`` raises its refusal, and
``manifest_problems`` lists every refusal for a listing to warn about.

A dataset's metrics sidecar goes beside it when the dataset lies in the configs tree (or below
the directory of the file that declares it) or is prepared rows; a dataset anywhere else gets
its sidecar under the data root (``metrics/<benchmark>/``), so nothing is written outside the
configs and data roots.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gym_assets.config.errors import AmbiguousEnvironmentServerError
from gym_assets.config.loader import LoadedConfig, load_configs
from gym_assets.config.manifests import Manifest, load_manifests
from gym_assets.config.model import (
    AGENTS,
    DatasetConfig,
    DeclaredDataset,
    agent_names,
    iter_declared_datasets,
    server_instances,
)
from gym_assets.config.routing import flat_dataset_agent, flat_route, servers_by_agent
from gym_assets.errors import ConfigError, UserError
from gym_assets.json_shapes import is_mapping
from gym_assets.outputs.targets import is_within
from gym_assets.workspace import Workspace


@dataclass(frozen=True)
class Benchmark:
    """One benchmark dataset with every path and server it involves, resolved."""

    declared: DeclaredDataset
    rows_path: Path
    prepare_script: Path | None
    prompt_config_path: Path | None
    environment_server: str | None
    agents: tuple[str, ...]
    fronting: Fronting  # how environment_server was found, or why it was not
    config_paths: tuple[Path, ...]
    sidecar_dir: Path
    workspace: Workspace  # the roots it was resolved in, and where its products live
    selector: str  # what `--benchmark` takes to select it: its name, or its flavor's token
    manifest: Manifest | None = None  # the environment manifest describing it, if any
    manifest_refusal: ConfigError | None = None  # why its folder's manifest is refused

    @property
    def name(self) -> str:
        return self.declared.dataset.name

    @property
    def dataset(self) -> DatasetConfig:
        return self.declared.dataset

    @property
    def instance(self) -> str:
        return self.declared.instance.name

    @property
    def taskset(self) -> str:
        """The declared taskset, or the benchmark name when none is declared."""
        return self.dataset.taskset or self.name

    @property
    def prepared_dir(self) -> Path | None:
        """The product directory its prepare script writes into; None without a script."""
        return None if self.prepare_script is None else self.workspace.prepared_dir(self.name)

    @property
    def domain(self) -> str:
        return str(self.declared.instance.config.get("domain") or "")

    @property
    def description(self) -> str:
        return str(self.declared.instance.config.get("description") or "")

    @property
    def sidecar_path(self) -> Path:
        """Its metrics sidecar: what each collation compares the rows' metrics with."""
        return self.sidecar_dir / f"{self.rows_path.stem}_metrics.json"

    def require_rows(self) -> Path:
        """The prepared rows, or a clear error saying how to produce them. Something there
        that is not a regular file is the reader's to refuse, by what it is."""
        if self.rows_path.exists():
            return self.rows_path
        if self.prepare_script is not None:
            raise UserError(
                f"benchmark '{self.name}' has not been prepared yet ({self.rows_path} is "
                f"missing); run `gym-assets prepare --benchmark {self.selector}` "
                "first"
            )
        raise UserError(
            f"benchmark '{self.name}': data file {self.rows_path} does not exist; fix "
            "`jsonl_fpath` in its config",
            path=self.config_paths[0] if self.config_paths else None,
        )


@dataclass(frozen=True)
class Fronting:
    """Which environment server runs a dataset's rows: ``server``, or else why none can.

    ``candidates`` are the servers that could (one when resolved, several when its agent is
    fronted by more than one); ``error`` is the routing refusal, kept for whoever needs the
    server (a run raises it) while the catalogue still lists the benchmark.
    """

    server: str | None
    candidates: tuple[str, ...] = ()
    error: ConfigError | None = None


def _fronting(config: Mapping[str, Any], decl: DeclaredDataset) -> Fronting:
    """The environment server that runs this dataset's rows: its route for a taskset, else the
    routing mode's server for the dataset's agent (the ``route_resolves`` check reports a
    taskset route that cannot say)."""
    taskset = decl.dataset.taskset
    if taskset is not None:
        routes = config.get("environment_server_routes")
        server = routes.get(taskset) if is_mapping(routes) else None
        return Fronting(server, (server,) if server else ())
    try:
        server = flat_route(config, decl.instance.name, decl.dataset.agent)[0]
    except AmbiguousEnvironmentServerError as exc:
        agent = flat_dataset_agent(config, decl.instance.name, decl.dataset.agent)
        return Fronting(None, tuple(servers_by_agent(config)[agent]), exc)
    except ConfigError as exc:
        return Fronting(None, error=exc)
    return Fronting(server, (server,))


class Catalog:
    """Benchmarks of one configs tree, keyed by name, in config order.

    ``workspace.configs`` is the root ``loaded`` was read from: products must stay out of it.
    """

    def __init__(
        self, loaded: LoadedConfig, workspace: Workspace, flavor: tuple[Path, str] | None = None
    ):
        self.loaded = loaded
        self.workspace = workspace
        self.flavor = flavor  # (file, token) of the selected flavor, if one is
        self._benchmarks: dict[str, Benchmark] = {}
        manifests = load_manifests(loaded)
        self.manifest_problems = tuple(manifests.problems)
        for decl in iter_declared_datasets(loaded.data):
            if decl.dataset.type != "benchmark":
                continue
            if decl.name in self._benchmarks:
                first = self._benchmarks[decl.name].instance
                raise ConfigError(
                    f"benchmark name '{decl.name}' is declared by both '{first}' and "
                    f"'{decl.instance.name}'; dataset names must be unique",
                    path=loaded.file_of(decl.instance.name),
                )
            benchmark = self._resolve(decl, manifests.by_dataset.get(decl.name))
            refusal = manifests.refusals.get(decl.name)
            self._benchmarks[decl.name] = replace(benchmark, manifest_refusal=refusal)

    def _resolve(self, decl: DeclaredDataset, manifest: Manifest | None) -> Benchmark:
        instance = decl.instance.name
        dataset = decl.dataset
        resolve = self.loaded.resolve_path
        script = resolve(instance, dataset.prepare_script) if dataset.prepare_script else None
        if script is not None:
            rows = Path(dataset.jsonl_fpath)
            rows = rows if rows.is_absolute() else self.workspace.prepared_dir(dataset.name) / rows
        else:
            rows = resolve(instance, dataset.jsonl_fpath)
        prompt = resolve(instance, dataset.prompt_config) if dataset.prompt_config else None
        fronting = _fronting(self.loaded.data, decl)
        server = fronting.server
        servers = server_instances(self.loaded.data)
        agents: tuple[str, ...] = ()
        if server is not None and server in servers:
            agents = tuple(agent_names(servers[server].config))
        elif decl.instance.kind == AGENTS:
            agents = (instance,)
        involved = [instance, *([server] if server else []), *agents]
        files = sorted({self.loaded.file_of(name) for name in involved if name in servers})
        beside = self.in_config_tree(instance, rows) or (
            script is not None and is_within(rows, self.workspace.prepared_dir(dataset.name))
        )
        return Benchmark(
            declared=decl,
            rows_path=rows,
            prepare_script=script,
            prompt_config_path=prompt,
            environment_server=server,
            agents=agents,
            fronting=fronting,
            config_paths=tuple(files),
            sidecar_dir=rows.parent if beside else self.workspace.metrics_dir(dataset.name),
            workspace=self.workspace,
            selector=self._selector(decl),
            manifest=manifest,
        )

    def _selector(self, decl: DeclaredDataset) -> str:
        if self.flavor is not None and self.loaded.file_of(decl.instance.name) == self.flavor[0]:
            return self.flavor[1]
        return decl.dataset.name

    def in_config_tree(self, instance: str, path: Path) -> bool:
        """``path`` lies below the configs root or the directory of the file that declares
        ``instance`` (a config file given alone is a root of its own): a dataset's metrics
        sidecar may go beside it there."""
        trees = (self.loaded.root, self.loaded.file_of(instance).parent)
        return any(is_within(path.resolve(), tree.resolve()) for tree in trees)

    def __iter__(self) -> Iterator[Benchmark]:
        return iter(self._benchmarks.values())

    def __len__(self) -> int:
        return len(self._benchmarks)

    def names(self) -> list[str]:
        return list(self._benchmarks)

    def get(self, name: str) -> Benchmark:
        """The benchmark ``name``; a refused manifest of its folder is raised here, so it
        stops only the commands that touch this benchmark."""
        try:
            benchmark = self._benchmarks[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._benchmarks, n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            known = ", ".join(self._benchmarks) or "none"
            raise UserError(
                f"unknown benchmark '{name}'{hint} (configured benchmarks: {known}; "
                "see `gym-assets list benchmarks`)"
            ) from None
        if benchmark.manifest_refusal is not None:
            raise benchmark.manifest_refusal
        return benchmark


def load_catalog(workspace: Workspace, flavor: tuple[Path, str] | None = None) -> Catalog:
    """Load and resolve the workspace's configs tree, then list its benchmarks; ``flavor`` is
    the ``(file, token)`` of a benchmark flavor to load in place of its default config."""
    loaded = load_configs(workspace.configs, flavor=None if flavor is None else flavor[0])
    return Catalog(loaded, workspace, flavor)
