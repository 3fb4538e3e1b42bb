"""The standalone evidence inspector: check a rollout bundle, publish a content-addressed report.

The report directory's name is the hash of everything that determines its content (input file
hashes, checker source hash, profile, declared scope), so inspecting the same bytes twice
names the same directory and must produce byte-identical files — a replay is idempotent, and a
conflicting existing report is an error, never overwritten. The report is built in a temporary
directory and renamed into place only after the inputs were re-hashed unchanged, so an error
publishes nothing and never disturbs an earlier report. The output directory holding the
reports is a product of its own (``gym_assets.outputs``): missing, empty, or reports written
here before; anything else is refused.

Records are checked one at a time and each result is streamed to ``evidence_results.jsonl``;
only counters are kept in memory, so memory does not grow with the bundle.
"""

from __future__ import annotations

import contextlib
import filecmp
import hashlib
import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from gym_assets.conformance.bundle import (
    InspectionInputError,
    Provenance,
    iter_bundle_rows,
    resolve_bundle,
)
from gym_assets.conformance.checker import check_record
from gym_assets.conformance.engine import Row, Status
from gym_assets.conformance.fingerprint import canonical_json, content_id
from gym_assets.conformance.profiles import PROFILE_ID, PROFILES
from gym_assets.conformance.result import (
    SCOPE_CLOSURE,
    TE_NAMES,
    CheckerResult,
    TeStatus,
)
from gym_assets.conformance.scope import EvidenceScope, declares_tools
from gym_assets.errors import os_failure, reported
from gym_assets.outputs.claims import claimed_dir
from gym_assets.outputs.markers import CONFORMANCE_REPORTS, Kind
from gym_assets.outputs.targets import Target
from gym_assets.workspace import Workspace

SUMMARY_SCHEMA = "harness-evidence/v1"
DECODER_VERSION = "gym-p0-evidence/v2"
CHECKER_VERSION = "1.0.0"
RESULTS_FILE = "evidence_results.jsonl"
SUMMARY_FILE = "evidence_summary.json"
REPORT_FILE = "evidence_report.md"
REPORT_FILES = (RESULTS_FILE, SUMMARY_FILE, REPORT_FILE)
BLOCKED_PREFIX = "blocked by "  # how the executor words a failure caused by a prerequisite
CHECKER_PACKAGE = Path(__file__).parent
LIMITS = (
    "retained-artifact checks only: the bundle is judged as written, not how the harness behaved",
    "every current check is P0 and blocking, including invocation ownership and call-to-step joins",
    "capture sidecars are hashed as provenance and never repair missing canonical evidence",
)
SCOPE_NOTE = (
    "applicability is declared by the caller; absent evidence never makes a check not applicable"
)
TOOLS_FROM_BENCHMARK = "benchmark"


class ReportConflictError(InspectionInputError):
    """A report with this id already exists with different content; it is left untouched."""


@dataclass(frozen=True)
class InspectionOptions:
    """What the caller declares: the profile, the evidence scope, optional capture sidecars,
    and the configs tree that reports may never be written over. With
    ``tools_from_benchmark`` the tool scope is each record's task's (``declares_tools``)
    instead of ``scope.tools``: a tool-less benchmark gets no tool checks.

    ``profile`` may be any id of ``PROFILES``; reports record the id that was asked for, as the
    reference's do. An unknown id is an ``InspectionInputError``.
    """

    profile: str = PROFILE_ID
    scope: EvidenceScope = field(default_factory=EvidenceScope)
    capture_dir: Path | None = None
    configs_root: Path = field(default_factory=lambda: Workspace.resolve().configs)
    tools_from_benchmark: bool = False

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise InspectionInputError(
                f"unknown profile {self.profile!r}; known profiles: {', '.join(PROFILES)}"
            )

    def output(self, path: Path, kind: Kind) -> Target:
        return Target(path, kind, self.configs_root, flag="--output")

    def scope_for(self, record: Mapping[str, Any] | None) -> EvidenceScope:
        """The scope one record is judged under."""
        if not self.tools_from_benchmark:
            return self.scope
        return replace(self.scope, tools=declares_tools(record))

    def applicability(self) -> dict[str, Any]:
        """The declared scope as reports record it; ``tools`` is ``"benchmark"`` when each
        record's task decides."""
        declared: dict[str, Any] = asdict(self.scope)
        if self.tools_from_benchmark:
            declared["tools"] = TOOLS_FROM_BENCHMARK
        return declared

    def tool_scope_line(self, with_tools: int | None = None, records: int | None = None) -> str:
        """Which tool scope was applied, in words (with counts once the records are read)."""
        if not self.tools_from_benchmark:
            said = "in scope" if self.scope.tools else "out of scope (--no-tools)"
            return f"Tool scope: declared by the caller, tools {said}"
        counted = (
            "" if records is None else f": {with_tools} of {records} records' tasks declare tools"
        )
        return f"Tool scope: from the benchmark{counted} (the others get no tool checks)"


