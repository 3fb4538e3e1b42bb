"""Environment manifests: the checked description of one catalogue folder's config.

A ``manifest.yaml`` sits beside a ``config.yaml`` under ``<configs>/benchmarks/`` (``kind:
benchmark``) or ``<configs>/environments/`` (``kind: environment``), as in NeMo Gym's catalogue.
Its fields are NeMo Gym's (``gym_assets.config.manifest_schema``); its ``name`` is the folder path
below that root. The config stays authoritative: every dataset the manifest lists must be
declared by that config, with the same values for the fields the manifest repeats, and the
manifest's datasets are resolved through the config's bindings exactly as collation resolves
them (``resolve_dataset_agent``). A manifest describes one agent's datasets, so datasets that
resolve to different agents are refused, and so is a taskset whose route fronts several agents:
no single ``agent_server`` describes it.

A bad manifest blocks only its own folder and the config it describes: its refusal is kept
against the datasets of the configs in its folder and of the config its ``config_path`` names
(a nested manifest may describe the config of a folder above), raised by whoever touches one
of them, and listed as a warning otherwise.

Manifests are not configs: the config loader skips them (``yaml_files_under``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from gym_assets.config.loader import LoadedConfig
from gym_assets.config.locate import quoted
from gym_assets.config.manifest_schema import Kind, ManifestDataset, ManifestFile
from gym_assets.config.model import (
    RESOURCES,
    DeclaredDataset,
    agent_names,
    bound_resources_server,
    iter_declared_datasets,
    server_instances,
)
from gym_assets.config.routing import resolve_dataset_agent, taskset_environment_server
from gym_assets.config.yaml_source import ParsedYaml, manifest_files_under, parse_yaml_file
from gym_assets.errors import ConfigError
from gym_assets.json_shapes import is_mapping

BENCHMARKS_DIR = "benchmarks"
# Each catalogue root and the kind its manifests must declare.
CATALOGUE_ROOTS = {BENCHMARKS_DIR: Kind.BENCHMARK, "environments": Kind.ENVIRONMENT}
DEFAULT_CONFIG = "config.yaml"
NO_MANIFEST = "no-manifest"
INVALID_MANIFEST = "invalid-manifest"
Status = Literal["maintained", "experimental", "no-manifest", "invalid-manifest"]
# The dataset fields a manifest may repeat; each one it writes must equal the config's value.
MIRRORED_FIELDS = (
    "type",
    "jsonl_fpath",
    "taskset",
    "num_repeats",
    "prepare_script",
    "prompt_config",
)


@dataclass(frozen=True)
class Manifest:
    """A validated manifest: where it is, what it says, and what its datasets resolved to."""

    path: Path
    config_path: Path
    fields: ManifestFile
    datasets: tuple[str, ...]
    agent: str | None

    @property
    def name(self) -> str:
        return self.fields.name

    @property
    def status(self) -> Status:
        return "experimental" if self.fields.experimental else "maintained"


@dataclass
class Manifests:
    """Every manifest of a configs tree: the valid ones by each dataset they describe, and
    each refusal by the datasets of the config beside the refused manifest."""

    by_dataset: dict[str, Manifest] = field(default_factory=dict[str, Manifest])
    refusals: dict[str, ConfigError] = field(default_factory=dict[str, ConfigError])
    problems: list[ConfigError] = field(default_factory=list[ConfigError])

    def refuse(
        self, loaded: LoadedConfig, path: Path, error: ConfigError, parsed: ParsedYaml | None
    ) -> None:
        """Keep ``error`` for the datasets declared in the manifest's folder and in the config
        its ``config_path`` names (wherever that is): the commands on them are the ones it
        must stop. A manifest too broken to read a ``config_path`` from names its sibling."""
        self.problems.append(error)
        folder, config = path.parent.resolve(), _named_config(path, parsed)
        for decl in iter_declared_datasets(loaded.data):
            file = loaded.file_of(decl.instance.name).resolve()
            if file.parent == folder or file == config:
                self.refusals.setdefault(decl.name, error)


def load_manifests(loaded: LoadedConfig) -> Manifests:
    """Every manifest of the configs tree, validated; a bad one is kept as a refusal."""
    manifests = Manifests()
    for folder, kind in CATALOGUE_ROOTS.items():
        root = loaded.root / folder
        if not root.is_dir():
            continue
        for path in manifest_files_under(root):
            if _describes_replaced(loaded, path):
                continue  # it describes the default config, and a flavor runs in its place
            parsed = None
            try:
                parsed = parse_yaml_file(path, "manifest")
                manifest = _manifest(loaded, root, kind, parsed)
                _refuse_described_twice(manifests.by_dataset, manifest)
            except ConfigError as exc:
                manifests.refuse(loaded, path, exc, parsed)
                continue
            manifests.by_dataset.update(dict.fromkeys(manifest.datasets, manifest))
    return manifests


def _named_config(path: Path, parsed: ParsedYaml | None) -> Path:
    """The config a manifest says it describes, as far as it can be read."""
    data = None if parsed is None else parsed.data
    written = data.get("config_path") if is_mapping(data) else None
    relpath = written if isinstance(written, str) and written else DEFAULT_CONFIG
    return (path.parent / relpath).resolve()


def _refuse_described_twice(by_dataset: Mapping[str, Manifest], manifest: Manifest) -> None:
    for dataset in manifest.datasets:
        if dataset in by_dataset:
            raise ConfigError(
                f"dataset '{dataset}' is described by two manifests, this one and "
                f"{by_dataset[dataset].path}; describe each dataset in one manifest only.",
                path=manifest.path,
            )


def _describes_replaced(loaded: LoadedConfig, path: Path) -> bool:
    """The manifest sits beside the default config that the selected flavor replaces."""
    replaced = loaded.replaced
    return replaced is not None and replaced.resolve() == (path.parent / DEFAULT_CONFIG).resolve()


def _manifest(loaded: LoadedConfig, root: Path, kind: Kind, parsed: ParsedYaml) -> Manifest:
    path = parsed.path
    if path.parent == root:
        raise ConfigError(
            f"Manifest '{path}' must be inside a named catalog directory: a manifest belongs in "
            f"a folder below {root.name}/, beside its config, not in {root.name}/ itself.",
            path=path,
        )
    fields = _fields(parsed)
    folder = path.parent.relative_to(root).as_posix()
    if fields.kind != kind:
        raise ConfigError(
            f"Manifest '{path}' declares kind '{fields.kind}', but its catalog path requires "
            f"'{kind}'. Set `kind: {kind}`, or move the folder below the catalogue root of "
            f"its kind ({', '.join(f'{k}/' for k in CATALOGUE_ROOTS)}).",
            **_at(parsed, "kind"),
        )
    if fields.name != folder:
        raise ConfigError(
            f"Manifest '{path}' declares name '{fields.name}', but its catalog path requires "
            f"'{folder}'. Rename the folder or set `name: {folder}`.",
            **_at(parsed, "name"),
        )
    config_path = (path.parent / fields.config_path).resolve()
    configs = {file.resolve(): file for file in loaded.files}
    if config_path not in configs:
        raise ConfigError(
            f"Manifest '{path}' requires a sibling {DEFAULT_CONFIG}: it describes "
            f"{fields.config_path}, which is not a config of this configs tree. Put the "
            f"config beside the manifest (or point `config_path` at it).",
            **_at(parsed, "config_path"),
        )
    described = _described(loaded, parsed, fields, configs[config_path])
    agent = _single_agent(loaded, parsed, fields, described)
    return Manifest(
        path=path,
        config_path=configs[config_path],
        fields=fields,
        datasets=tuple(decl.name for decl in described),
        agent=agent,
    )


def _fields(parsed: ParsedYaml) -> ManifestFile:
    if not is_mapping(parsed.data):
        found = "nothing" if parsed.data is None else type(parsed.data).__name__
        raise ConfigError(
            f"Invalid environment manifest '{parsed.path}': expected a YAML mapping. A "
            f"manifest is a mapping of fields (name, kind, datasets, ...); this file holds "
            f"{found}.",
            path=parsed.path,
            line=1,
        )
    try:
        return ManifestFile.model_validate(parsed.data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = tuple(error["loc"])
        location = ".".join(str(part) for part in where) or "manifest"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            allowed = ManifestDataset if "datasets" in where else ManifestFile
            message += f" (known fields: {', '.join(allowed.model_fields)})"
        raise ConfigError(
            f"Invalid environment manifest '{parsed.path}': {location}: {message}.",
            **_at(parsed, *where),
        ) from None


def _described(
    loaded: LoadedConfig, parsed: ParsedYaml, fields: ManifestFile, config: Path
) -> list[DeclaredDataset]:
    """The config's declarations of the datasets the manifest lists, each checked against it."""
    declared = {
        decl.name: decl
        for decl in iter_declared_datasets(loaded.data)
        if loaded.file_of(decl.instance.name) == config
    }
    described: list[DeclaredDataset] = []
    for index, entry in enumerate(fields.datasets):
        decl = declared.get(entry.name)
        if decl is None:
            raise ConfigError(
                f"manifest dataset '{entry.name}' is not declared by {config}; it declares "
                f"{quoted(declared) or 'no datasets'}. The config is authoritative: declare "
                "the dataset there or drop it from the manifest.",
                **_at(parsed, "datasets", index, "name"),
            )
        written = entry.model_dump(mode="json")
        for key in MIRRORED_FIELDS:
            if key not in entry.model_fields_set:
                continue  # not repeated (a default such as num_repeats: 1 is not a claim)
            mirrored, actual = written[key], getattr(decl.dataset, key)
            if mirrored != actual:
                raise ConfigError(
                    f"manifest dataset '{entry.name}' says {key}: {mirrored!r}, but its config "
                    f"says {actual!r}; make the manifest repeat the config (or leave {key} out).",
                    **_at(parsed, "datasets", index, key),
                )
        if (
            entry.type == "benchmark"
            and entry.prepare_script is None
            and decl.dataset.prepare_script
        ):
            raise ConfigError(
                f"Invalid environment manifest '{parsed.path}': datasets.{index}: a benchmark "
                f"dataset requires: prepare_script. Its config names one "
                f"({decl.dataset.prepare_script}); repeat it here (only a benchmark whose "
                "config bundles its rows has none).",
                **_at(parsed, "datasets", index),
            )
        described.append(decl)
    return described


