"""The executor's config file is one the workers' own command accepts."""

from __future__ import annotations

import pytest
from dagster_celery.cli import get_validated_config

from gym_assets.defs.executors import CELERY_CONFIG

BROKER = "redis://127.0.0.1:6399/0"


def test_dagster_celery_worker_start_accepts_the_executor_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``dagster-celery worker start -y`` validates the file against the executor's schema and
    resolves the broker and result backend from the environment, as a run does."""
    monkeypatch.setenv("GYM_ASSETS_CELERY_BROKER", BROKER)
    config = get_validated_config(str(CELERY_CONFIG))
    assert config["broker"] == config["backend"] == BROKER
    settings = config["config_source"]
    assert settings["task_acks_late"] is True
    assert settings["task_reject_on_worker_lost"] is False
