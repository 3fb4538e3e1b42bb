"""The harness evidence matrix (``gym-assets conformance matrix``)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gym_assets.cli import main
from gym_assets.conformance.bundle import InspectionInputError
from gym_assets.conformance.matrix import MATRIX_FILES, build_matrix, parse_harness
from gym_assets.conformance.profiles import PROFILE_ID
from gym_assets.outputs.markers import MARKER_NAME
from gym_assets_tests.conformance import fixtures as fx

TE_COLUMNS = [f"TE-{n}" for n in range(1, 10)]


def write_bundle(path: Path, records) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def missing_payload():
    record = fx.baseline_record()
    for call in fx.calls(record):
        call["request"] = None
        call["response"] = None
    return record


@pytest.fixture
def harnesses(tmp_path):
    return [
        ("complete", write_bundle(tmp_path / "complete", [fx.baseline_record()])),
        ("missing-payload", write_bundle(tmp_path / "missing", [missing_payload()])),
    ]


def matrix_dir(output: Path) -> Path:
    (found,) = [
        p for p in output.iterdir() if p.is_dir() and (p / "harness_evidence.json").exists()
    ]
    return found


def md_row(markdown: str, name: str) -> list[str]:
    line = next(line for line in markdown.splitlines() if line.startswith(f"| {name} |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_cli_matrix_complete_versus_missing_payload(tmp_path, harnesses):
    output = tmp_path / "out"
    args = [a for name, path in harnesses for a in ("--harness", f"{name}={path}")]
    assert main(["conformance", "matrix", *args, "--output", str(output)]) == 1
    directory = matrix_dir(output)
    assert sorted(p.name for p in directory.iterdir()) == sorted(MATRIX_FILES)

    markdown = (directory / "harness_evidence.md").read_text()
    header = md_row(markdown, "Harness")
    assert header == ["Harness", *TE_COLUMNS, "P0"]
    assert md_row(markdown, "complete")[1:] == ["PASS"] * 10
    broken = dict(zip(header, md_row(markdown, "missing-payload"), strict=True))
    assert {k for k, v in broken.items() if v == "FAIL"} == {"TE-4", "TE-7", "P0"}

    document = json.loads((directory / "harness_evidence.json").read_text())
    assert document["schema_version"] == "harness-evidence-matrix/v1"
    assert document["is_behavioral_qualification"] is False
    assert document["verdict"] == "not_fulfilled"
    entry = document["harnesses"]["missing-payload"]
    assert (output / entry["report"] / "evidence_summary.json").is_file()
    assert "calls.request" in entry["failing_checks"]

    before = {p.name: p.read_bytes() for p in directory.iterdir()}
    assert main(["conformance", "matrix", *args, "--output", str(output)]) == 1
    assert matrix_dir(output) == directory
    assert {p.name: p.read_bytes() for p in directory.iterdir()} == before
    assert sorted(p.name for p in output.iterdir()) == sorted(
        [MARKER_NAME, "complete", "missing-payload", directory.name]
    )


def test_all_fulfilled_matrix_exits_zero(tmp_path, harnesses):
    matrix = build_matrix(harnesses[:1], tmp_path / "out")
    assert matrix.gate_met and matrix.exit_code == 0


def test_a_matrix_under_the_references_profile_id_records_it(tmp_path, harnesses):
    args = ["--harness", f"{harnesses[0][0]}={harnesses[0][1]}", "--output", str(tmp_path / "a")]
    assert main(["conformance", "matrix", *args]) == 0
    args[-1] = str(tmp_path / "b")
    assert main(["conformance", "matrix", *args, "--profile", "gym-p0/v1"]) == 0
    ours, theirs = matrix_dir(tmp_path / "a"), matrix_dir(tmp_path / "b")
    assert json.loads((ours / "harness_evidence.json").read_text())["profile"] == PROFILE_ID
    assert json.loads((theirs / "harness_evidence.json").read_text())["profile"] == "gym-p0/v1"


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs

    def handle_data(self, data):
        self.text.append(data)


def test_html_is_self_contained_and_readable(tmp_path, harnesses):
    matrix = build_matrix(harnesses, tmp_path / "out")
    page_text = (matrix.matrix_dir / "harness_evidence.html").read_text()
    page = _Page()
    page.feed(page_text)
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    assert not [v for k, v in page.attrs if k in ("src", "href")]
    assert not re.search(r"url\(|@import|https?://", page_text)
    text = " ".join(" ".join(page.text).split())
    for column in [*TE_COLUMNS, "P0"]:
        assert f">{column}</th>" in page_text
    assert "1 of 2 harnesses meet the P0 gate" in text
    assert "✓ PASS" in text and "✗ FAIL" in text
    assert 'class="fail' in page_text and 'class="pass' in page_text
    assert "calls.request" in text and "every model call must retain its request" in text
    assert "Every applicable check passes." in text
    assert "Blocked by the failures above:" in text and "content.media" in text
    assert "blocked by calls.request" not in text


def test_names_are_validated_and_unique(tmp_path, harnesses):
    path = harnesses[0][1]
    for bad in ("no-equals", "=path", "bad name=x", "a/b=x", "name="):
        with pytest.raises(InspectionInputError):
            parse_harness(bad)
    assert parse_harness(f"ok_1-x={path}") == ("ok_1-x", path)
    with pytest.raises(InspectionInputError, match="unique"):
        build_matrix([("a", path), ("a", path)], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    code = main(["conformance", "matrix", "--harness", "x", "--output", str(tmp_path / "o")])
    assert code == 2 and not (tmp_path / "o").exists()


def test_a_failed_inspection_publishes_no_matrix(tmp_path, harnesses):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "rollouts.jsonl").write_text("[]\n")
    output = tmp_path / "out"
    args = ["--harness", f"good={harnesses[0][1]}", "--harness", f"bad={bad}"]
    assert main(["conformance", "matrix", *args, "--output", str(output)]) == 2
    assert not [p for p in output.iterdir() if (p / "harness_evidence.json").exists()]
    assert [p.name for p in output.iterdir() if p.name.startswith(".")] == [MARKER_NAME]
