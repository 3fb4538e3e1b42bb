"""Text from data, made safe to print: task ids, names, reasons and paths that came from a file.

Such text is not ours. A task id holding a newline would print a line of its own (a forged
``changed:`` line in ``plan verify``), and an escape sequence would be run by the terminal. So
every character that does not print as itself (control characters, line and paragraph
separators, bidirectional overrides, unassigned code points) is shown as its Python escape
(``\\n``, ``\\x1b``, ``\\u202e``), never written as it is.
"""

from __future__ import annotations


def shown(text: object, *, lines: bool = False) -> str:
    """``text`` as a string with every character that does not print escaped; printable
    text (the common case, non-ASCII letters included) comes back unchanged. With ``lines``
    its newlines are kept: an error message that shows a YAML example is written on several
    lines on purpose, and what it quotes still cannot reach the terminal as a sequence."""
    value = str(text)
    if value.isprintable():
        return value
    if lines:
        return "\n".join(shown(line) for line in value.split("\n"))
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in value
    )
