"""Turn library results into Dagster metadata a person can read in the UI."""

import inspect
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, TypedDict

import dagster as dg

from gym_assets.check_outcome import CheckOutcome
from gym_assets.errors import UserError

OWNER = "team:gym-assets"
"""Who answers for every asset here; Dagster takes an email or a ``team:`` name."""

Domain = Literal["datasets", "evaluation", "conformance"]


class AssetLabels(TypedDict):
    owners: list[str]
    tags: dict[str, str]


def labels(domain: Domain) -> AssetLabels:
    """The owners and tags of an asset in ``domain``, spread into its decorator
    (``@dg.asset(..., **labels("datasets"))``): the UI's catalog filters on both, and every
    asset states them the same way. ``kinds`` stays per asset (what it writes)."""
    return {"owners": [OWNER], "tags": {"domain": domain}}


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def page_link(page: Path) -> dg.UrlMetadataValue:
    """A page we wrote (an HTML report) as a ``file://`` link. Dagster 1.13's UI renders a URL
    entry as a link that opens a new tab, while a path entry only offers to copy the text. A
    browser may refuse to follow a file link from a web page (Chrome and Firefox do): then
    copy the link into the address bar. Product files read by programs stay path entries."""
    return dg.MetadataValue.url(page.resolve().as_uri())


def markdown(docstring: str) -> str:
    """A library docstring as a UI description: dedented (an indented line would render as
    code) and with reStructuredText's double backticks as markdown code spans."""
    return inspect.cleandoc(docstring).replace("``", "`")


def as_failure(exc: UserError) -> dg.Failure:
    """A user error becomes a Dagster failure with the same one-line message."""
    return dg.Failure(description=exc.render(), allow_retries=False)


def check_result(
    outcome: CheckOutcome, asset_key: dg.AssetKey, check_name: str
) -> dg.AssetCheckResult:
    """A library check outcome as an asset check result (advisories at WARN severity).

    Numbers go in as text. Every check here is partitioned like its asset (``check_suites``),
    but the UI's check page plots a check's numeric metadata over all its evaluations as one
    line, whatever partition each judged: a count from ``arith`` next to one from
    ``humaneval`` would read as a trend. As text each number stays in its own evaluation's
    row; the asset's materializations carry the numbers to plot."""
    severity = dg.AssetCheckSeverity.WARN if outcome.warn_only else dg.AssetCheckSeverity.ERROR
    metadata = {"summary": outcome.description, **outcome.metadata}
    return dg.AssetCheckResult(
        asset_key=asset_key,
        check_name=check_name,
        passed=outcome.passed,
        severity=severity,
        description=outcome.description,
        metadata={name: _unplotted(value) for name, value in metadata.items()},
    )


def _unplotted(value: Any) -> Any:
    """``value``, with an int or float (not a bool) as its text."""
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    return dg.MetadataValue.text(str(value)) if is_number else value
