"""Gym version, checkout commit (+ -dirty) and recorded config paths."""

from __future__ import annotations

import re
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from gym_assets.plans.provenance import (
    checkout_commit,
    current_gym,
    gym_version,
    project_root,
    recorded_config_paths,
)


def git(root: Path, *args: str) -> str:
    command = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    return subprocess.run([*command, *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "gym_assets").mkdir(parents=True)
    (root / "gym_assets" / "__init__.py").write_text("")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-qm", "init")
    return root


def test_version_is_the_installed_package_version() -> None:
    assert gym_version() == metadata.version("gym-assets")


def test_clean_checkout_gives_the_full_head(checkout: Path) -> None:
    head = git(checkout, "rev-parse", "HEAD").strip()
    assert re.fullmatch(r"[0-9a-f]{40}", head)
    assert checkout_commit(checkout) == head
    assert current_gym(checkout).commit == head


def test_tracked_changes_make_it_dirty_untracked_files_do_not(checkout: Path) -> None:
    head = git(checkout, "rev-parse", "HEAD").strip()
    (checkout / "plan.json").write_text("{}")  # e.g. a plan written into the tree
    assert checkout_commit(checkout) == head
    (checkout / "gym_assets" / "__init__.py").write_text("x = 1\n")
    assert checkout_commit(checkout) == f"{head}-dirty"


def test_not_a_checkout(tmp_path: Path) -> None:
    assert checkout_commit(None) is None
    assert checkout_commit(tmp_path) is None
    assert project_root(tmp_path / "pkg" / "gym_assets") is None


def test_project_root_is_the_top_of_the_package_checkout(checkout: Path) -> None:
    assert project_root(checkout / "gym_assets") == checkout.resolve()
    nested = checkout / "venv" / "site-packages" / "gym_assets"
    nested.mkdir(parents=True)
    assert project_root(nested) is None  # an install inside some repository is not a checkout


def test_this_project_is_a_checkout() -> None:
    root = project_root()
    assert root is not None and (root / "gym_assets" / "plans" / "provenance.py").is_file()


def test_config_paths_relative_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "configs").mkdir(parents=True)
    inside = root / "configs" / "a.yaml"
    outside = tmp_path / "elsewhere" / "b.yaml"
    assert recorded_config_paths([inside, outside], root) == (
        "configs/a.yaml",
        outside.resolve().as_posix(),
    )
    assert recorded_config_paths([inside], None) == (inside.resolve().as_posix(),)
