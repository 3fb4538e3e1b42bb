"""``docs/conformance-checks.md`` is generated from the check objects and must not go stale."""

from __future__ import annotations

from gym_assets.cli import main
from gym_assets.conformance.artifact_checks import ARTIFACT_CHECKS, Applies
from gym_assets.conformance.behavioral_checks import APPLIES, BEHAVIORAL_SPECS
from gym_assets.conformance.catalogue_doc import (
    APPLIES_WORDING,
    DOC_PATH,
    REQUIREMENT_WORDING,
    render_catalogue,
)
from gym_assets.conformance.health import ROLLOUT_HEALTH_CHECKS

REGENERATE = "gym-assets conformance catalogue"


def test_committed_page_matches_the_generated_text():
    assert DOC_PATH.read_text(encoding="utf-8") == render_catalogue(), (
        f"docs/conformance-checks.md is stale; run `{REGENERATE}`"
    )


def test_one_line_per_check_in_catalogue_order():
    ids = [c.id for c in ARTIFACT_CHECKS] + [s.id for s in BEHAVIORAL_SPECS]
    ids += [c.check_id for c in ROLLOUT_HEALTH_CHECKS]
    rows = [line for line in render_catalogue().splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == ids
    assert len(ids) == 56 + 21 + len(ROLLOUT_HEALTH_CHECKS)


def test_wording_tables_cover_exactly_what_they_should():
    assert set(APPLIES_WORDING) == set(Applies)
    assert set(REQUIREMENT_WORDING) <= {c.id for c in ARTIFACT_CHECKS}
    assert {s.applies for s in BEHAVIORAL_SPECS} <= set(APPLIES)
    page = render_catalogue()
    for check in ARTIFACT_CHECKS:
        assert REQUIREMENT_WORDING.get(check.id, check.reason) in page


def test_cli_writes_the_page(tmp_path, capsys):
    target = tmp_path / "checks.md"
    assert main(["conformance", "catalogue", "--out", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == render_catalogue()
    assert str(target) in capsys.readouterr().out
