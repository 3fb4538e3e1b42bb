"""The fixture of the Celery tests (``test_celery_fanout.py``, ``test_celery_shards.py``)."""

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A directory the ``postgres`` user can reach (it runs the server when we are root)."""
    root = Path(tempfile.mkdtemp(prefix="gym-celery-", dir="/tmp"))
    root.chmod(0o711)
    yield root
    shutil.rmtree(root, ignore_errors=True)