@dataclass(frozen=True)
class Inspection:
    """A published report."""

    report_id: str
    report_dir: Path
    summary: Mapping[str, Any]

    @property
    def gate_met(self) -> bool:
        return self.summary["verdict"] == TeStatus.FULFILLED

    @property
    def exit_code(self) -> int:
        return 0 if self.gate_met else 1


@cache
def checker_sha256() -> str:
    """Hash of the checker's own sources: a changed checker gets new report ids."""
    digests = [
        hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(CHECKER_PACKAGE.glob("*.py"))
    ]
    return hashlib.sha256("".join(digests).encode("ascii")).hexdigest()


@dataclass
class _Tally:
    """Bundle-level counters; the only state that grows is bounded by the catalogue size."""

    records: int = 0
    fulfilled: int = 0
    te: dict[str, Counter[str]] = field(default_factory=lambda: {k: Counter() for k in TE_NAMES})
    tokens: dict[str, Counter[str]] = field(default_factory=dict)
    failing: dict[str, dict[str, Any]] = field(default_factory=dict)
    with_tools: int = 0  # records judged with tools in scope

    def add(self, result: CheckerResult) -> None:
        self.records += 1
        self.fulfilled += result.verdict is TeStatus.FULFILLED
        for label, verdict in result.evidence.items():
            self.te[label][str(verdict.verdict)] += 1
        for name, availability in result.token_availability.items():
            self.tokens.setdefault(name, Counter()).update(asdict(availability))
        for row in result.rows:
            if row.status is Status.FAIL:
                self._count_failure(row)

    def _count_failure(self, row: Row) -> None:
        """Count a failed row; keep one reason, preferring a direct failure over "blocked by"."""
        entry = self.failing.setdefault(
            row.id, {"records": 0, "blocked": 0, "reason": "", "evidence": list(row.evidence)}
        )
        entry["records"] += 1
        entry["blocked"] += bool(row.blocked_by)
        kept_blocked = entry["reason"].startswith(BLOCKED_PREFIX)
        if row.reasons and (not entry["reason"] or (kept_blocked and not row.blocked_by)):
            entry["reason"] = row.reasons[0]

    def te_summary(self) -> dict[str, Any]:
        summary = {}
        for label, name in TE_NAMES.items():
            counts = self.te[label]
            if counts[TeStatus.NOT_FULFILLED]:
                verdict = TeStatus.NOT_FULFILLED
            elif counts[TeStatus.NOT_APPLICABLE] == self.records:
                verdict = TeStatus.NOT_APPLICABLE
            else:
                verdict = TeStatus.FULFILLED
            summary[label] = {
                "name": name,
                "records": self.records,
                "fulfilled": counts[TeStatus.FULFILLED],
                "not_fulfilled": counts[TeStatus.NOT_FULFILLED],
                "not_applicable": counts[TeStatus.NOT_APPLICABLE],
                "verdict": str(verdict),
                "scenario_coverage": {"observed": 0, "passed": 0},
            }
        return summary


def report_manifest(provenance: Provenance, options: InspectionOptions) -> dict[str, Any]:
    """Everything that determines a report's content; its hash is the report id."""
    return {
        "sources": provenance.to_json(),
        "checker_sha256": checker_sha256(),
        "profile": options.profile,
        "applicability": options.applicability(),
    }


def _summary(
    manifest: Mapping[str, Any], report_id: str, tally: _Tally, options: InspectionOptions
) -> dict[str, Any]:
    verdict = TeStatus.FULFILLED if tally.fulfilled == tally.records else TeStatus.NOT_FULFILLED
    return {
        "schema_version": SUMMARY_SCHEMA,
        "checker_version": CHECKER_VERSION,
        "decoder_version": DECODER_VERSION,
        "checker_status": "completed",
        "report_id": report_id,
        **manifest,
        "scope_note": SCOPE_NOTE,
        "tool_scope": options.tool_scope_line(tally.with_tools, tally.records),
        "scope_closure": SCOPE_CLOSURE,
        "verdict": str(verdict),
        "is_behavioral_qualification": False,
        "records": tally.records,
        "fulfilled_records": tally.fulfilled,
        "evidence": tally.te_summary(),
        "token_availability": {
            name: {"available": c["available"], "calls": c["calls"]}
            for name, c in sorted(tally.tokens.items())
        },
        "failing_checks": dict(sorted(tally.failing.items())),
        "delivery_surface": "rollout_jsonl",
        "limits": list(LIMITS),
    }