def _single_agent(
    loaded: LoadedConfig,
    parsed: ParsedYaml,
    fields: ManifestFile,
    described: Sequence[DeclaredDataset],
) -> str | None:
    """The one agent every described dataset resolves to (None: no dataset names one)."""
    resolved: dict[str, str | None] = {}
    for decl in described:
        taskset = decl.dataset.taskset
        if taskset is not None:
            _refuse_multi_agent_taskset(loaded, parsed, fields, decl, taskset)
        resolved[decl.name] = resolve_dataset_agent(
            loaded, decl.instance.name, decl.dataset.agent, taskset=taskset
        )
    agents = set(resolved.values())
    if len(agents) > 1:
        listed = "; ".join(f"'{name}' -> '{agent}'" for name, agent in resolved.items())
        raise ConfigError(
            f"manifest '{fields.name}' describes datasets that resolve to different agents: "
            f"{listed}. A manifest describes one agent's datasets; list only one agent's "
            "datasets, or give each agent its own benchmark folder and manifest.",
            **_at(parsed, "datasets"),
        )
    agent = next(iter(agents), None)
    if agent is not None:
        instances = server_instances(loaded.data)
        implementation = instances[agent].implementation
        if fields.agent_server not in (agent, implementation):
            raise ConfigError(
                f"manifest agent_server '{fields.agent_server}' is not the agent its datasets "
                f"resolve to, '{agent}' ({implementation}); set `agent_server: {implementation}`.",
                **_at(parsed, "agent_server"),
            )
        _check_resources_server(loaded, parsed, fields, agent, described)
    return agent


