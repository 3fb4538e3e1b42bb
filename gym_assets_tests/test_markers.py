"""The slow-test rules of ``conftest.py`` name tests that exist."""

from gym_assets_tests.conftest import SLOW_MODULES, TESTS


def test_every_slow_module_exists():
    """A renamed suite would otherwise slip back into ``make test-fast`` unnoticed."""
    assert sorted(module for module in SLOW_MODULES if not (TESTS / module).is_file()) == []