def render_report(summary: Mapping[str, Any]) -> str:
    """The human-readable report: gate, per-TE verdicts, failing checks. Never a payload."""
    gate = "met" if summary["verdict"] == TeStatus.FULFILLED else "not met"
    lines = [
        "# Harness evidence report",
        "",
        f"Profile `{summary['profile']}` · Gate **{gate}** · Records {summary['records']}",
        "",
        f"{summary['tool_scope']}.",
        "",
        "These are retained-artifact checks: they judge what the rollout file kept, not how the"
        " harness behaved while producing it.",
        "",
        "| Evidence | Artifact verdict | Passing / applicable records |",
        "|---|---|---|",
    ]
    for label, te in summary["evidence"].items():
        applicable = te["records"] - te["not_applicable"]
        lines.append(
            f"| {label}: {te['name']} | {te['verdict']} | {te['fulfilled']}/{applicable} |"
        )
    failing = summary["failing_checks"]
    if failing:
        lines += ["", "## Failing checks", "", "| Check | Records | Reason |", "|---|---|---|"]
        lines += [
            f"| `{check_id}` | {entry['records']} | {_md_cell(entry['reason'])} |"
            for check_id, entry in failing.items()
        ]
    lines += [
        "",
        "Model payloads, tool outputs and prompts are never copied into this report.",
        "",
    ]
    return "\n".join(lines)


def _md_cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def write_text_durably(path: Path, text: str) -> None:
    with reported(path), path.open("w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def staging_directory(output: Path, content_hash: str) -> Path:
    """A private temp dir beside the final one (same filesystem, so publishing is a rename)."""
    with reported(output):
        staged = Path(tempfile.mkdtemp(prefix=f".{content_hash[:16]}-", dir=output))
        staged.chmod(0o755)  # mkdtemp is owner-only; a published report is readable
    return staged


@contextlib.contextmanager
def published(output: Path, content_hash: str, names: tuple[str, ...]) -> Iterator[Path]:
    """Yield a staging dir for ``names``; publish it as ``output/content_hash`` if the block
    succeeds, discard it otherwise."""
    staged = staging_directory(output, content_hash)
    try:
        yield staged
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    publish_directory(staged, output / content_hash, names)


def publish_directory(staged: Path, final: Path, names: tuple[str, ...]) -> None:
    """Rename ``staged`` to ``final``; if ``final`` exists it must hold identical files.

    Identical content makes a replay a no-op; different content is a conflict and the existing
    report stays as it was. ``staged`` is consumed either way.
    """
    try:
        if not final.exists():
            try:
                os.rename(staged, final)
                return
            except OSError as exc:
                if not final.is_dir():  # not a concurrent publisher: a real failure
                    raise os_failure(final, exc) from None
        same = all(
            (final / name).is_file() and filecmp.cmp(staged / name, final / name, shallow=False)
            for name in names
        )
        if not same:
            raise ReportConflictError(
                "a different report with the same id already exists; it was left untouched",
                path=final,
            )
    finally:
        shutil.rmtree(staged, ignore_errors=True)


def inspect_bundle(
    bundle: str | Path, output: str | Path, options: InspectionOptions | None = None
) -> Inspection:
    """Check every record of a bundle and publish ``<output>/<report_id>/``.

    Raises ``InspectionInputError`` (nothing published) for a missing or ambiguous bundle, a
    malformed or empty bundle, or inputs that changed while being read.
    """
    options = options or InspectionOptions()
    bundle_file = resolve_bundle(bundle)
    provenance = Provenance.snapshot(bundle_file, options.capture_dir)
    manifest = report_manifest(provenance, options)
    report_id = content_id(manifest)
    output = Path(output)
    with (
        claimed_dir(options.output(output, CONFORMANCE_REPORTS)),
        published(output, report_id, REPORT_FILES) as staged,
    ):
        tally = _Tally()
        with reported(output):
            results = (staged / RESULTS_FILE).open("w", encoding="utf-8", newline="\n")
        with results:
            rows = iter_bundle_rows(bundle_file, expected_sha256=provenance.bundle.sha256)
            for line, record in rows:
                scope = options.scope_for(record)
                tally.with_tools += scope.tools
                result = check_record(record, scope, source=f"{provenance.bundle.name}:{line}")
                result = replace(result, profile=options.profile)
                results.write(canonical_json(result.to_dict()) + "\n")
                tally.add(result)
            results.flush()
            os.fsync(results.fileno())
        if tally.records == 0:
            raise InspectionInputError("bundle holds no records", path=bundle_file)
        provenance.verify_unchanged(options.capture_dir)
        summary = _summary(manifest, report_id, tally, options)
        write_text_durably(
            staged / SUMMARY_FILE, json.dumps(summary, indent=2, ensure_ascii=False) + "\n"
        )
        write_text_durably(staged / REPORT_FILE, render_report(summary))
    return Inspection(report_id, output / report_id, summary)
