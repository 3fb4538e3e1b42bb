"""Named config errors that callers (and tests) tell apart by class.

They are all ``ConfigError``s, so the CLI prints their message once and exits 1; the class
only adds a name for the situations that users meet often enough to search for.
"""

from __future__ import annotations

from gym_assets.errors import ConfigError


class AgentWithoutEnvironmentServerError(ConfigError):
    """An agent that must be fronted by an environment server is fronted by none."""


class AmbiguousAgentRenameError(ConfigError):
    """An agent moved to several instances by ``_inherit_from`` is still referenced."""


class ServerRefNotFoundError(ConfigError):
    """A server reference names an instance that is not defined (with that kind)."""


class AmbiguousEnvironmentServerError(ConfigError):
    """Rows routed by agent cannot choose between several servers fronting that agent."""
