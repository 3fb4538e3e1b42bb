"""Sandbox tests need bubblewrap: `make setup` installs it, so its absence is a failure here."""

from __future__ import annotations

import pytest

from gym_assets.sandbox import Isolation, SandboxPolicy


@pytest.fixture(scope="session")
def isolation() -> Isolation:
    resolved = SandboxPolicy().isolation()
    assert resolved.kind == "bwrap"
    return resolved
