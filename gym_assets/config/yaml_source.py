"""Read config YAML strictly and remember the line of every node.

PyYAML silently keeps the last of two equal keys, which hides typos that override a setting;
here a duplicate key is an error naming both lines. Every mapping entry and list item gets a
line number so later validation can say exactly where a bad value was written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gym_assets.errors import ConfigError

KeyPath = tuple[Any, ...]
YAML_SUFFIXES = (".yaml", ".yml")
_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class ParsedYaml:
    """One file's document and the 1-based line of each node, keyed by its key path."""

    path: Path
    data: Any
    lines: dict[KeyPath, int]


class _DuplicateKeyError(yaml.MarkedYAMLError):
    pass


class _StrictLoader(yaml.SafeLoader):
    """A safe loader that refuses a key written twice in one mapping."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG or not isinstance(key_node, ScalarNode):
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise _DuplicateKeyError(
                    problem=f"key {key!r} is written twice in one mapping (first on line "
                    f"{seen[key]}); keep one of them",
                    problem_mark=key_node.start_mark,
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def parse_yaml_text(text: str, path: Path) -> ParsedYaml:
    """Parse one YAML document; a syntax error or duplicate key becomes a ``ConfigError``."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
        lines: dict[KeyPath, int] = {}
        if node is not None:
            _record_lines(loader, node, (), lines, set())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        reason = exc.problem or exc.context or "unreadable YAML"
        line = None if mark is None else mark.line + 1
        raise ConfigError(f"not valid YAML: {reason}", path=path, line=line) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {exc}", path=path) from None
    finally:
        loader.dispose()
    return ParsedYaml(path=path, data=data, lines=lines)


def parse_yaml_file(path: Path) -> ParsedYaml:
    """Read and parse one file; unreadable bytes are a ``ConfigError`` too."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc}", path=path) from None
    return parse_yaml_text(text, path)


def _record_lines(
    loader: _StrictLoader, node: Node, path: KeyPath, lines: dict[KeyPath, int], active: set[int]
) -> None:
    if id(node) in active:  # a recursive anchor; its lines are already recorded
        return
    active.add(id(node))
    if isinstance(node, MappingNode):
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            child = (*path, loader.construct_object(key_node))
            lines[child] = key_node.start_mark.line + 1
            _record_lines(loader, value_node, child, lines, active)
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _record_lines(loader, item, (*path, index), lines, active)
    active.discard(id(node))


def _is_skipped_dir(directory: Path) -> bool:
    """Hidden directories and virtualenvs hold no configs of ours."""
    return (
        directory.name.startswith(".")
        or directory.name == "site-packages"
        or (directory / "pyvenv.cfg").exists()
    )


def yaml_files_under(root: Path) -> Iterator[Path]:
    """Every ``*.yaml``/``*.yml`` file below ``root``, sorted by relative path."""
    found: list[tuple[str, Path]] = []
    stack = [root]
    while stack:
        directory = stack.pop()
        for entry in directory.iterdir():
            if entry.is_dir():
                if not _is_skipped_dir(entry):
                    stack.append(entry)
            elif entry.suffix in YAML_SUFFIXES and entry.is_file():
                found.append((entry.relative_to(root).as_posix(), entry))
    yield from (path for _, path in sorted(found))


def expand_yaml_paths(paths: Iterable[Path]) -> list[Path]:
    """Files as given and directories expanded, in order, each file once."""
    seen: dict[Path, None] = {}
    for path in paths:
        for file in yaml_files_under(path) if path.is_dir() else [path]:
            seen.setdefault(file, None)
    return list(seen)
