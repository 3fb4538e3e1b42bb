"""Fixtures for the tasks tests: tiny configs, JSONL files and throwaway schema packages."""

from __future__ import annotations

import itertools
import json
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_assets.config.model import iter_declared_datasets
from gym_assets.tasks.collate import collate
from gym_assets.tasks.collation_model import CollationInput, CollationReport

_PACKAGE_IDS = itertools.count()


def resources_server(name: str, datasets: list[dict[str, Any]], impl: str = "test") -> dict:
    """``RS(name, datasets, impl)`` of the reference tests."""
    return {
        name: {
            "resources_servers": {
                impl: {"entrypoint": "app.py", "domain": "coding", "datasets": datasets}
            }
        }
    }


def single_agent_environment(
    name: str, agent: str, resources: str, impl: str = "single_agent_turn"
) -> dict:
    return {
        name: {
            "environment_servers": {
                impl: {
                    "entrypoint": "app.py",
                    "agent_server": {"type": "responses_api_agents", "name": agent},
                    "resources_server": {"type": "resources_servers", "name": resources},
                }
            }
        }
    }


def agent(name: str, resources: str, impl: str = "simple_agent") -> dict:
    return {
        name: {
            "responses_api_agents": {
                impl: {
                    "entrypoint": "app.py",
                    "resources_server": {"type": "resources_servers", "name": resources},
                }
            }
        }
    }


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def inputs_of(config: dict, base: Path, **overrides: Any) -> list[CollationInput]:
    """One ``CollationInput`` per declaration; ``jsonl_fpath`` is relative to ``base``."""
    return [
        CollationInput(
            declared=declared,
            source_path=base / declared.dataset.jsonl_fpath,
            sidecar_dir=overrides.get("sidecar_dir"),
            prompt_config_path=overrides.get("prompt_config_path"),
        )
        for declared in iter_declared_datasets(config)
    ]


def conflicts_dir(path: Path) -> Callable[[], Path]:
    """What ``collate`` takes for its conflicts: ``path``, made when first asked for."""

    def made() -> Path:
        path.mkdir(exist_ok=True)
        return path

    return made


@pytest.fixture
def run_collate(tmp_path: Path) -> Callable[..., CollationReport]:
    """Collate a config whose data lives under ``tmp_path/data`` into ``tmp_path/out``, with
    conflicting metrics written into ``tmp_path/conflicts``."""

    def run(config: dict, **kwargs: Any) -> CollationReport:
        overrides = {k: kwargs.pop(k) for k in ("sidecar_dir", "prompt_config_path") if k in kwargs}
        inputs = inputs_of(config, tmp_path / "data", **overrides)
        kwargs.setdefault("mode", "train_preparation")
        kwargs.setdefault("conflicts_dir", conflicts_dir(tmp_path / "conflicts"))
        return collate(config, inputs, tmp_path / "out", **kwargs)

    return run


@pytest.fixture
def schema_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable]:
    """Make a throwaway servers package; returns ``add(kind, impl, module, source) -> name``."""
    name = f"test_servers_{next(_PACKAGE_IDS)}"
    root = tmp_path / "pkgs"
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(root))

    def add(kind: str, impl: str, module: str, source: str) -> str:
        directory = root / name / kind / impl
        directory.mkdir(parents=True, exist_ok=True)
        (directory.parent / "__init__.py").touch()
        (directory / "__init__.py").touch()
        (directory / f"{module}.py").write_text(textwrap.dedent(source))
        return name

    add.package = name  # type: ignore[attr-defined]
    yield add
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]