def _check_resources_server(
    loaded: LoadedConfig,
    parsed: ParsedYaml,
    fields: ManifestFile,
    agent: str,
    described: Sequence[DeclaredDataset],
) -> None:
    """``resources_server`` names the resources server the agent binds (NeMo Gym mirrors that
    binding's implementation), or, for an agent that binds none, the one declaring the
    datasets; the instance name is accepted too, as for ``agent_server``."""
    instances = server_instances(loaded.data)
    bound = bound_resources_server(instances[agent].config)
    if bound is None:
        declaring = {decl.instance.name for decl in described if decl.instance.kind == RESOURCES}
        bound = next(iter(declaring)) if len(declaring) == 1 else None
    resources = instances.get(bound) if bound is not None else None
    if resources is None:
        return  # nothing binds one: the field describes no instance of this config
    if fields.resources_server not in (resources.name, resources.implementation):
        raise ConfigError(
            f"manifest resources_server '{fields.resources_server}' is not the resources server "
            f"of agent '{agent}', '{resources.name}' ({resources.implementation}); set "
            f"`resources_server: {resources.implementation}`.",
            **_at(parsed, "resources_server"),
        )


def _refuse_multi_agent_taskset(
    loaded: LoadedConfig,
    parsed: ParsedYaml,
    fields: ManifestFile,
    decl: DeclaredDataset,
    taskset: str,
) -> None:
    server = taskset_environment_server(loaded, taskset)
    fronted = agent_names(server.config)
    if len(fronted) > 1:
        raise ConfigError(
            f"a manifest cannot describe a multi-agent taskset: manifest '{fields.name}' lists "
            f"dataset '{decl.name}' of taskset '{taskset}', which is routed to environment "
            f"server '{server.name}' fronting several agents ({quoted(fronted)}). A manifest "
            "names one agent_server; leave this dataset out of the manifest (its config still "
            "runs it), or route the taskset to a server that fronts one agent.",
            **_at(parsed, *_dataset_path(fields, decl.name)),
        )


def _dataset_path(fields: ManifestFile, name: str) -> tuple[Any, ...]:
    """The manifest key path of the entry naming ``name`` (the config lists it otherwise)."""
    for index, entry in enumerate(fields.datasets):
        if entry.name == name:
            return ("datasets", index, "name")
    return ("datasets",)


def _at(parsed: ParsedYaml, *path: Any) -> dict[str, Any]:
    """``path``/``line`` of the deepest written node on ``path`` (the file when none is)."""
    for depth in range(len(path), 0, -1):
        line = parsed.lines.get(path[:depth])
        if line:
            return {"path": parsed.path, "line": line}
    return {"path": parsed.path}


def manifest_fields(manifest: Manifest | None, refused: bool = False) -> Mapping[str, Any]:
    """What a listing shows of a benchmark's manifest (nulls without one, or a refused one)."""
    if manifest is None:
        status = INVALID_MANIFEST if refused else NO_MANIFEST
        return {"status": status, "manifest": None, "version": None, "lifecycle": None}
    return {
        "status": manifest.status,
        "manifest": str(manifest.path),
        "version": manifest.fields.version,
        "lifecycle": str(manifest.fields.lifecycle),
    }
