"""Harnesses: the agent programs a run can drive, in one place.

- ``registry``: the harness registry of the configs (kinds, interfaces, pinned versions) and
  how a run resolves a harness onto an environment server.
- ``install``: installing a third-party CLI harness at its pinned version, offline-checked.
- ``adapters``: per-CLI adapters that configure an activation and read back its evidence.
"""
