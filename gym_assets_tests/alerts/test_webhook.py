"""The webhook client against a real HTTP server on 127.0.0.1: up, flaky, refusing, down, slow."""

from gym_assets.alerts.webhook import Webhook, post_json
from gym_assets_tests.alerts.webhook_server import closed_port_url, webhook_server

BODY = {"text": "hello"}


def _hook(url: str, **kwargs) -> Webhook:
    return Webhook(url, **{"timeout_s": 2.0, "attempts": 3, "backoff_s": 0.01, **kwargs})


def test_an_answering_webhook_gets_the_body_once():
    with webhook_server() as receiver:
        delivery = post_json(_hook(receiver.url), BODY)
    assert delivery.delivered and delivery.attempts == 1 and delivery.outcome == "HTTP 200"
    assert receiver.bodies == [BODY]


def test_a_transient_failure_is_retried():
    with webhook_server([503, 429, 200]) as receiver:
        delivery = post_json(_hook(receiver.url), BODY)
    assert delivery.delivered and delivery.attempts == 3
    assert receiver.requests == 3 and receiver.bodies == [BODY]


def test_a_refusal_is_not_retried():
    with webhook_server([400]) as receiver:
        delivery = post_json(_hook(receiver.url), BODY)
    assert not delivery.delivered
    assert (delivery.attempts, delivery.outcome, receiver.requests) == (1, "HTTP 400", 1)


def test_a_webhook_that_is_down_costs_its_attempts_and_never_raises():
    url = closed_port_url()
    delivery = post_json(_hook(url), BODY)
    assert not delivery.delivered and delivery.attempts == 3
    assert delivery.outcome == "connection refused"
    assert "secret-token" not in delivery.outcome


def test_a_slow_webhook_is_let_go_after_the_timeout():
    with webhook_server(delay_s=3.0) as receiver:
        delivery = post_json(_hook(receiver.url, timeout_s=0.3, attempts=2), BODY)
    assert not delivery.delivered and delivery.attempts == 2
    # one wording, whether the socket timeout or the join let it go first (under load the
    # socket's TimeoutError once surfaced as its class name)
    assert delivery.outcome == "no answer within 0.3s"
    assert receiver.requests == 2
