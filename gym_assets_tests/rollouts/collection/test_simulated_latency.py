"""The offline upstreams' simulated latency: fixed, or spread around its mean as a real
model's is (what lets a bench tell lockstep waves from the run's own cost)."""

from __future__ import annotations

import pytest

from gym_assets.errors import UserError
from gym_assets.rollouts.collection.model_gateway import build_gateway
from gym_assets.rollouts.gateway.upstream_config import upstream_config


def _delays(tmp_path, **latency: float) -> list[float]:
    config = upstream_config(mode="reference", **latency)
    gateway = build_gateway(config, tmp_path, model_name="policy", model_server_name="policy")
    return [gateway.upstream.delay() for _ in range(500)]  # type: ignore[attr-defined]


def test_a_fixed_latency_is_the_same_for_every_answer(tmp_path):
    assert set(_delays(tmp_path, latency_s=2.0)) == {2.0}


def test_a_spread_latency_varies_within_its_bounds(tmp_path):
    delays = _delays(tmp_path, latency_s=2.0, latency_spread=0.5)
    assert all(1.0 <= delay <= 3.0 for delay in delays)
    assert min(delays) < 1.5 and max(delays) > 2.5  # spread over the range, not one value
    assert 1.9 < sum(delays) / len(delays) < 2.1  # around the latency asked for


@pytest.mark.parametrize(
    ("latency", "message"),
    [
        ({"latency_spread": 0.5}, "a latency spread needs a latency (--upstream-latency)"),
        ({"latency_s": 1.0, "latency_spread": 1.5}, "less than or equal to 1"),
    ],
)
def test_a_spread_without_a_latency_or_beyond_it_is_refused(latency, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        upstream_config(mode="reference", **latency)
