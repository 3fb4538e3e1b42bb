"""Load the configs tree: every YAML file merged into one mapping, then resolved.

Files are read in sorted relative-path order so the merged key order (and everything derived
from it) is the same on every machine. A top-level key is defined by exactly one file: that file
"owns" the instance, and relative paths in the instance resolve against its directory. Another
file may only lay an override block over an environment server's agent references
(``gym_assets.config.overrides``).
Every node's file and line are kept so any later error can point at the line to edit.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gym_assets.config.flavors import default_config_for, is_flavor
from gym_assets.config.inheritance import INHERIT_KEY
from gym_assets.config.locate import locator_of
from gym_assets.config.overrides import Document, merge_documents
from gym_assets.config.resolve import resolve_config
from gym_assets.config.yaml_source import KeyPath, parse_yaml_file, yaml_files_under
from gym_assets.errors import ConfigError
from gym_assets.json_shapes import is_mapping


@dataclass(frozen=True)
class SourceMap:
    """Where each node of the merged config was written."""

    root: Path
    raw: Mapping[str, Any]
    nodes: dict[KeyPath, tuple[Path, int]]
    relays: Mapping[str, str] = field(default_factory=dict[str, str])  # relay -> its agent

    def where(self, *path: Any) -> tuple[Path, int]:
        """The deepest known node on ``path``, looking through inheritance; line 0 if none."""
        best: tuple[int, Path, int] | None = None
        for candidate in self._aliases(path):
            for depth in range(len(candidate), 0, -1):
                found = self.nodes.get(candidate[:depth])
                if found is not None:
                    if best is None or depth > best[0]:
                        best = (depth, *found)
                    break
        return (self.root, 0) if best is None else (best[1], best[2])

    def _aliases(self, path: KeyPath) -> Iterator[KeyPath]:
        """``path``, then the same path in each base it inherits from (a relay: its agent)."""
        yield path
        if not path:
            return
        if path[0] in self.relays:
            yield (self.relays[path[0]],)
            return
        seen = {path[0]}
        block = self.raw.get(path[0])
        while is_mapping(block) and isinstance(block.get(INHERIT_KEY), str):
            base = block[INHERIT_KEY]
            if base in seen:
                return
            seen.add(base)
            yield (base, *path[1:])
            block = self.raw.get(base)


class LoadedConfig(Mapping[str, Any]):
    """The resolved config of a configs tree, with the origin of every node.

    It reads like the resolved mapping (``config["x"]`` is ``config.data["x"]``), so it can be
    passed wherever a resolved config is expected; errors raised from it then carry file:line.
    """

    def __init__(
        self,
        root: Path,
        files: list[Path],
        raw: dict[str, Any],
        data: dict[str, Any],
        warnings: list[str],
        sources: SourceMap,
        replaced: Path | None = None,
    ) -> None:
        self.root = root
        self.files = files
        self.replaced = replaced  # the default config a selected flavor stands in for
        self.raw = raw
        self.data = data
        self.warnings = warnings
        self._sources = sources

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def where(self, *path: Any) -> tuple[Path, int]:
        """File and 1-based line of the deepest known node on ``path`` (line 0: unknown)."""
        return self._sources.where(*path)

    def file_of(self, instance: str) -> Path:
        """The file that defined a top-level key (a generated relay: its agent's file)."""
        file, line = self.where(instance)
        if line == 0:
            raise KeyError(instance)
        return file

    def resolve_path(self, instance: str, relpath: str | Path) -> Path:
        """A path from an instance's config, relative to the file that defined the instance."""
        path = Path(relpath)
        return path if path.is_absolute() else self.file_of(instance).parent / path


def _config_files(root: Path) -> list[Path]:
    """The files below the directory ``root``, or ``root`` itself (one that is not a regular
    file is refused by what it is when it is read)."""
    if root.is_dir():
        return list(yaml_files_under(root))
    if not root.exists():
        raise ConfigError(
            "configs root not found; pass --configs DIR or set GYM_ASSETS_CONFIGS", path=root
        )
    return [root]


def load_configs(root: Path, *more: Path, flavor: Path | None = None) -> LoadedConfig:
    """Parse, merge and resolve every YAML file below ``root`` (or the one file ``root``), then
    below each of ``more`` in order: several ``--config`` paths make one config, as one tree
    does. ``root`` is the configs root products must stay out of.

    Benchmark flavors are left out (``gym_assets.config.flavors``); ``flavor`` selects one,
    which then stands in for the default config of its benchmark folder.
    """
    root = Path(root)
    chosen = None if flavor is None else flavor.resolve()
    default = None if flavor is None else default_config_for(root, flavor)
    replaced = None if default is None else default.resolve()
    candidates = dict.fromkeys(f for r in (root, *map(Path, more)) for f in _config_files(r))
    files: list[Path] = []
    documents: list[Document] = []
    for file in candidates:
        parsed = parse_yaml_file(file)
        real = file.resolve()
        left_out = real == replaced or (root.is_dir() and is_flavor(root, file, parsed.data))
        if left_out and real != chosen:
            continue
        files.append(file)
        if parsed.data is None:
            continue
        if not is_mapping(parsed.data):
            raise ConfigError(
                f"the top level of a config file must be a mapping of instance names to their "
                f"settings; this file holds a {type(parsed.data).__name__}.",
                path=file,
                line=1,
            )
        documents.append(Document(file, parsed.data, parsed.lines))
    merged = merge_documents(documents)
    raw, nodes = merged.raw, merged.nodes
    sources = SourceMap(root=root, raw=raw, nodes=nodes)
    resolution = resolve_config(raw, locator_of(sources))
    sources = SourceMap(root=root, raw=raw, nodes=nodes, relays=resolution.relays)
    for message in resolution.warnings:
        warnings.warn(message, DeprecationWarning, stacklevel=2)
    return LoadedConfig(
        root=root,
        files=files,
        raw=raw,
        data=resolution.data,
        warnings=resolution.warnings,
        sources=sources,
        replaced=replaced,
    )
