"""No report ever carries a model payload, a tool output or a prompt.

Canary strings are planted in every payload-bearing place of a record — prompts, responses,
reasoning, tool arguments and outputs, grades' failure text, even object keys — and the records
are mutated so that many checks fail *at* those places. Every published file, every printed
line and every in-memory result row must be free of the canaries.
"""

from __future__ import annotations

import json
from pathlib import Path

from gym_assets.cli import main
from gym_assets.conformance.behavioral_checks import behavioral_source
from gym_assets.conformance.checker import check_record
from gym_assets.conformance.health import HealthInput, health_source
from gym_assets.conformance.scope import EvidenceScope
from gym_assets_tests.conformance import fixtures as fx
from gym_assets_tests.conformance.witness_fixtures import BASELINE, baseline_witness

CANARY = "CANARY-7e1f"


def canary(tag: str) -> str:
    return f"{CANARY}-{tag}"


def planted() -> dict:
    """A conformant record whose every payload carries a canary."""
    record = fx.baseline_record()
    prompt = {"role": "user", "content": canary("prompt"), "type": "message"}
    record["responses_create_params"] = {"input": [prompt], canary("key"): canary("value")}
    record["response"]["output"].append(
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": canary("answer")}],
        }
    )
    for call in fx.calls(record):
        call["request"]["input"][0]["content"] = canary("prompt")
        call["request"]["instructions"] = canary("system")
        call["response"]["output"][0]["arguments"] = json.dumps({"key": canary("argument")})
        call["response"]["reasoning"] = {canary("reasoning-key"): canary("reasoning")}
    for turn in fx.turns(record):
        turn.update(question=canary("question"), answer=canary("answer"))
        turn["reasoning_content"] = canary("thinking")
    for item in fx.invocation(record)["conversation"]:
        if item.get("type") == "function_call_output":
            item["output"] = canary("tool-output")
        if item.get("role") == "user":
            item["content"] = canary("prompt")
    for tool in fx.tool_calls(record):
        tool["output"] = canary("tool-output")
    return record


def broken_variants() -> list[dict]:
    """Records failing checks whose locations point into the planted payloads."""
    variants = []

    record = planted()
    fx.calls(record)[0]["request"]["input"] = [canary("bare-string-input")]
    variants.append(record)

    record = planted()
    image = {"type": "input_image", "image_url": f"https://{CANARY}.invalid/x.png"}
    fx.calls(record)[0]["request"]["input"].append({"role": "user", "content": [image]})
    fx.calls(record)[1]["response"]["output"] = [{"file_id": canary("file")}]
    variants.append(record)

    record = planted()
    fx.calls(record)[0]["model_call_id"] = " \t"
    fx.calls(record)[0]["token_stats"]["prompt_tokens"] = canary("tokens")
    fx.calls(record)[1]["request"]["previous_response_id"] = canary("previous")
    fx.turns(record)[0]["resolved"] = canary("resolved")
    fx.turns(record)[1]["model_calls"] = [{"model_call_id": canary("ref")}]
    fx.tool_calls(record)[0].update(status=canary("status"), tool_name=canary("tool"))
    record.update(reward=canary("reward"), mask_sample=True, failure_reason=canary("why"))
    fx.add_gap(record, canary("gap"), detail=canary("detail"))
    fx.add_sandbox(record, outcome=canary("outcome"), sandbox_id=canary("sandbox"))
    variants.append(record)

    record = planted()
    fx.trajectory(record)["invocations"][0]["model_calls"] = [{canary("k"): canary("v")}]
    fx.trajectory(record)["turns"] = [canary("turns")]
    variants.append(record)
    return variants


def all_text(directory: Path) -> str:
    return "\n".join(
        p.read_text(encoding="utf-8") for p in sorted(directory.rglob("*")) if p.is_file()
    )


def test_canaries_reach_no_published_file_and_no_printed_line(tmp_path, capsys):
    records = [planted(), *broken_variants()]
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert CANARY in (bundle / "rollouts.jsonl").read_text()
    good = tmp_path / "good"
    good.mkdir()
    (good / "rollouts.jsonl").write_text(json.dumps(planted()) + "\n")

    out = tmp_path / "out"
    assert main(["conformance", "inspect", "--bundle", str(bundle), "--output", str(out)]) == 1
    assert main(["conformance", "inspect", "--bundle", str(good), "--output", str(out)]) == 0
    harnesses = ["--harness", f"planted={good}", "--harness", f"broken={bundle}"]
    assert main(["conformance", "matrix", *harnesses, "--output", str(tmp_path / "m")]) == 1

    counts = [json.loads(p.read_text())["records"] for p in out.glob("*/evidence_summary.json")]
    assert sorted(counts) == [1, 5]
    published = all_text(out) + all_text(tmp_path / "m")
    assert "calls.request" in published and "content.media" in published
    assert CANARY not in published
    printed = capsys.readouterr()
    assert CANARY not in printed.out + printed.err


def test_malformed_line_errors_never_echo_the_line(tmp_path, capsys):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    for bad in ('{"x": NaN, "p": "%s"}', '["%s"]', '{"p": "%s"'):
        (bundle / "rollouts.jsonl").write_text(bad % canary("line") + "\n")
        assert (
            main(
                ["conformance", "inspect", "--bundle", str(bundle), "--output", str(tmp_path / "o")]
            )
            == 2
        )
    printed = capsys.readouterr()
    assert CANARY not in printed.out + printed.err


def test_result_rows_with_behavioral_and_health_checks_are_payload_free():
    witness = baseline_witness()
    for record in [planted(), *broken_variants()]:
        sources = [
            behavioral_source(witness, BASELINE),
            health_source([HealthInput("rollouts.jsonl:1", record)], None),
        ]
        result = check_record(record, EvidenceScope(require_sandbox=True), extra_checks=sources)
        assert not result.passed
        assert CANARY not in json.dumps(result.to_dict())
