"""The library stays usable without Dagster: only defs/ and definitions.py import it."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gym_assets"
WIRING = {PACKAGE / "definitions.py", PACKAGE / "defs"}


def _modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _imports(path: Path) -> set[str]:
    return {name.split(".")[0] for name in _modules(path)}


def _is_wiring(path: Path) -> bool:
    return any(path == w or w in path.parents for w in WIRING)


def test_only_the_dagster_wiring_imports_dagster():
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if not _is_wiring(path) and "dagster" in _imports(path)
    ]
    assert offenders == []


def test_only_the_analysis_imports_pandas_numpy_and_matplotlib():
    """They cost a second to import; the definitions and the commands that do not analyse
    must not pay it (the run and reverify import the analysis inside the function)."""
    analysis = PACKAGE / "rollouts" / "analysis"
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in sorted(PACKAGE.rglob("*.py"))
        if analysis not in path.parents and _imports(path) & {"pandas", "numpy", "matplotlib"}
    ]
    assert offenders == []


@pytest.mark.slow  # a fresh interpreter loads the definitions
def test_loading_the_definitions_or_the_run_imports_no_analysis_library():
    code = (
        "import sys, gym_assets.definitions, gym_assets.rollouts.collection.run; "
        "print(sorted({'pandas', 'numpy', 'matplotlib'} & set(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_the_dagster_wiring_never_imports_the_definitions_built_from_it():
    """``definitions.py`` imports ``defs/``; the demo is handed the Definitions object."""
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in sorted((PACKAGE / "defs").rglob("*.py"))
        if "gym_assets.definitions" in _modules(path)
    ]
    assert offenders == []


@pytest.mark.slow  # a fresh interpreter imports the run and the inspector
def test_the_command_line_runs_without_loading_dagster():
    code = (
        "import sys; from gym_assets.cli import build_parser; build_parser(); "
        "import gym_assets.rollouts.collection.run, gym_assets.conformance.inspect; "
        "print('dagster' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def _library_imports(path: Path) -> set[str]:
    """The ``gym_assets`` areas a module imports (``gym_assets.tasks`` for any module in it)."""
    areas = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        areas.update(".".join(n.split(".")[:2]) for n in names if n.startswith("gym_assets."))
    return areas


def test_the_config_layer_imports_no_layer_built_on_it():
    # tasks, plans and everything above read configs; an import back would be a cycle
    above = {"tasks", "plans", "rollouts", "servers", "conformance", "sandbox", "defs", "cli"}
    offenders = {
        str(path.relative_to(PACKAGE)): sorted(areas)
        for path in sorted((PACKAGE / "config").rglob("*.py"))
        if (areas := {a for a in _library_imports(path) if a.split(".")[1] in above})
    }
    assert offenders == {}
