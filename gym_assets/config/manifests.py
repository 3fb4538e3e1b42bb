"""Environment manifests: the checked description of one benchmark folder's config.

A ``manifest.yaml`` sits beside a benchmark's ``config.yaml`` under ``<configs>/benchmarks/``.
It names the folder (``name`` equals the folder path below ``benchmarks/``), says what it is
(``kind: benchmark``), carries catalogue facts (version, status, licensing, ...) and mirrors
the datasets the config declares. The config stays authoritative: every dataset the manifest
lists must be declared by that config, with the same values for the fields the manifest
repeats, and the manifest's datasets are resolved through the config's bindings exactly as
collation resolves them (``resolve_dataset_agent``). A manifest describes one agent's
datasets, so datasets that resolve to different agents are refused, and so is a taskset whose
route fronts several agents: no single ``agent_server`` describes it.

Manifests are not configs: the config loader skips them (``yaml_files_under``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gym_assets.config.loader import LoadedConfig
from gym_assets.config.locate import quoted
from gym_assets.config.model import (
    DeclaredDataset,
    agent_names,
    iter_declared_datasets,
    server_instances,
)
from gym_assets.config.routing import resolve_dataset_agent, taskset_environment_server
from gym_assets.config.yaml_source import ParsedYaml, manifest_files_under, parse_yaml_file
from gym_assets.errors import ConfigError
from gym_assets.json_shapes import is_mapping

BENCHMARKS_DIR = "benchmarks"
DEFAULT_CONFIG = "config.yaml"
NO_MANIFEST = "no-manifest"
Status = Literal["maintained", "experimental", "no-manifest"]
# The dataset fields a manifest may repeat; each must equal the config's value.
MIRRORED_FIELDS = (
    "type",
    "jsonl_fpath",
    "taskset",
    "num_repeats",
    "prepare_script",
    "prompt_config",
)


# YAML already types every value, so "yes" for a boolean or "3" for a count is a mistake to
# report at its line, not a value to coerce.
_STRICT = ConfigDict(extra="forbid", frozen=True, strict=True)


class ManifestDataset(BaseModel):
    """A dataset the manifest describes: its name, and optionally the config's values."""

    model_config = _STRICT

    name: str = Field(min_length=1)
    type: Literal["train", "validation", "benchmark", "example"] | None = None
    jsonl_fpath: str | None = None
    taskset: str | None = None
    num_repeats: int | None = Field(default=None, ge=1)
    prepare_script: str | None = None
    prompt_config: str | None = None


class ManifestFile(BaseModel):
    """The fields a ``manifest.yaml`` may hold (anything else is refused as a likely typo)."""

    model_config = _STRICT

    name: str = Field(min_length=1)
    kind: Literal["benchmark", "environment"]
    version: str | None = None
    experimental: bool = False
    lifecycle: Literal["active", "deprecated"] = "active"
    description: str | None = None
    domain: str | None = None
    modality: str | None = None
    licensing: str | None = None
    integration_profile: str | None = None
    authors: list[str] = Field(default_factory=list[str])
    config_path: str = DEFAULT_CONFIG
    agent_server: str | None = None
    resources_server: str | None = None
    model_server: str | None = None
    datasets: list[ManifestDataset] | None = Field(default=None, min_length=1)


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


def load_manifests(loaded: LoadedConfig) -> dict[str, Manifest]:
    """Every manifest of the configs tree, validated, keyed by each dataset it describes."""
    root = loaded.root / BENCHMARKS_DIR
    if not root.is_dir():
        return {}
    by_dataset: dict[str, Manifest] = {}
    for path in manifest_files_under(root):
        if _describes_replaced(loaded, path):
            continue  # it describes the default config, and a flavor runs in its place
        manifest = _manifest(loaded, root, parse_yaml_file(path))
        for dataset in manifest.datasets:
            if dataset in by_dataset:
                raise ConfigError(
                    f"dataset '{dataset}' is described by two manifests, this one and "
                    f"{by_dataset[dataset].path}; describe each dataset in one manifest only.",
                    path=path,
                )
            by_dataset[dataset] = manifest
    return by_dataset


def _describes_replaced(loaded: LoadedConfig, path: Path) -> bool:
    """The manifest sits beside the default config that the selected flavor replaces."""
    replaced = loaded.replaced
    return replaced is not None and replaced.resolve() == (path.parent / DEFAULT_CONFIG).resolve()


