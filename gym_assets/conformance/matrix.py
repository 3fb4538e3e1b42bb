"""The harness evidence matrix: one inspection per harness, compared side by side.

Each harness bundle is inspected into ``<output>/<name>/<report_id>/`` exactly as the
standalone inspector would; the matrix is then published, content-addressed and atomically,
as ``<output>/<matrix_id>/`` with the same facts three ways: JSON for machines, Markdown for
review threads, and a self-contained HTML page (inline CSS, no scripts, no external assets)
for people. A failed inspection publishes no matrix. ``<output>`` is a product directory
(``gym_assets.outputs``) holding a conformance matrix, its harnesses' reports inside it.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gym_assets.conformance.bundle import InspectionInputError
from gym_assets.conformance.fingerprint import content_id
from gym_assets.conformance.inspection import (
    Inspection,
    InspectionOptions,
    inspect_bundle,
    published,
    write_text_durably,
)
from gym_assets.conformance.result import TE_NAMES, TeStatus
from gym_assets.outputs.claims import claimed_dir
from gym_assets.outputs.markers import CONFORMANCE_MATRIX

MATRIX_SCHEMA = "harness-evidence-matrix/v1"
MATRIX_JSON = "harness_evidence.json"
MATRIX_MD = "harness_evidence.md"
MATRIX_HTML = "harness_evidence.html"
MATRIX_FILES = (MATRIX_JSON, MATRIX_MD, MATRIX_HTML)
HARNESS_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
PASS, FAIL, NOT_APPLICABLE = "PASS", "FAIL", "N/A"
MARKS = {PASS: "✓", FAIL: "✗", NOT_APPLICABLE: "—"}
CELL = {
    TeStatus.FULFILLED: PASS,
    TeStatus.NOT_FULFILLED: FAIL,
    TeStatus.NOT_APPLICABLE: NOT_APPLICABLE,
}
NOTE = (
    "Retained-artifact checks under one profile: each cell says whether a harness's saved"
    " rollouts carry the evidence, not how the harness behaved. Model payloads, tool outputs and"
    " prompts are never copied into this matrix."
)


def parse_harness(value: str) -> tuple[str, Path]:
    """``NAME=PATH`` → ``(name, path)``; names are ``[A-Za-z0-9_-]+``."""
    name, sep, path = value.partition("=")
    if not sep or not path or not HARNESS_NAME.match(name):
        raise InspectionInputError(
            f"--harness must be NAME=PATH with NAME made of letters, digits, '_' or '-' "
            f"(got {value!r})"
        )
    return name, Path(path)


@dataclass(frozen=True)
class Matrix:
    """A published matrix and the inspections behind it."""

    matrix_id: str
    matrix_dir: Path
    document: Mapping[str, Any]
    inspections: Mapping[str, Inspection]

    @property
    def gate_met(self) -> bool:
        return self.document["verdict"] == TeStatus.FULFILLED

    @property
    def exit_code(self) -> int:
        return 0 if self.gate_met else 1


def _harness_entry(name: str, inspection: Inspection) -> dict[str, Any]:
    summary = inspection.summary
    return {
        "report": f"{name}/{inspection.report_id}",
        "report_id": inspection.report_id,
        "verdict": summary["verdict"],
        "records": summary["records"],
        "fulfilled_records": summary["fulfilled_records"],
        "evidence": {label: te["verdict"] for label, te in summary["evidence"].items()},
        "p0": PASS if inspection.gate_met else FAIL,
        "failing_checks": summary["failing_checks"],
        "summary": summary,
    }


def matrix_document(
    inspections: Mapping[str, Inspection], options: InspectionOptions
) -> dict[str, Any]:
    harnesses = {name: _harness_entry(name, i) for name, i in inspections.items()}
    every = all(i.gate_met for i in inspections.values())
    return {
        "schema_version": MATRIX_SCHEMA,
        "profile": options.profile,
        "applicability": options.applicability(),
        "tool_scope": options.tool_scope_line(),
        "verdict": str(TeStatus.FULFILLED if every else TeStatus.NOT_FULFILLED),
        "is_behavioral_qualification": False,
        "harnesses": harnesses,
    }


def _cells(entry: Mapping[str, Any]) -> list[str]:
    return [CELL[TeStatus(entry["evidence"][label])] for label in TE_NAMES] + [entry["p0"]]


def split_failures(failing: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Root causes (with reasons) apart from checks that failed only because a prerequisite did.

    A reader fixes root causes; listing every cascaded "blocked by" row beside them buries them.
    """
    direct = {k: v for k, v in failing.items() if v["blocked"] < v["records"]}
    return direct, [k for k in failing if k not in direct]


