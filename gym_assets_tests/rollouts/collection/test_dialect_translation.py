"""``simple_agent`` (Responses) runs ``arith`` end to end against a Chat-only model server, as
llama.cpp's is: /responses answers 404, answers carry no usage. Nothing is masked, and every
call is captured with the agent's request and the one that went to the server."""

from __future__ import annotations

from gym_assets.rollouts.collection.files import read_jsonl
from gym_assets.rollouts.gateway import read_capture
from gym_assets.rollouts.gateway.upstream_config import upstream_config
from gym_assets.rollouts.harnesses.registry import load_harnesses
from gym_assets.rollouts.options import RunOptions
from gym_assets.rollouts.run import run_rollouts
from gym_assets_tests.loopback_http import ChatOnly, serving

KEY_ENV = "GYM_ASSETS_TEST_KEY"


def test_simple_agent_measures_arith_on_a_chat_only_server(products, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-test")
    products.plan("arith")
    harness = load_harnesses(products.catalog.loaded.data)["simple_agent"]
    with serving(ChatOnly) as port:
        upstream = upstream_config(
            mode="openai", base_url=f"http://127.0.0.1:{port}/v1", api_key_env=KEY_ENV
        )
        result = run_rollouts(
            products.catalog, "arith", harness, tmp_path / "run", upstream, RunOptions(limit=3)
        )
    assert (result.totals.outcomes.measured, result.totals.outcomes.masked) == (3, 0)
    records = list(read_jsonl(result.files.records))
    assert len(records) == 3 and not any(r.get("mask_sample") for r in records)
    for record in records:
        attached = record["ng_model_call_capture"]
        assert [c["upstream"]["dialect"] for c in attached["calls"]] == ["chat"]
        calls = read_capture(result.files.capture_dir, attached["rollout_id"])["calls"]
        assert [c["model_call_id"] for c in calls] == [
            c["model_call_id"] for c in attached["calls"]
        ]
        for call in calls:
            assert (call["dialect"], call["status_code"], call["error_category"]) == (
                "responses",
                200,
                None,
            )
            assert call["request"]["input"]  # what the agent sent
            upstream_call = call["upstream"]  # and what the server got
            assert upstream_call["dialect"] == "chat" and upstream_call["status_code"] == 200
            assert upstream_call["request"]["messages"][-1]["role"] == "user"
            assert upstream_call["response"]["choices"][0]["message"]["content"] == "4"
            assert (call["tokens_in"], call["tokens_out"], call["tokens_total"]) == (None,) * 3
        assert record["response"]["output"][-1]["content"][0]["text"] == "4"