def _manifest(loaded: LoadedConfig, root: Path, parsed: ParsedYaml) -> Manifest:
    path = parsed.path
    fields = _fields(parsed)
    folder = path.parent.relative_to(root).as_posix()
    if path.parent == root:
        raise ConfigError(
            f"a manifest belongs in a benchmark's folder below {BENCHMARKS_DIR}/, beside its "
            f"config, not in {BENCHMARKS_DIR}/ itself.",
            path=path,
        )
    if fields.name != folder:
        raise ConfigError(
            f"manifest name '{fields.name}' must equal its folder path '{folder}' (below "
            f"{BENCHMARKS_DIR}/); rename the folder or set `name: {folder}`.",
            **_at(parsed, "name"),
        )
    if fields.kind != "benchmark":
        raise ConfigError(
            f"manifest kind '{fields.kind}' must be 'benchmark' for a manifest under "
            f"{BENCHMARKS_DIR}/; set `kind: benchmark`.",
            **_at(parsed, "kind"),
        )
    config_path = (path.parent / fields.config_path).resolve()
    configs = {file.resolve(): file for file in loaded.files}
    if config_path not in configs:
        raise ConfigError(
            f"manifest '{fields.name}' describes {fields.config_path}, which is not a config "
            f"of this configs tree; put the benchmark's {DEFAULT_CONFIG} beside the manifest "
            "(or point `config_path` at its config).",
            **_at(parsed, "config_path"),
        )
    described = _described(loaded, parsed, fields, configs[config_path])
    if not any(decl.dataset.type == "benchmark" for decl in described):
        raise ConfigError(
            f"manifest '{fields.name}' has kind 'benchmark' but describes no dataset of type "
            "benchmark; list the benchmark dataset its config declares.",
            **_at(parsed, "datasets"),
        )
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
            f"a manifest is a mapping of fields (name, kind, datasets, ...); this file holds "
            f"{found}.",
            path=parsed.path,
            line=1,
        )
    try:
        return ManifestFile.model_validate(parsed.data)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = tuple(error["loc"])
        field = ".".join(str(part) for part in where) or "(manifest)"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            allowed = ManifestDataset if len(where) > 1 else ManifestFile
            message += f" (known fields: {', '.join(allowed.model_fields)})"
        raise ConfigError(f"manifest field '{field}': {message}.", **_at(parsed, *where)) from None


def _described(
    loaded: LoadedConfig, parsed: ParsedYaml, fields: ManifestFile, config: Path
) -> list[DeclaredDataset]:
    """The declarations the manifest describes: the ones it lists, else all its config's."""
    declared = {
        decl.name: decl
        for decl in iter_declared_datasets(loaded.data)
        if loaded.file_of(decl.instance.name) == config
    }
    if fields.datasets is None:
        return list(declared.values())
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
        for key in MIRRORED_FIELDS:
            mirrored = getattr(entry, key)
            actual = getattr(decl.dataset, key)
            if mirrored is not None and mirrored != actual:
                raise ConfigError(
                    f"manifest dataset '{entry.name}' says {key}: {mirrored!r}, but its config "
                    f"says {actual!r}; make the manifest repeat the config (or leave {key} out).",
                    **_at(parsed, "datasets", index, key),
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
    if fields.agent_server is not None and agent is not None:
        implementation = server_instances(loaded.data)[agent].implementation
        if fields.agent_server not in (agent, implementation):
            raise ConfigError(
                f"manifest agent_server '{fields.agent_server}' is not the agent its datasets "
                f"resolve to, '{agent}' ({implementation}); set `agent_server: {implementation}`.",
                **_at(parsed, "agent_server"),
            )
    return agent


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
    for index, entry in enumerate(fields.datasets or []):
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


def manifest_fields(manifest: Manifest | None) -> Mapping[str, Any]:
    """What a listing shows of a benchmark's manifest (nulls without one)."""
    if manifest is None:
        return {"status": NO_MANIFEST, "manifest": None, "version": None, "lifecycle": None}
    return {
        "status": manifest.status,
        "manifest": str(manifest.path),
        "version": manifest.fields.version,
        "lifecycle": manifest.fields.lifecycle,
    }
