"""A stand-in third-party CLI for the adapter hook's tests: configured only by the file its
adapter wrote under HOME, it asks the model once over HTTP and keeps its own session log."""

import json
import os
import sys
import urllib.request
from pathlib import Path

state = Path(os.environ["HOME"]) / ".fakecli"
config = json.loads((state / "config.json").read_text())
body = json.dumps({"model": config["model"], "input": sys.argv[-1]}).encode()
request = urllib.request.Request(
    config["base_url"] + "/responses", body, {"Content-Type": "application/json"}
)
with urllib.request.urlopen(request) as reply:
    answer = json.load(reply)
with open(state / "session.jsonl", "a") as log:
    log.write(json.dumps({"flags": sys.argv[1:-1], "offline": os.environ.get("FAKE_OFFLINE")}))
    log.write("\n" + json.dumps({"prompt": sys.argv[-1], "output": answer["output"]}) + "\n")
