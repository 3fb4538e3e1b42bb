"""The docs stay the project's own: modules cite them, not a document the repository lacks."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gym_assets"
TESTS = ROOT / "gym_assets_tests"
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / "bench" / "README.md"]

# "reference §1.8", "(§4.4)", "taskset.md §8.3": sections of the specification the project was
# written from, which is not in the repository. Link to docs/ or state the rule instead.
SECTION_CITATION = re.compile(r"reference §|§\s*\d")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")


def test_no_module_cites_a_section_of_the_reference():
    sources = [*PACKAGE.rglob("*.py"), *TESTS.rglob("*.py")]
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted(sources)
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if SECTION_CITATION.search(line)
    ]
    assert offenders == []


def test_relative_links_of_the_docs_resolve():
    broken = [
        f"{doc.relative_to(ROOT)}: {target}"
        for doc in DOCS
        for target in LINK.findall(doc.read_text("utf-8"))
        if "://" not in target
        and not target.startswith("mailto:")
        and not (doc.parent / target).exists()
    ]
    assert broken == []


def test_the_readme_names_every_asset_check():
    from gym_assets.definitions import defs  # Dagster loads only for this test

    readme = (ROOT / "README.md").read_text("utf-8")
    checks = {key.name for key in defs.get_repository_def().asset_graph.asset_check_keys}
    assert checks and sorted(c for c in checks if not re.search(rf"\b{c}\b", readme)) == []
