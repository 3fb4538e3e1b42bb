"""Read config YAML strictly and remember the line of every node.

PyYAML silently keeps the last of two equal keys, which hides typos that override a setting;
here a duplicate key is an error naming both lines. Every mapping entry and list item gets a
line number so later validation can say exactly where a bad value was written.

PyYAML shares the node an alias names instead of copying it, so an "alias bomb" (aliases of
aliases of aliases) loads in microseconds and explodes later, when inheritance copies or a
walk visits the data. The loader therefore measures every node as it is composed, with its
aliases expanded, and refuses a file whose aliases repeat more than ``MAX_YAML_ALIAS_NODES``
nodes or that nests deeper than ``MAX_NESTING`` levels, before anything walks it.

Config values end up in JSON (metrics sidecars, reports), so YAML values JSON cannot hold are
refused at their line: binary data, sets (whose order would change from run to run), NaN and
infinities.

A YAML value given on the command line (``rollouts --override``) is read by the same loader
(``parse_yaml_value``): it is as untrusted as a file and ends up in the same JSON.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent, CollectionStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import ReaderError

from gym_assets.errors import ConfigError, UsageError
from gym_assets.limits import MAX_CONFIG_BYTES, MAX_NESTING, MAX_YAML_ALIAS_NODES
from gym_assets.user_files import read_input

KeyPath = tuple[Any, ...]
YAML_SUFFIXES = (".yaml", ".yml")
MANIFEST_NAME = "manifest.yaml"
_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class ParsedYaml:
    """One file's document and the 1-based line of each node, keyed by its key path."""

    path: Path
    data: Any
    lines: dict[KeyPath, int]


class _DuplicateKeyError(yaml.MarkedYAMLError):
    pass


class _Refusal(yaml.MarkedYAMLError):
    """The file asks for more than the loader's bounds (aliases, nesting), or holds a value
    that has no JSON form."""


class _StrictLoader(yaml.SafeLoader):
    """A safe loader that refuses duplicate keys, alias bombs and runaway nesting."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        # id(node) -> (nodes, nesting levels) of the node with its aliases expanded.
        self._extent: dict[int, tuple[int, int]] = {}
        self._alias_nodes = 0
        self._depth = 0  # mappings and lists open around the node being composed

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        event = self._next_event()
        if isinstance(event, AliasEvent):
            return self._alias(self._compose(parent, index), event)
        opens = isinstance(event, CollectionStartEvent)
        self._depth += opens
        self._check_depth(self._depth, event)
        node = self._compose(parent, index)
        self._depth -= opens
        children: list[Node] = []
        if isinstance(node, MappingNode):
            children = [child for pair in node.value for child in pair]
        elif isinstance(node, SequenceNode):
            children = node.value
        extents = [self._extent[id(child)] for child in children]
        self._extent[id(node)] = (
            1 + sum(nodes for nodes, _ in extents),
            opens + max((levels for _, levels in extents), default=0),
        )
        return node

    # PyYAML's stubs leave these unannotated, or wider than what the code returns: typed here.
    def _next_event(self) -> object:
        return self.peek_event()  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]

    def value_of(self, node: Node) -> Any:
        return self.construct_object(node, deep=True)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]

    def document_of(self, node: Node) -> Any:
        return self.construct_document(node)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]

    def _compose(self, parent: Node | None, index: Any) -> Node:
        node = super().compose_node(parent, index)
        # PyYAML's compose_node returns a node or raises; its stub also allows None.
        assert node is not None
        return node

    def _alias(self, node: Node, event: AliasEvent) -> Node:
        """Count what an alias repeats; an alias inside its own anchor would be endless."""
        extent = self._extent.get(id(node))
        if extent is None:
            raise _Refusal(
                problem=f"the alias *{event.anchor} is used inside the value it names, which "
                "makes that value endless; write the value out instead",
                problem_mark=event.start_mark,
            )
        nodes, levels = extent
        self._alias_nodes += nodes
        if self._alias_nodes > MAX_YAML_ALIAS_NODES:
            raise _Refusal(
                problem=f"the aliases of this YAML repeat more than {MAX_YAML_ALIAS_NODES:,} "
                "YAML nodes in all (an alias bomb?); write the values out or repeat less",
                problem_mark=event.start_mark,
            )
        self._check_depth(self._depth + levels, event)
        return node

    @staticmethod
    def _check_depth(depth: int, event: Any) -> None:
        if depth > MAX_NESTING:
            raise _Refusal(
                problem=f"nested deeper than {MAX_NESTING} levels; flatten it",
                problem_mark=event.start_mark,
            )

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG or not isinstance(key_node, ScalarNode):
                continue
            key = self.value_of(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise _DuplicateKeyError(
                    problem=f"key {key!r} is written twice in one mapping (first on line "
                    f"{seen[key]}); keep one of them",
                    problem_mark=key_node.start_mark,
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _no_json_form(loader: _StrictLoader, node: Node) -> Any:
    raise _Refusal(
        problem=f"a YAML {node.tag.rsplit(':', 1)[-1]} value has no JSON form, and config values "
        "are JSON values; write a string or a list instead",
        problem_mark=node.start_mark,
    )


def _finite_float(loader: _StrictLoader, node: ScalarNode) -> float:
    value = loader.construct_yaml_float(node)
    if not math.isfinite(value):
        raise _Refusal(
            problem=f"{node.value} has no JSON form (JSON has no NaN or infinity); write a number",
            problem_mark=node.start_mark,
        )
    return value


_StrictLoader.add_constructor("tag:yaml.org,2002:binary", _no_json_form)
_StrictLoader.add_constructor("tag:yaml.org,2002:set", _no_json_form)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _finite_float)


class _Unreadable(Exception):
    """Why a YAML text was refused, and the 1-based line it is about (None: the whole)."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def _parse(text: str) -> tuple[Any, dict[KeyPath, int]]:
    """One YAML document under the loader's rules, and the line of each node."""
    loader = None
    try:
        loader = _StrictLoader(text)  # the reader refuses control characters right here
        node = loader.get_single_node()
        data = None if node is None else loader.document_of(node)
        lines: dict[KeyPath, int] = {}
        if node is not None:
            _record_lines(loader, node, (), lines)
    except _Refusal as exc:
        line = None if exc.problem_mark is None else exc.problem_mark.line + 1
        raise _Unreadable(str(exc.problem), line) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        reason = exc.problem or exc.context or "unreadable YAML"
        line = None if mark is None else mark.line + 1
        raise _Unreadable(f"not valid YAML: {reason}", line) from None
    except ReaderError as exc:
        raise _Unreadable(
            f"not valid YAML: the control character #x{exc.character:02x} cannot appear in "
            "YAML text; is this a binary file?",
            text.count("\n", 0, exc.position) + 1,
        ) from None
    finally:
        if loader is not None:
            loader.dispose()  # pyright: ignore[reportUnknownMemberType]  # unannotated in the stub
    return data, lines


