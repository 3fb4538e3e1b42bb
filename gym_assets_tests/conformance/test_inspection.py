"""The standalone inspector and its CLI (docs/evidence-format.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.conformance import inspection as inspector
from gym_assets.conformance.artifact_checks import ARTIFACT_CHECKS
from gym_assets.conformance.bundle import InspectionInputError
from gym_assets.conformance.fingerprint import content_id
from gym_assets.conformance.inspection import (
    REPORT_FILES,
    InspectionOptions,
    ReportConflictError,
    inspect_bundle,
)
from gym_assets.conformance.profiles import PROFILE_ID
from gym_assets.conformance.scope import EvidenceScope
from gym_assets.outputs.markers import MARKER_NAME
from gym_assets_tests.conformance import fixtures as fx


def write_bundle(path: Path, records, name="rollouts.jsonl") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def reports(output: Path) -> list[Path]:
    return sorted(p for p in output.iterdir() if p.is_dir()) if output.exists() else []


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def cli(*args: str) -> int:
    return main(["conformance", *args])


def without_payloads(record):
    for call in fx.calls(record):
        call["request"] = None
        call["response"] = None
    return record


def test_conformant_bundle_publishes_a_complete_content_addressed_report(tmp_path):
    bundle = write_bundle(tmp_path / "bundle", [fx.baseline_record(), fx.baseline_record()])
    inspection = inspect_bundle(bundle, tmp_path / "out")
    assert inspection.gate_met and inspection.exit_code == 0
    assert reports(tmp_path / "out") == [inspection.report_dir]
    assert sorted(p.name for p in inspection.report_dir.iterdir()) == sorted(REPORT_FILES)

    summary = json.loads((inspection.report_dir / "evidence_summary.json").read_text())
    assert summary == inspection.summary
    manifest = {k: summary[k] for k in ("sources", "checker_sha256", "profile", "applicability")}
    assert inspection.report_dir.name == summary["report_id"] == content_id(manifest)
    assert summary["schema_version"] == "harness-evidence/v1"
    assert summary["decoder_version"] == "gym-p0-evidence/v2"
    assert summary["profile"] == PROFILE_ID
    assert summary["verdict"] == "fulfilled" and summary["records"] == 2
    assert summary["is_behavioral_qualification"] is False
    assert summary["scope_closure"] == "not_independently_witnessed"
    assert summary["delivery_surface"] == "rollout_jsonl"
    assert summary["evidence"]["TE-1"] == {
        "name": "model_call_status",
        "records": 2,
        "fulfilled": 2,
        "not_fulfilled": 0,
        "not_applicable": 0,
        "verdict": "fulfilled",
        "scenario_coverage": {"observed": 0, "passed": 0},
    }
    assert summary["token_availability"]["prompt_tokens"] == {"available": 4, "calls": 4}
    assert summary["sources"]["bundle"]["name"] == "rollouts.jsonl"
    assert summary["failing_checks"] == {}

    lines = (inspection.report_dir / "evidence_results.jsonl").read_text().splitlines()
    results = [json.loads(line) for line in lines]
    assert [r["source"] for r in results] == ["rollouts.jsonl:1", "rollouts.jsonl:2"]
    assert all(r["verdict"] == "fulfilled" for r in results)
    report = (inspection.report_dir / "evidence_report.md").read_text()
    assert f"Profile `{PROFILE_ID}` · Gate **met** · Records 2" in report
    assert "| TE-9: step_join | fulfilled | 2/2 |" in report


def test_failing_record_gives_exit_one_and_lists_the_failing_check(tmp_path):
    bundle = write_bundle(
        tmp_path / "bundle", [fx.baseline_record(), without_payloads(fx.baseline_record())]
    )
    inspection = inspect_bundle(bundle, tmp_path / "out")
    assert inspection.exit_code == 1
    summary = inspection.summary
    assert summary["verdict"] == "not_fulfilled"
    assert summary["fulfilled_records"] == 1
    assert summary["evidence"]["TE-7"]["not_fulfilled"] == 1
    assert summary["failing_checks"]["calls.request"]["records"] == 1
    report = (inspection.report_dir / "evidence_report.md").read_text()
    assert "Gate **not met**" in report and "| `calls.request` | 1 |" in report


def test_failing_checks_prefer_a_direct_reason_over_a_blocked_one(tmp_path):
    blocked = fx.baseline_record()
    fx.trajectory(blocked)["model_calls"] = []
    bundle = write_bundle(tmp_path / "bundle", [blocked, without_payloads(fx.baseline_record())])
    entry = inspect_bundle(bundle, tmp_path / "out").summary["failing_checks"]["calls.request"]
    assert entry["records"] == 2 and entry["blocked"] == 1
    assert entry["reason"] == next(c.reason for c in ARTIFACT_CHECKS if c.id == "calls.request")
    assert entry["evidence"] == ["TE-4", "TE-7"]


def test_scope_flags_change_verdicts_and_the_report_id(tmp_path):
    record = fx.baseline_record()
    fx.trajectory(record)["tool_calls"] = []
    bundle = write_bundle(tmp_path / "bundle", [record])
    full = inspect_bundle(bundle, tmp_path / "out")
    assert full.exit_code == 1
    no_tools = inspect_bundle(
        bundle, tmp_path / "out", InspectionOptions(scope=EvidenceScope(tools=False))
    )
    assert no_tools.exit_code == 0
    assert no_tools.summary["evidence"]["TE-5"]["verdict"] == "not_applicable"
    assert no_tools.report_id != full.report_id
    assert no_tools.summary["applicability"]["tools"] is False


def test_replay_is_idempotent_and_deterministic_across_output_dirs(tmp_path):
    bundle = write_bundle(tmp_path / "bundle", [fx.baseline_record()])
    first = inspect_bundle(bundle, tmp_path / "out")
    before = snapshot(first.report_dir)
    again = inspect_bundle(bundle, tmp_path / "out")
    assert again.report_dir == first.report_dir and snapshot(again.report_dir) == before
    elsewhere = inspect_bundle(bundle, tmp_path / "other")
    assert snapshot(elsewhere.report_dir) == before
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [MARKER_NAME, first.report_id]


def test_conflicting_existing_report_is_left_untouched(tmp_path, capsys):
    bundle = write_bundle(tmp_path / "bundle", [fx.baseline_record()])
    first = inspect_bundle(bundle, tmp_path / "out")
    tampered = first.report_dir / "evidence_report.md"
    tampered.write_text("edited by hand\n")
    with pytest.raises(ReportConflictError):
        inspect_bundle(bundle, tmp_path / "out")
    assert tampered.read_text() == "edited by hand\n"
    # --tools: the options of the library call above, so the CLI hits the same report id
    assert (
        cli("inspect", "--bundle", str(bundle), "--output", str(tmp_path / "out"), "--tools") == 2
    )
    assert "no report published" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [MARKER_NAME, first.report_id]


def test_cli_replay_then_missing_payload_then_malformed_bundle(tmp_path, capsys):
    bundle = write_bundle(tmp_path / "bundle", [fx.baseline_record()])
    out = tmp_path / "out"
    assert cli("inspect", "--bundle", str(bundle), "--output", str(out)) == 0
    assert cli("inspect", "--bundle", str(bundle), "--output", str(out)) == 0
    assert len(reports(out)) == 1

    write_bundle(bundle, [without_payloads(fx.baseline_record())])
    assert cli("inspect", "--bundle", str(bundle), "--output", str(out)) == 1
    published = reports(out)
    assert len(published) == 2
    kept = {p: snapshot(p) for p in published}

    (bundle / "rollouts.jsonl").write_text('{"reward": NaN}\n')
    capsys.readouterr()
    assert cli("inspect", "--bundle", str(bundle), "--output", str(out)) == 2
    err = capsys.readouterr().err
    assert "checker_error (InspectionInputError)" in err and "rollouts.jsonl:1" in err
    assert "no report published" in err
    assert reports(out) == published and {p: snapshot(p) for p in published} == kept
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [MARKER_NAME]


@pytest.mark.parametrize(
    "profile", ["gym-artifacts-p1/v1", "gym-artifacts-all/v1", "onboarding-p0/v1"]
)
def test_unknown_profiles_exit_two_and_write_nothing(tmp_path, profile, capsys):
    bundle = write_bundle(tmp_path / "bundle", [fx.baseline_record()])
    out = tmp_path / "out"
    assert cli("inspect", "--bundle", str(bundle), "--output", str(out), "--profile", profile) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert f"unknown profile {profile!r}; known profiles: gym-p0/v3, gym-p0/v1" in err


@pytest.mark.parametrize("profile", ["gym-p0/v1", PROFILE_ID])
def test_a_report_records_the_profile_it_was_asked_for(tmp_path, profile):
    """``gym-p0/v1`` is the reference's id for this very catalogue (typed checks, per-check P0
    gate): it runs the same checks, and the report records it, as the reference's do."""
    bundle = write_bundle(tmp_path / "bundle", [fx.baseline_record()])
    out = tmp_path / "out"
    assert cli("inspect", "--bundle", str(bundle), "--output", str(out), "--profile", profile) == 0
    (report,) = reports(out)
    summary = json.loads((report / "evidence_summary.json").read_text())
    assert summary["profile"] == profile
    (result,) = (report / inspector.RESULTS_FILE).read_text().splitlines()
    assert json.loads(result)["profile"] == profile


