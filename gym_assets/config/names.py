"""The one rule for names that become path segments.

A harness name, a dataset's name (and that of the instance declaring it) and every part of a
``--benchmark`` token are joined to a root to make a path: an install folder, a product
directory, a metrics folder, a flavor's data root. A name like ``../../evil`` would put that
path outside its root, and a part longer than a file name may be fails deep inside the OS. So
each is checked against this rule where it is read (the registry, the config, the flag), before
any path is built from it: one segment, no ``.``/``..``, nothing hidden or option-like, nothing
the terminal or the shell reads specially.
"""

from __future__ import annotations

import re

from gym_assets.limits import MAX_NAME_LENGTH

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
NAME_RULE = (
    f"a name is 1 to {MAX_NAME_LENGTH} letters, digits, '.', '_' or '-', starting with a "
    "letter or digit"
)
_SHOWN = 40  # characters of a refused value a message repeats


def shown(value: object) -> str:
    """``value`` quoted for a message, cut short when long (a refused value may be huge)."""
    if not isinstance(value, str) or len(value) <= _SHOWN:
        return repr(value)
    return f"{value[:_SHOWN]!r}... ({len(value):,} characters)"


def is_name(value: object) -> bool:
    return (
        isinstance(value, str)
        and len(value) <= MAX_NAME_LENGTH
        and _NAME.fullmatch(value) is not None
    )


def valid_name(value: str) -> str:
    """``value`` when it is a name, else ``ValueError`` (a pydantic validator's contract)."""
    if not is_name(value):
        raise ValueError(f"{shown(value)} is not a name; {NAME_RULE}")
    return value
