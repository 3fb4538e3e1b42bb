"""Text from data is shown, never obeyed: what does not print as itself is escaped."""

from __future__ import annotations

import pytest

from gym_assets.display import shown


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("units-001", "units-001"),
        ("café 数学 C:\\data", "café 数学 C:\\data"),  # letters and backslashes as they are
        ("u9\nchanged: u1", r"u9\nchanged: u1"),
        ("\x1b[2J\x07", r"\x1b[2J\x07"),
        ("\x9b31m", r"\x9b31m"),  # a C1 control: the one-byte CSI
        ("abc\u202edef", r"abc\u202edef"),  # a right-to-left override
        ("a\u2028b", r"a\u2028b"),  # a line separator
        ("\ud800", r"\ud800"),  # a lone surrogate
        (7, "7"),
    ],
)
def test_what_does_not_print_is_escaped(text: object, expected: str) -> None:
    assert shown(text) == expected
    assert shown(text).isprintable()


def test_a_message_on_several_lines_keeps_them_and_nothing_else() -> None:
    assert shown("refused:\n  a: \x1b[2J", lines=True) == "refused:\n  a: \\x1b[2J"
