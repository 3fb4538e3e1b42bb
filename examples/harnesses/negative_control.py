"""The conformance suite's negative control: a command harness that does nothing.

It never calls the model, runs no tool and answers nothing; it only writes a well-formed
bundle saying its one invocation completed. The suite must fail it at P0 in every scenario
(docs/conformance.md#the-negative-control): if it ever passes, the checks have gone blind.
"""

import json
import os
import sys


def main() -> int:
    if sys.argv[1:] == ["--version"]:
        print("negative_control 1.0")
        return 0
    invocation = {
        "kind": "agent_invocation",
        "invocation_id": os.environ["GYM_INVOCATION_ID"],
        "status": "completed",
        "model_calls": [],
        "conversation": [],
    }
    with open(os.environ["GYM_OBSERVATIONS_PATH"], "w", encoding="utf-8") as out:
        json.dump({"source": "negative_control", "records": [invocation]}, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
