"""A deliberately broken command harness: the example harness with three defects.

1. It drops retried attempts: it neither sends ``x-session-id`` nor references the attempts
   that failed, so only the answered calls are owned by its invocation.
2. It saves 0 for usage the model did not report (in its ``response.json``).
3. It exits 0 whatever happened, a permanent HTTP 400 included.

Token counts, payloads and statuses of model calls are the gateway's, so defect 2 reaches
only the rollout's reported usage, and defect 3 nothing at all (an exit code is not evidence).

Its argument is the example harness's path: in the sandbox it sees only the files its
command line names.
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(sys.argv[1]).parent))
import minimal_agent as example

E = os.environ
answered: list[dict] = []
ask = example.ask


def remembering_ask(body: dict, tries: int = 4) -> dict:
    reply = ask(body, tries)
    answered.append(reply)
    return reply


def main() -> int:
    if sys.argv[2:] == ["--version"]:
        print("broken_agent 0.1")
        return 0
    example.headers = lambda: {"Content-Type": "application/json"}
    example.ask = remembering_ask
    example.main()
    path = Path(E["GYM_OBSERVATIONS_PATH"])
    bundle = json.loads(path.read_text())
    invocation = bundle["records"][0]
    model_ref = {"type": "responses_api_models", "name": E["GYM_MODEL_SERVER"]}
    invocation["model_calls"] = [{"model_ref": model_ref, "response_id": r["id"]} for r in answered]
    path.write_text(json.dumps(bundle))
    usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    for reply in answered:
        for key in usage:
            usage[key] += (reply.get("usage") or {}).get(key) or 0
    response = {"object": "response", "status": "completed", "usage": usage}
    response["output"] = invocation["conversation"][1:]
    Path(E["GYM_RESPONSE_PATH"]).write_text(json.dumps(response))
    return 0


if __name__ == "__main__":
    sys.exit(main())
