"""Change one string value of a YAML file in place, leaving every other character as it was.

The migration command points an environment server's agent reference at a renamed agent in a
user's own file. Dumping the parsed file again would drop comments, quoting and layout, so the
edit replaces only the characters of that one value, written in the style it had.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_STR_TAG = "tag:yaml.org,2002:str"
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-/]*")


def scalar_span(text: str, keys: Sequence[str]) -> tuple[int, int] | None:
    """Character span of the value at ``keys`` (mapping keys from the top), or None.

    None means the value is not written there as one scalar of its own: a key is missing or
    comes through a merge key (``<<``), the value is a mapping or list, or the value (or a
    mapping around it) is an anchor that aliases reuse elsewhere, so that editing the text
    would change other values too; an anchor or tag on the value itself is also declined.
    """
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
    finally:
        loader.dispose()  # pyright: ignore[reportUnknownMemberType]  # unannotated in the stub
    if root is None:
        return None
    uses = _reference_counts(root)
    node: Node = root
    for key in keys:
        if not isinstance(node, MappingNode) or uses[id(node)] != 1:
            return None
        values = [
            value
            for key_node, value in node.value
            if isinstance(key_node, ScalarNode)
            and key_node.tag == _STR_TAG
            and key_node.value == key
        ]
        if len(values) != 1:
            return None
        node = values[0]
    if not isinstance(node, ScalarNode) or uses[id(node)] != 1:
        return None
    start, end = node.start_mark.index, node.end_mark.index
    if text[start] in "&!":
        return None
    return start, end


def replace_scalar(text: str, span: tuple[int, int], value: str) -> str:
    """``text`` with the scalar at ``span`` replaced by the string ``value``, same quoting."""
    start, end = span
    written = text[start:end]
    if written.startswith("'"):
        new = "'" + value.replace("'", "''") + "'"
    elif written.startswith('"') or not _is_plain(value):
        new = json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML double-quoted one
    else:
        new = value
    return text[:start] + new + text[end:]


def _is_plain(value: str) -> bool:
    """Safe to write unquoted, in block and flow context alike (``true``, ``1`` are not)."""
    return bool(_PLAIN_NAME.fullmatch(value)) and yaml.safe_load(value) == value


def _reference_counts(root: Node) -> dict[int, int]:
    """How many places of the document use each node (an anchored node: once per alias)."""
    counts: dict[int, int] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        counts[id(node)] = counts.get(id(node), 0) + 1
        if counts[id(node)] > 1:
            continue  # an alias: its children were (or will be) counted through the anchor
        if isinstance(node, MappingNode):
            stack.extend(child for pair in node.value for child in pair)
        elif isinstance(node, SequenceNode):
            stack.extend(node.value)
    return counts