def _id_list(ids: Sequence[str], quote: str = "") -> str:
    if quote:
        return ", ".join(f"{quote}{i}{quote}" for i in ids)
    return ", ".join(f"<code>{html.escape(i)}</code>" for i in ids)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def render_markdown(document: Mapping[str, Any]) -> str:
    header = ["Harness", *TE_NAMES, "P0"]
    lines = [
        "# Harness evidence matrix",
        "",
        f"Profile `{document['profile']}` · {len(document['harnesses'])} harnesses",
        "",
        f"{document['tool_scope']}.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for name, entry in document["harnesses"].items():
        lines.append(f"| {name} | " + " | ".join(_cells(entry)) + " |")
    lines += ["", "## Failing checks", ""]
    for name, entry in document["harnesses"].items():
        direct, blocked = split_failures(entry["failing_checks"])
        lines.append(f"- **{name}**: " + ("none" if not direct else f"{len(direct)} checks"))
        for check_id, fail in direct.items():
            reason = _one_line(fail["reason"]).replace("|", "\\|")
            lines.append(f"  - `{check_id}` ({fail['records']}/{entry['records']}): {reason}")
        if blocked:
            lines.append(f"  - blocked by the failures above: {_id_list(blocked, '`')}")
    lines += ["", NOTE, ""]
    return "\n".join(lines)


STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;
max-width:72rem;padding:0 1rem;color:#1d2430;background:#fff}
h1{font-size:1.5rem;margin-bottom:.25rem}h2{font-size:1.15rem;margin-top:2rem}
.meta,.note,.legend{color:#4a5568}
table{border-collapse:collapse;margin:1rem 0;width:100%}
th,td{border:1px solid #d5dbe3;padding:.4rem .55rem;text-align:center;white-space:nowrap}
thead th{background:#f2f5f9;font-weight:600}
tbody th{text-align:left;font-weight:600}
td.pass{background:#e3f6e8;color:#135b2a}
td.fail{background:#fde5e3;color:#8d1c12;font-weight:600}
td.na{background:#f3f4f6;color:#6b7280}
td.p0{border-left:3px solid #1d2430}
section{border:1px solid #d5dbe3;border-radius:6px;padding:.25rem 1rem;margin:1rem 0}
section.ok{border-left:6px solid #2f9e55}section.bad{border-left:6px solid #d93a2b}
ul{padding-left:1.2rem}li{margin:.3rem 0}code{background:#f2f5f9;padding:0 .25rem;border-radius:3px}
dl{display:grid;grid-template-columns:max-content auto;gap:.1rem 1rem}
dt{font-weight:600}dd{margin:0}
"""
_CSS_CLASS = {PASS: "pass", FAIL: "fail", NOT_APPLICABLE: "na"}


def _td(cell: str, extra: str = "") -> str:
    return f'<td class="{_CSS_CLASS[cell]}{extra}">{MARKS[cell]} {cell}</td>'


def _failing_item(check_id: str, fail: Mapping[str, Any], records: int) -> str:
    e = html.escape
    labels = ", ".join(fail["evidence"]) or "no TE label"
    where = f"{e(labels)}; fails in {fail['records']} of {records} records"
    reason = e(_one_line(fail["reason"]))
    return f'<li><code>{e(check_id)}</code> <span class="meta">({where})</span> — {reason}</li>'


def render_html(document: Mapping[str, Any]) -> str:
    """A standalone page: summary table, then each harness's failing checks with reasons."""
    e = html.escape
    harnesses = document["harnesses"]
    passing = sum(entry["p0"] == PASS for entry in harnesses.values())
    head = "".join(f'<th title="{e(n)}">{e(label)}</th>' for label, n in TE_NAMES.items())
    rows = []
    for name, entry in harnesses.items():
        cells = _cells(entry)
        tds = "".join(_td(c) for c in cells[:-1]) + _td(cells[-1], " p0")
        rows.append(f'<tr><th scope="row">{e(name)}</th><td>{entry["records"]}</td>{tds}</tr>')
    sections = []
    for name, entry in harnesses.items():
        direct, blocked = split_failures(entry["failing_checks"])
        mark = MARKS[entry["p0"]]
        items = "".join(
            _failing_item(check_id, fail, entry["records"]) for check_id, fail in direct.items()
        )
        if blocked:
            items += f'<li class="meta">Blocked by the failures above: {_id_list(blocked)}</li>'
        body = f"<ul>{items}</ul>" if items else "<p>Every applicable check passes.</p>"
        status = "ok" if entry["p0"] == PASS else "bad"
        sections.append(
            f'<section class="{status}"><h3>{mark} {e(name)} — P0 {entry["p0"]}</h3>'
            f'{body}<p class="meta">Report: <code>{e(entry["report"])}</code></p></section>'
        )
    legend = "".join(f"<dt>{e(label)}</dt><dd>{e(n)}</dd>" for label, n in TE_NAMES.items())
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>Harness evidence matrix</title><style>{STYLE}</style></head><body>"
        "<h1>Harness evidence matrix</h1>"
        f'<p class="meta">Profile <code>{e(document["profile"])}</code> · '
        f"{passing} of {len(harnesses)} harnesses meet the P0 gate · "
        f"{e(document['tool_scope'])}</p>"
        f"<table><thead><tr><th>Harness</th><th>Records</th>{head}<th>P0</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        '<p class="legend">✓ PASS: every applicable record fulfils it · ✗ FAIL: at least one'
        " record does not · — N/A: outside the declared scope</p>"
        f"<h2>Failing checks</h2>{''.join(sections)}"
        f"<h2>Evidence labels</h2><dl>{legend}</dl>"
        f'<p class="note">{e(NOTE)}</p></body></html>\n'
    )


def build_matrix(
    harnesses: Sequence[tuple[str, Path]],
    output: str | Path,
    options: InspectionOptions | None = None,
) -> Matrix:
    """Inspect every harness, then publish ``<output>/<matrix_id>/`` (idempotent)."""
    options = options or InspectionOptions()
    names = [name for name, _ in harnesses]
    if not names:
        raise InspectionInputError("give at least one --harness NAME=PATH")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InspectionInputError(f"harness names must be unique: {', '.join(duplicates)}")
    for name in names:
        if not HARNESS_NAME.match(name):
            raise InspectionInputError(f"harness name {name!r} must match [A-Za-z0-9_-]+")
    output = Path(output)
    with claimed_dir(options.output(output, CONFORMANCE_MATRIX)):
        inspections = {n: inspect_bundle(path, output / n, options) for n, path in harnesses}
        document = matrix_document(inspections, options)
        matrix_id = content_id(document)
        with published(output, matrix_id, MATRIX_FILES) as staged:
            text = json.dumps({"matrix_id": matrix_id, **document}, indent=2, ensure_ascii=False)
            write_text_durably(staged / MATRIX_JSON, text + "\n")
            write_text_durably(staged / MATRIX_MD, render_markdown(document))
            write_text_durably(staged / MATRIX_HTML, render_html(document))
    return Matrix(matrix_id, output / matrix_id, document, inspections)
