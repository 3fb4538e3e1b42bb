"""Benchmark flavors, and the ``NAME[/FLAVOR]`` selector tokens that name benchmark configs.

A benchmark folder ``<configs>/benchmarks/<name>/`` holds the benchmark's default config,
``config.yaml``, which belongs to the configs tree like every other file. Another YAML file in
that folder (or below it) that declares a ``type: benchmark`` dataset is a *flavor*: an
alternative to that ``config.yaml`` (another dataset, agent or prompt), kept out of the tree
until it is selected. Selecting it loads the tree with the flavor in place of the default
config, so a flavor may reuse the default's instance names.

Tokens are what ``gym-assets list benchmarks`` prints and ``--benchmark`` takes: the config's
path below ``benchmarks/`` without ``.yaml``, where ``<name>/config`` shortens to ``<name>``
(``units``, ``units/short``, ``tau2/configs/tau2``, ``lcb/v5/config``). Every token resolves
back to the file it was made from.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.config.names import NAME_RULE, is_name, shown
from gym_assets.config.yaml_source import parse_yaml_file, yaml_files_under
from gym_assets.errors import ConfigError, UsageError
from gym_assets.json_shapes import is_list, is_mapping
from gym_assets.limits import MAX_NAME_LENGTH

BENCHMARKS_DIR = "benchmarks"
DEFAULT_FLAVOR = "config"
_SUFFIXES = (".yaml", ".yml")


def benchmarks_dir(configs_root: Path) -> Path:
    return configs_root / BENCHMARKS_DIR


def benchmark_dataset_names(data: Any) -> list[str]:
    """Names of every ``type: benchmark`` dataset entry written anywhere in a parsed file."""
    found: list[str] = []
    stack = [data]
    while stack:
        node = stack.pop()
        if is_mapping(node):
            if node.get("type") == "benchmark" and isinstance(node.get("name"), str):
                found.append(node["name"])
            stack.extend(node.values())
        elif is_list(node):
            stack.extend(node)
    return sorted(found)


def default_config_for(configs_root: Path, file: Path) -> Path | None:
    """The ``config.yaml`` a flavor stands in for: the closest one between the flavor's
    folder and its benchmark folder; None for a file that is no flavor by location."""
    base = benchmarks_dir(configs_root)
    try:
        parts = file.relative_to(base).parts
    except ValueError:
        return None
    if len(parts) < 2 or file.stem == DEFAULT_FLAVOR:
        return None
    folder = file.parent
    while folder != base:
        found = _yaml_file(folder / DEFAULT_FLAVOR)
        if found is not None:
            return found
        folder = folder.parent
    return None


def is_flavor(configs_root: Path, file: Path, data: Any) -> bool:
    """A file the default configs tree leaves out, because it is a benchmark's alternative."""
    return default_config_for(configs_root, file) is not None and bool(
        benchmark_dataset_names(data)
    )


def token_of(configs_root: Path, file: Path) -> str | None:
    """The selector token of a benchmark config below ``benchmarks/`` (None elsewhere)."""
    try:
        parts = file.relative_to(benchmarks_dir(configs_root)).with_suffix("").parts
    except ValueError:
        return None
    if len(parts) == 2 and parts[1] == DEFAULT_FLAVOR:
        return parts[0]
    return "/".join(parts)


@dataclass(frozen=True)
class BenchmarkConfig:
    """One benchmark config file below ``benchmarks/``: its token and what it declares."""

    token: str
    path: Path
    flavor: bool
    datasets: tuple[str, ...]


def benchmark_configs(configs_root: Path) -> Iterator[BenchmarkConfig]:
    """Every config below ``benchmarks/`` that declares a benchmark dataset, by token.

    Files that do not parse are skipped here; loading them reports the error at its line.
    """
    base = benchmarks_dir(configs_root)
    if not base.is_dir():
        return
    for path in yaml_files_under(base):
        try:
            data = parse_yaml_file(path).data
        except ConfigError:
            continue
        names = benchmark_dataset_names(data)
        token = token_of(configs_root, path)
        if names and token is not None:
            flavor = default_config_for(configs_root, path) is not None
            yield BenchmarkConfig(token, path, flavor, tuple(names))


TOKEN_RULE = (
    f"a token is NAME or NAME/FLAVOR, at most {MAX_NAME_LENGTH} characters in all, and {NAME_RULE}"
)


def is_token(value: str) -> bool:
    """``NAME[/FLAVOR...]`` made of names (``gym_assets.config.names``): each part becomes a
    segment of a path, the whole a flavor's data root."""
    return len(value) <= MAX_NAME_LENGTH and all(is_name(part) for part in value.split("/"))


def check_token(value: str) -> None:
    """Refuse a ``--benchmark`` value that is no token, before any path is built from it."""
    if not is_token(value):
        raise UsageError(
            f"--benchmark {shown(value)} is not a benchmark token; {TOKEN_RULE} (see "
            "`gym-assets list benchmarks`)"
        )


def resolve_token(configs_root: Path, value: str) -> Path:
    """The config file ``--benchmark VALUE`` names, or a ``UsageError`` saying what it
    implied, the closest tokens, and where it looked.

    ``NAME/FLAVOR`` first means a nested benchmark folder ``benchmarks/NAME/FLAVOR/`` (its
    ``config.yaml``), then the file ``benchmarks/NAME/FLAVOR.yaml``; ``NAME`` alone means
    ``benchmarks/NAME/config.yaml``.
    """
    check_token(value)
    base = benchmarks_dir(configs_root)
    if "/" in value:
        nested = _yaml_file(base / value / DEFAULT_FLAVOR)
        if nested is not None:
            return nested
    implied = base / (value if "/" in value else f"{value}/{DEFAULT_FLAVOR}")
    found = _yaml_file(implied)
    if found is not None:
        return found
    tokens = [config.token for config in benchmark_configs(configs_root)]
    raise UsageError(
        f"--benchmark {value} implies config {implied}.yaml, which does not exist."
        f"{_suggestion(value, base, tokens)} Searched benchmarks dirs: {base}"
    )


def _suggestion(value: str, base: Path, tokens: list[str]) -> str:
    """The shortest token below a folder that only groups benchmarks, else close tokens."""
    below = sorted((t for t in tokens if t.startswith(f"{value}/")), key=lambda t: (len(t), t))
    if (base / value).is_dir() and below:
        return f" Did you mean '{below[0]}'?"
    close = difflib.get_close_matches(value, tokens, n=3, cutoff=0.6)
    if not close:
        return f" Known tokens: {', '.join(sorted(tokens)) or 'none'}."
    return " Did you mean " + " or ".join(f"'{token}'" for token in close) + "?"


def _yaml_file(stem: Path) -> Path | None:
    for suffix in _SUFFIXES:
        candidate = stem.with_name(stem.name + suffix)
        if candidate.is_file():
            return candidate
    return None
