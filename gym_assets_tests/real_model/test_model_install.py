"""Where the local model server is installed and when it counts as installed (no build here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gym_assets.errors import UserError
from gym_assets.local_services.model_install import (
    MODEL_DIR_ENV,
    SERVER_VERSION,
    STAMP,
    STAMP_TEXT,
    WHEEL_CACHE_ENV,
    ModelInstall,
)


def test_the_model_lives_beside_the_configs_unless_the_variables_say_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(MODEL_DIR_ENV, raising=False)
    monkeypatch.delenv(WHEEL_CACHE_ENV, raising=False)
    install = ModelInstall.default(tmp_path / "configs")
    assert (install.root, install.wheels) == (tmp_path / ".model", tmp_path / ".model" / "wheels")
    monkeypatch.setenv(MODEL_DIR_ENV, str(tmp_path / "m"))
    monkeypatch.setenv(WHEEL_CACHE_ENV, str(tmp_path / "cache"))
    install = ModelInstall.default(tmp_path / "configs")
    assert (install.root, install.wheels) == (tmp_path / "m", tmp_path / "cache")


def test_without_a_built_wheel_an_install_that_may_not_build_refuses(tmp_path: Path) -> None:
    install = ModelInstall(tmp_path / "model", tmp_path / "wheels")
    with pytest.raises(UserError, match="`gym-assets model install` builds it"):
        install.install(print, build=False)
    assert not install.venv.exists() and install.built_wheel() is None


def test_a_venv_counts_as_installed_only_with_this_versions_stamp(tmp_path: Path) -> None:
    install = ModelInstall(tmp_path / "model", tmp_path / "wheels")
    install.venv.mkdir(parents=True)
    assert not install.installed()
    (install.venv / STAMP).write_text("llama-cpp-python[server]==0.0.1\n")
    assert not install.installed()
    (install.venv / STAMP).write_text(STAMP_TEXT)
    assert install.installed()
    wheel = install.wheels / f"llama_cpp_python-{SERVER_VERSION}-cp311-cp311-linux_x86_64.whl"
    wheel.parent.mkdir()
    wheel.touch()
    assert install.built_wheel() == wheel
