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
        "import sys, gym_assets.definitions, gym_assets.rollouts.run; "
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
        "import gym_assets.rollouts.run, gym_assets.conformance.inspection; "
        "print('dagster' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


# The library's layers, bottom to top (docs/architecture.md draws them): a module may import its
# own layer and the layers beneath it, never one above. An area is the first name under
# ``gym_assets`` (a package or a top-level module); a new area must be placed here.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "foundation",
        frozenset(
            {
                "gym_assets",
                "errors",
                "limits",
                "json_shapes",
                "modes",
                "check_outcome",
                "display",
                "process_tree",
                "spill",
                "fileio",
                "outputs",
                "redaction",
                "untrusted_files",
                "user_files",
            }
        ),
    ),
    ("records", frozenset({"records"})),
    ("config", frozenset({"config"})),
    ("workspace", frozenset({"workspace"})),
    ("tasks", frozenset({"tasks"})),
    ("plans", frozenset({"plans"})),
    ("conformance", frozenset({"conformance"})),
    ("sandbox", frozenset({"sandbox"})),
    ("rollouts", frozenset({"rollouts"})),
    ("suite", frozenset({"suite"})),
    ("servers", frozenset({"servers"})),
    ("operations", frozenset({"alerts", "doctor", "local_dagster", "local_services"})),
    ("defs", frozenset({"defs"})),
    ("definitions", frozenset({"definitions"})),
    ("cli", frozenset({"cli"})),
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> tuple[dict[str, Path], dict[str, set[str]]]:
    """Every library module and the library modules it imports, anywhere in its body (an
    import inside a function is an edge too: it couples the two modules all the same)."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}

    def known(name: str) -> str | None:
        while name not in modules and "." in name:
            name = name.rpartition(".")[0]
        return name if name in modules else None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                candidates = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # ``from a.b import c``: c may be a module of a.b, else a name in it
                candidates = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            targets.update(t for c in candidates if (t := known(c)) is not None and t != name)
        graph[name] = targets
    return modules, graph


def _layer_of(module: str) -> int:
    area = module.split(".")[1] if "." in module else module
    for rank, (_, areas) in enumerate(LAYERS):
        if area in areas:
            return rank
    raise AssertionError(f"{module}: its area '{area}' is in no layer of LAYERS; place it")


def _package_of(module: str, modules: dict[str, Path]) -> str:
    """The unit of the cycle check: a module's package, or a top-level module itself."""
    package = module if modules[module].name == "__init__.py" else module.rpartition(".")[0]
    return module if package == "gym_assets" else package


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            step = next(successors, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(edges.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_area_has_a_layer():
    modules, _ = _import_graph()
    for module in modules:
        _layer_of(module)


def test_no_import_points_up_the_layers():
    _, graph = _import_graph()
    upward = sorted(
        f"{source} -> {target} ({LAYERS[_layer_of(source)][0]} imports "
        f"{LAYERS[_layer_of(target)][0]})"
        for source, targets in graph.items()
        for target in targets
        if _layer_of(target) > _layer_of(source)
    )
    assert upward == []


def test_no_package_imports_itself_through_another():
    modules, graph = _import_graph()
    edges: dict[str, set[str]] = {_package_of(m, modules): set() for m in modules}
    for source, targets in graph.items():
        for target in targets:
            a, b = _package_of(source, modules), _package_of(target, modules)
            if a != b:
                edges[a].add(b)
    offending = [
        f"{source} -> {target}"
        for cycle in _cycles(edges)
        for source in sorted(graph)
        for target in sorted(graph[source])
        if {_package_of(source, modules), _package_of(target, modules)} <= set(cycle)
        and _package_of(source, modules) != _package_of(target, modules)
    ]
    assert offending == []


def test_the_cycle_finder_finds_a_cycle():
    """The checks above pass vacuously if the finder is blind; here it must see one."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