def test_an_unknown_profile_is_refused_before_anything_is_read():
    with pytest.raises(InspectionInputError, match="known profiles: gym-p0/v3, gym-p0/v1"):
        InspectionOptions(profile="gym-p0/v2")


def test_extra_hydra_style_arguments_are_usage_errors(tmp_path):
    bundle = write_bundle(tmp_path / "bundle", [fx.baseline_record()])
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as caught:
        cli("inspect", "--bundle", str(bundle), "--output", str(out), "+model=x")
    assert caught.value.code == 2
    assert not out.exists()


@pytest.mark.parametrize(
    "content", ["", "\n\n  \n", '{"ok": true}\n[1]\n', '{"ok": true}\n{"broken"\n']
)
def test_empty_or_malformed_bundles_publish_nothing(tmp_path, content):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "rollouts.jsonl").write_text(content)
    with pytest.raises(InspectionInputError):
        inspect_bundle(bundle, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_flags_reach_the_scope(tmp_path):
    bundle = write_bundle(tmp_path / "bundle", [fx.baseline_record()])
    out = tmp_path / "out"
    flags = ["--no-tools", "--no-verifier", "--no-steps", "--require-sandbox"]
    assert cli("inspect", "--bundle", str(bundle), "--output", str(out), *flags) == 1
    summary = json.loads(next(out.glob("*/evidence_summary.json")).read_text())
    assert summary["applicability"] == {
        "tools": False,
        "verifier": False,
        "steps": False,
        "require_sandbox": True,
    }
    assert "sandbox.present" in summary["failing_checks"]


def test_a_bundle_changed_while_being_read_publishes_nothing(tmp_path, monkeypatch):
    bundle = write_bundle(tmp_path / "bundle", [fx.baseline_record(), fx.baseline_record()])
    real = inspector.check_record

    def tampering(record, scope, *, source):
        if source.endswith(":1"):  # once: rewrite a later line the reader has not reached
            path = bundle / "rollouts.jsonl"
            first, second = path.read_text().splitlines()
            path.write_text(first + "\n" + second.replace("0.0", "1.0", 1) + "\n")
        return real(record, scope, source=source)

    monkeypatch.setattr(inspector, "check_record", tampering)
    with pytest.raises(InspectionInputError, match="changed"):
        inspect_bundle(bundle, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_capture_file_changed_while_reading_publishes_nothing(tmp_path, monkeypatch):
    bundle = write_bundle(tmp_path / "bundle", [fx.baseline_record()])
    captures = tmp_path / "capture"
    captures.mkdir()
    (captures / "0-0.capture.jsonl").write_text("{}\n")
    real = inspector.check_record

    def tampering(record, scope, *, source):
        (captures / "0-0.capture.jsonl").write_text('{"model_call_id": "x"}\n')
        return real(record, scope, source=source)

    monkeypatch.setattr(inspector, "check_record", tampering)
    with pytest.raises(InspectionInputError, match="inputs changed"):
        inspect_bundle(bundle, tmp_path / "out", InspectionOptions(capture_dir=captures))
    assert not (tmp_path / "out").exists()


def _capture_line(call, **changes):
    return json.dumps({"model_call_id": call["model_call_id"], "status_code": 200, **changes})


@pytest.mark.parametrize("variant", ["complete", "missing", "incomplete", "extra"])
def test_capture_sidecars_are_provenance_and_never_repair_evidence(tmp_path, variant):
    record = without_payloads(fx.baseline_record())
    bundle = write_bundle(tmp_path / "bundle", [record])
    captures = tmp_path / "capture"
    captures.mkdir()
    lines = [
        _capture_line(c, request={"input": []}, response={"output": []})
        for c in fx.calls(fx.baseline_record())
    ]
    if variant == "extra":
        lines.append(_capture_line({"model_call_id": "attempt-3"}))
    if variant != "missing":
        (captures / "0-0.capture.jsonl").write_text("\n".join(lines) + "\n")
    if variant == "incomplete":
        (captures / "0-0.capture.incomplete").write_text("")
    code = cli("inspect", "--bundle", str(bundle), "--output", str(tmp_path / "out"),
               "--capture-dir", str(captures))  # fmt: skip
    assert code == 1
    summary = json.loads(next((tmp_path / "out").glob("*/evidence_summary.json")).read_text())
    names = [c["name"] for c in summary["sources"]["captures"]]
    expected = {
        "complete": ["capture/0-0.capture.jsonl"],
        "missing": [],
        "incomplete": ["capture/0-0.capture.incomplete", "capture/0-0.capture.jsonl"],
        "extra": ["capture/0-0.capture.jsonl"],
    }[variant]
    assert names == expected


def test_missing_capture_directory_exits_two(tmp_path):
    bundle = write_bundle(tmp_path / "bundle", [fx.baseline_record()])
    args = ["--bundle", str(bundle), "--output", str(tmp_path / "out")]
    assert cli("inspect", *args, "--capture-dir", str(tmp_path / "nope")) == 2
    assert not (tmp_path / "out").exists()


def test_missing_bundle_exits_two(tmp_path):
    assert cli("inspect", "--bundle", str(tmp_path / "nope"), "--output", str(tmp_path / "o")) == 2
