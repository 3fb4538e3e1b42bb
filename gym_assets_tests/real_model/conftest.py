"""The real model server for the tests that run harnesses against it (``test_real_model.py``).

The server must be installed (``make model``: the first install on a machine compiles llama.cpp,
later ones reuse the built wheel). Without a built wheel the tests skip, saying so; with
``GYM_REQUIRE_REAL_MODEL=1`` (``.ci/run`` sets it after building) they fail instead, so CI never
passes by skipping them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from gym_assets.errors import UserError
from gym_assets.local_services.model_install import ModelInstall
from gym_assets.local_services.model_server import serving
from gym_assets_tests.rollouts.collection.conftest import REPO

REQUIRE_ENV = "GYM_REQUIRE_REAL_MODEL"


@pytest.fixture(scope="package")
def real_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of the real model server, for this package's tests: stopped after them, so
    the suite's later checks that a run leaves no child process behind see none of it."""
    install = ModelInstall.default(REPO / "configs")
    try:
        install.install(print, build=False)  # from the built wheel: never a compile in a test
    except UserError as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 and the real model server cannot be set up: {exc}")
        pytest.skip(f"no real model server here: {exc}")
    with serving(install, tmp_path_factory.mktemp("model") / "server.log") as base_url:
        yield base_url
