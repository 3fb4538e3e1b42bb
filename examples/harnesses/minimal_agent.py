"""A minimal command harness (docs/harnesses.md): a Responses tool loop, stdlib only."""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

E = os.environ
ARGS = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
SHELL = {"type": "function", "name": "bash", "parameters": ARGS}


def headers() -> dict:
    """x-session-id: the gateway gives every attempt, failed ones included, to this invocation."""
    return {"Content-Type": "application/json", "x-session-id": E["GYM_INVOCATION_ID"]}


def ask(body: dict, tries: int = 4) -> dict:
    """One model turn; 408, 429 and 5xx answers are retried with the identical body."""
    for attempt in range(1, tries + 1):
        url, data = E["GYM_BASE_URL"] + "/responses", json.dumps(body).encode()
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data, headers())) as reply:
                return json.load(reply)
        except urllib.error.HTTPError as error:
            if attempt == tries or not (error.code in (408, 429) or error.code >= 500):
                raise
            time.sleep(float(error.headers.get("Retry-After") or 1))
    raise AssertionError


def run(conversation: list, tools: list) -> None:
    """Ask, run the shell calls the model makes (in the working directory), feed back, repeat."""
    while True:
        reply = ask({"model": E["GYM_MODEL"], "input": conversation, "tools": [SHELL]})
        conversation += reply["output"]
        calls = [item for item in reply["output"] if item["type"] == "function_call"]
        if not calls:
            return
        for call in calls:
            begin, cmd = time.time(), json.loads(call["arguments"])["command"]
            done = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True)
            out = {"call_id": call["call_id"], "output": done.stdout + done.stderr}
            conversation.append({"type": "function_call_output", **out})
            status = "failed" if done.returncode else "completed"
            tools.append(
                {
                    "kind": "tool_call",
                    "tool_call_id": call["call_id"],
                    "status": status,
                    "tool_name": call["name"],
                    "invocation_id": E["GYM_INVOCATION_ID"],
                    "started_at": begin,
                    "completed_at": time.time(),
                }
            )


def main() -> int:
    if sys.argv[1:] == ["--version"]:
        print("minimal_agent 1.0")
        return 0
    conversation, tools, status = [{"role": "user", "content": E["GYM_PROMPT"]}], [], "completed"
    try:
        run(conversation, tools)
    except urllib.error.HTTPError:  # a permanent model error: the gateway has the details
        status = "failed"
    me = {"kind": "agent_invocation", "invocation_id": E["GYM_INVOCATION_ID"], "status": status}
    me |= {"model_calls": [], "conversation": conversation}
    with open(E["GYM_OBSERVATIONS_PATH"], "w", encoding="utf-8") as out:
        json.dump({"source": "minimal_agent", "records": [me, *tools]}, out)
    return 0 if status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
