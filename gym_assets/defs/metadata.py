"""Turn library results into Dagster metadata a person can read in the UI."""


from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import dagster as dg

from gym_assets.errors import UserError


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def files_metadata(files: Mapping[str, Any]) -> dict[str, dg.MetadataValue]:
    """``{label: (path, rows, sha256)}`` as path + sha metadata entries."""
    out: dict[str, dg.MetadataValue] = {}
    for label, (path, rows, sha) in files.items():
        out[f"{label} path"] = dg.MetadataValue.path(str(path))
        out[f"{label} rows"] = dg.MetadataValue.int(rows)
        out[f"{label} sha256"] = dg.MetadataValue.text(sha)
    return out


def as_failure(exc: UserError) -> dg.Failure:
    """A user error becomes a Dagster failure with the same one-line message."""
    return dg.Failure(description=exc.render(), allow_retries=False)
