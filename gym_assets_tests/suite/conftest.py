"""The scripted provider's tests start real gateways with the gateway tests' own fixture."""

from gym_assets_tests.rollouts.gateway.conftest import start_gateway

__all__ = ["start_gateway"]
