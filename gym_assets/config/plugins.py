"""Where a server implementation's code is found, and the one loader for it.

A server instance names its kind and implementation in config; the code lives in
``gym_assets.servers.<kind>.<implementation>``: ``app`` (what the episodes build), and the
optional ``task_data`` and ``dataset_metrics`` that collation checks with. Config defines the
kinds, so it owns the lookup, and every layer above loads implementations the same way.
"""

from __future__ import annotations

import importlib
from types import ModuleType

SERVERS_PACKAGE = "gym_assets.servers"


def module_name(kind: str, implementation: str, module: str, package: str = SERVERS_PACKAGE) -> str:
    """The dotted name of one module of a server implementation."""
    return f"{package}.{kind}.{implementation}.{module}"


def server_module(
    kind: str, implementation: str, module: str, *, package: str = SERVERS_PACKAGE
) -> ModuleType | None:
    """Import ``<package>.<kind>.<implementation>.<module>``; None when it does not exist.

    Only a missing module (or missing parent package) counts as absent; an import error raised
    from inside an existing module propagates so that it can be reported.
    """
    dotted = module_name(kind, implementation, module, package)
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (dotted + ".").startswith(exc.name + "."):
            return None
        raise
