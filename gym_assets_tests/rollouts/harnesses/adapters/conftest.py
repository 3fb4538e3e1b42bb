"""Adapter tests run harness programs against real gateways on loopback."""

from gym_assets_tests.rollouts.gateway.conftest import start_gateway

__all__ = ["start_gateway"]
