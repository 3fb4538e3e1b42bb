"""What ``gym-assets list <things>`` prints: one JSON array, or a titled table."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from gym_assets.display import shown


def print_listing(
    title: str,
    rows: Sequence[dict[str, Any]],
    *,
    as_json: bool,
    headers: Sequence[str],
    cells: Callable[[dict[str, Any]], Sequence[str]],
) -> None:
    """``rows`` as JSON, or ``cells(row)`` under ``headers`` in columns as wide as needed."""
    if as_json:
        print(json.dumps(list(rows), ensure_ascii=False))
        return
    table = [[shown(cell) for cell in cells(row)] for row in rows]
    widths = [
        max(len(h), *(len(r[i]) for r in table)) if table else len(h) for i, h in enumerate(headers)
    ]
    print(f"{title} ({len(rows)})")
    for line in [list(headers), *table]:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