def parse_yaml_text(text: str, path: Path) -> ParsedYaml:
    """Parse one YAML document; a syntax error, duplicate key or exceeded bound becomes a
    ``ConfigError`` naming the line."""
    try:
        data, lines = _parse(text)
    except _Unreadable as exc:
        raise ConfigError(exc.message, path=path, line=exc.line) from None
    return ParsedYaml(path=path, data=data, lines=lines)


def parse_yaml_value(text: str, flag: str) -> Any:
    """A YAML value given on the command line, under the same rules as a config file (the
    bounds, no duplicate keys, only JSON values): a flag's value is as untrusted as a file
    and ends up in the same JSON. A refusal is a ``UsageError`` naming ``flag``."""
    try:
        return _parse(text)[0]
    except _Unreadable as exc:
        where = f" (line {exc.line})" if exc.line is not None and "\n" in text else ""
        raise UsageError(f"{flag}: {exc.message}{where}") from None


def parse_yaml_file(path: Path, what: str = "config file") -> ParsedYaml:
    """Read and parse one file; what cannot be read is a ``ConfigError`` too."""
    return parse_yaml_text(read_yaml_file(path, what)[1], path)


def read_yaml_file(path: Path, what: str = "config file") -> tuple[bytes, str]:
    """A YAML file's bytes and text, read as every user input is (``user_files``: a regular
    file, links followed, at most ``MAX_CONFIG_BYTES``); a ``ConfigError`` when it cannot be."""
    content = read_input(path, what, MAX_CONFIG_BYTES, ConfigError)
    try:
        return content, content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read the file: {exc}", path=path) from None


def _record_lines(
    loader: _StrictLoader, node: Node, path: KeyPath, lines: dict[KeyPath, int]
) -> None:
    """Walk the document (aliases expanded: the loader bounded them) recording each line."""
    if isinstance(node, MappingNode):
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            child = (*path, loader.value_of(key_node))
            lines[child] = key_node.start_mark.line + 1
            _record_lines(loader, value_node, child, lines)
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _record_lines(loader, item, (*path, index), lines)


def _is_skipped_dir(directory: Path) -> bool:
    """Hidden directories and virtualenvs hold no configs of ours."""
    return (
        directory.name.startswith(".")
        or directory.name == "site-packages"
        or (directory / "pyvenv.cfg").exists()
    )


def _files_under(root: Path, wanted: Callable[[Path], bool]) -> Iterator[Path]:
    """Every file below ``root`` that ``wanted`` accepts, sorted by relative path."""
    found: list[tuple[str, Path]] = []
    stack = [root]
    while stack:
        directory = stack.pop()
        for entry in directory.iterdir():
            if entry.is_dir():
                if not _is_skipped_dir(entry):
                    stack.append(entry)
            elif wanted(entry):  # a FIFO or a dangling link too: reading it says what it is
                found.append((entry.relative_to(root).as_posix(), entry))
    yield from (path for _, path in sorted(found))


def yaml_files_under(root: Path) -> Iterator[Path]:
    """Every config file below ``root``: ``*.yaml``/``*.yml`` except environment manifests,
    which describe a config beside them and are not configs themselves."""
    return _files_under(
        root, lambda path: path.suffix in YAML_SUFFIXES and path.name != MANIFEST_NAME
    )


def manifest_files_under(root: Path) -> Iterator[Path]:
    """Every environment manifest (``manifest.yaml``) below ``root``, sorted."""
    return _files_under(root, lambda path: path.name == MANIFEST_NAME)


def expand_yaml_paths(paths: Iterable[Path]) -> list[Path]:
    """Files as given and directories expanded, in order, each file once."""
    seen: dict[Path, None] = {}
    for path in paths:
        for file in yaml_files_under(path) if path.is_dir() else [path]:
            seen.setdefault(file, None)
    return list(seen)
